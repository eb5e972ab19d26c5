import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { getAddress } from 'viem/utils';
import type { Clock } from '../clock.js';
import { ApiError, badRequest, notFound } from '../errors.js';
import { Expiries } from '../expiry.js';
import { randomAlphanumeric } from '../random.js';
import { SIGNED_MESSAGE_CHARS } from '../size-limits.js';
import type { Kv } from '../ports.js';
import { MessageError, formatMessage, type Family, type MessageFields } from './message.js';
import type { Account, ChallengeRequest } from './schemas.js';
import type { TokenIssuer } from './token.js';
import { parseSignIn, signatureValid, verifySignIn } from './verify.js';

/**
 * The Authentication API: sign-in challenges (request, verify), profiles, and
 * binding addresses into one profile or out of it. All state is per tenant in
 * the store; expired challenges and bind messages are purged on the service clock.
 */
export interface AuthOptions {
  /** Allowance for clock skew on a message's expirationTime and notBefore, ms. */
  skewMs: number;
  /** How long a bind or unbind message waits for its signature, ms. */
  bindTtlMs: number;
  /** Messages a tenant may have waiting for a signature: sign-in challenges, bind and unbind messages together. */
  maxPending: number;
}

interface Challenge {
  id: string;
  family: Family;
  nonce: string;
  message: string;
  publicKey?: string;
  expiresAt: number;
}

interface PendingSignature {
  kind: 'bind' | 'unbind';
  nonce: string;
  message: string;
  account: StoredAccount;
  /** bind: the nonces of every address of the request, in request order. */
  group?: string[];
  /** unbind: the profile the address leaves. */
  profileId?: string;
  expiresAt: number;
}

interface StoredAccount {
  blockchainType: Family;
  /** As shown to users: EIP-55 for EVM, lower case for Aptos, base58 for Solana. */
  address: string;
  publicKey?: string;
}

interface Profile {
  profileId: string;
  addresses: StoredAccount[];
}

/** A sign-in token's life without an expirationTime in the message, s. */
const TOKEN_DEFAULT_S = 3_600;
/** A sign-in token lives at most a day from its issue, whatever the signed message's expirationTime says, s. */
const TOKEN_MAX_S = 86_400;

const displayAddress = (family: Family, address: string): string =>
  family === 'evm' ? getAddress(address) : family === 'aptos' ? address.toLowerCase() : address;
const accountKey = (tenant: string, a: StoredAccount): string =>
  `${tenant}/${a.blockchainType}/${a.blockchainType === 'solana' ? a.address : a.address.toLowerCase()}`;
const CHAIN_LINE_APTOS: Record<string, string> = { mainnet: '1', testnet: '2' };
const APTOS_NETWORK: Record<string, string> = { '1': 'mainnet', '2': 'testnet' };

export class AuthService {
  private readonly expiries: Expiries;

  constructor(
    private readonly kv: Kv,
    private readonly clock: Clock,
    private readonly tokens: TokenIssuer,
    private readonly opts: AuthOptions,
  ) {
    this.expiries = new Expiries(kv);
  }

  // ---- challenges -------------------------------------------------------

  requestChallenge(tenant: string, family: Family, req: ChallengeRequest): { id: string; profileId: string; message: string } {
    const now = this.clock.now();
    if (req.expirationTime !== undefined && Date.parse(req.expirationTime) <= now)
      throw badRequest('expirationTime', 'is already in the past');
    if (req.expirationTime !== undefined && req.notBefore !== undefined && Date.parse(req.notBefore) >= Date.parse(req.expirationTime)) {
      throw badRequest('notBefore', 'must be before expirationTime');
    }
    const account: StoredAccount = { blockchainType: family, address: displayAddress(family, req.address) };
    const fields: MessageFields = {
      domain: req.domain,
      address: account.address,
      uri: req.uri,
      version: '1',
      chain: chainLine(req),
      nonce: randomAlphanumeric(17),
      issuedAt: new Date(now).toISOString(),
    };
    if (req.statement !== undefined) fields.statement = req.statement;
    if (req.expirationTime !== undefined) fields.expirationTime = req.expirationTime;
    if (req.notBefore !== undefined) fields.notBefore = req.notBefore;
    if (req.resources !== undefined) fields.resources = req.resources;
    let message: string;
    try {
      message = formatMessage(family, fields);
    } catch (err) {
      if (err instanceof MessageError) throw badRequest(err.field, err.message.slice(err.field.length + 2));
      throw err;
    }
    // Only the resources can make it this long (every other field is far shorter): a message no verify would take.
    if (message.length > SIGNED_MESSAGE_CHARS)
      throw badRequest('resources', `make a message of ${message.length} characters, more than the ${SIGNED_MESSAGE_CHARS} a verify takes`);
    this.admitPending(tenant, 1, now);
    const challenge: Challenge = { id: randomAlphanumeric(17), family, nonce: fields.nonce!, message, expiresAt: now + req.timeout * 1000 };
    if ('publicKey' in req) challenge.publicKey = req.publicKey;
    const key = `${tenant}/${challenge.nonce}`;
    this.kv.transact(() => {
      this.kv.put('challenges', key, challenge);
      this.expiries.add(challenge.expiresAt, 'challenges', key);
    });
    return { id: challenge.id, profileId: this.profileOf(tenant, account), message };
  }

  async verifyChallenge(tenant: string, family: Family, body: { message: string; signature: string }): Promise<Record<string, unknown>> {
    const fields = parseSignIn(family, body.message);
    const key = `${tenant}/${fields.nonce}`;
    const challenge = this.kv.get<Challenge>('challenges', key);
    if (challenge === undefined || challenge.family !== family)
      throw notFound('no challenge with this nonce: unknown, already verified or expired');
    if (challenge.message !== body.message) throw badRequest('message', 'differs from the message of the challenge');
    const now = this.clock.now();
    if (now >= challenge.expiresAt) throw badRequest('message', `the challenge expired at ${new Date(challenge.expiresAt).toISOString()}`);
    const ctx =
      challenge.publicKey === undefined
        ? { now, skewMs: this.opts.skewMs }
        : { now, skewMs: this.opts.skewMs, publicKey: challenge.publicKey };
    await verifySignIn(family, body.message, body.signature, ctx, fields);

    const account: StoredAccount = { blockchainType: family, address: fields.address };
    if (challenge.publicKey !== undefined) account.publicKey = challenge.publicKey;
    // Single use: only the verify that removes the challenge succeeds.
    const profileId = this.kv.transact(() => {
      if (this.kv.get('challenges', key) === undefined)
        throw notFound('no challenge with this nonce: unknown, already verified or expired');
      this.kv.remove('challenges', key);
      this.expiries.remove(challenge.expiresAt, 'challenges', key);
      return this.ensureProfile(tenant, account);
    });

    const verified: Record<string, unknown> = {
      id: challenge.id,
      domain: fields.domain,
      uri: fields.uri,
      version: fields.version,
      nonce: fields.nonce,
      profileId,
    };
    if (family === 'evm') verified['chainId'] = Number(fields.chain);
    else verified['network'] = family === 'aptos' ? APTOS_NETWORK[fields.chain!] : fields.chain;
    verified['address'] = fields.address;
    if (challenge.publicKey !== undefined) verified['publicKey'] = challenge.publicKey;
    for (const k of ['statement', 'expirationTime', 'notBefore', 'resources'] as const)
      if (fields[k] !== undefined) verified[k] = fields[k];
    const exp = tokenExpiry(now, fields.expirationTime === undefined ? undefined : Date.parse(fields.expirationTime), this.opts.skewMs);
    const claims =
      family === 'evm'
        ? { sub: profileId, address: fields.address, chain: `0x${Number(fields.chain).toString(16)}` }
        : { sub: profileId, address: fields.address, network: String(verified['network']) };
    verified['token'] = await this.tokens.sign(claims, { tenantId: tenant, domain: fields.domain }, now, exp);
    // What a backend pins, with the domain as audience, when it checks the token (docs/api.md, Authentication API).
    verified['tokenIssuer'] = this.tokens.issuerOf(tenant);
    return verified;
  }

  // ---- bind and unbind ----------------------------------------------------

  requestBind(tenant: string, accounts: Account[]): { messages: string[] } {
    const list = accounts.map(stored);
    const seen = new Set<string>();
    list.forEach((a, i) => {
      const k = accountKey(tenant, a);
      if (seen.has(k)) throw badRequest(`addresses.${i}.address`, 'is listed twice');
      seen.add(k);
    });
    const now = this.clock.now();
    this.admitPending(tenant, list.length, now);
    const nonces = list.map(() => randomAlphanumeric(17));
    const all = list.map((a) => `- ${a.address}`).join('\n');
    const pending = list.map<PendingSignature>((account, i) => ({
      kind: 'bind',
      nonce: nonces[i]!,
      message: `Please sign this message to bind:\nAddress: ${account.address}\nwith\nAddresses:\n${all}\nNonce: ${nonces[i]}`,
      account,
      group: nonces,
      expiresAt: now + this.opts.bindTtlMs,
    }));
    this.kv.transact(() => pending.forEach((p) => this.putPending(tenant, p)));
    return { messages: pending.map((p) => p.message) };
  }

  async verifyBind(tenant: string, verifications: Array<{ message: string; signature: string }>): Promise<{ profileId: string }> {
    const records = await Promise.all(verifications.map((v, i) => this.checkPending(tenant, 'bind', v, `verifications.${i}`)));
    const group = records[0]!.group!;
    const signed = new Set(records.map((r) => r.nonce));
    if (records.some((r) => r.group![0] !== group[0])) throw badRequest('verifications', 'the messages come from different bind requests');
    const missing = records[0]!.group!.filter((n) => !signed.has(n));
    if (missing.length > 0)
      throw badRequest('verifications', `every address of the bind request must sign; ${missing.length} signature(s) missing`);
    const profileId = this.kv.transact(() => {
      for (const r of records)
        if (this.kv.get('binds', `${tenant}/${r.nonce}`) === undefined) throw notFound('bind request already verified or expired');
      const ordered = group.map((n) => records.find((r) => r.nonce === n)!);
      const target = this.ensureProfile(tenant, ordered[0]!.account);
      for (const r of ordered.slice(1)) this.moveAccount(tenant, r.account, target);
      for (const r of records) this.removePending(tenant, r);
      return target;
    });
    return { profileId };
  }

  removeBind(tenant: string, req: Account & { profileId: string }): { message: string } {
    const account = stored(req);
    const profileId = req.profileId.toLowerCase();
    const profile = this.kv.get<Profile>('profiles', `${tenant}/${profileId}`);
    if (profile === undefined) throw notFound(`no profile ${profileId}`);
    if (this.kv.get<string>('accounts', accountKey(tenant, account)) !== profileId)
      throw notFound(`${account.address} is not bound to profile ${profileId}`);
    this.admitPending(tenant, 1, this.clock.now());
    const nonce = randomAlphanumeric(17);
    const pending: PendingSignature = {
      kind: 'unbind',
      nonce,
      message: `Please sign this message to unbind:\nAddress: ${account.address}\nfrom\nProfile Id:\n- ${profileId}\nNonce: ${nonce}`,
      account,
      profileId,
      expiresAt: this.clock.now() + this.opts.bindTtlMs,
    };
    this.kv.transact(() => this.putPending(tenant, pending));
    return { message: pending.message };
  }

  async verifyRemoveBind(tenant: string, body: { message: string; signature: string }): Promise<{ profileId: string }> {
    const record = await this.checkPending(tenant, 'unbind', body, '');
    const profileId = record.profileId!;
    this.kv.transact(() => {
      if (this.kv.get('binds', `${tenant}/${record.nonce}`) === undefined) throw notFound('unbind request already verified or expired');
      if (this.kv.get<string>('accounts', accountKey(tenant, record.account)) !== profileId)
        throw notFound(`${record.account.address} is no longer bound to profile ${profileId}`);
      this.detach(tenant, record.account, profileId);
      this.kv.remove('accounts', accountKey(tenant, record.account));
      this.removePending(tenant, record);
    });
    return { profileId };
  }

  addresses(tenant: string, profileId: string): string[] {
    const profile = this.kv.get<Profile>('profiles', `${tenant}/${profileId.toLowerCase()}`);
    if (profile === undefined) throw notFound(`no profile ${profileId}`);
    return profile.addresses.map((a) => a.address);
  }

  // ---- profiles -------------------------------------------------------------

  /** The profile `account` has, or the one it will get at its first sign-in. */
  private profileOf(tenant: string, account: StoredAccount): string {
    return this.kv.get<string>('accounts', accountKey(tenant, account)) ?? this.freshProfileId(tenant, account);
  }

  /**
   * Stable per (tenant, chain family, address) until the address is bound elsewhere:
   * sha-256 of those, with a counter in case that id is taken (the address left it).
   */
  private freshProfileId(tenant: string, account: StoredAccount): string {
    const base = accountKey(tenant, account);
    for (let n = 0; ; n++) {
      const id = `0x${bytesToHex(sha256(utf8ToBytes(n === 0 ? base : `${base}#${n}`)))}`;
      if (this.kv.get('profiles', `${tenant}/${id}`) === undefined) return id;
    }
  }

  private ensureProfile(tenant: string, account: StoredAccount): string {
    const existing = this.kv.get<string>('accounts', accountKey(tenant, account));
    if (existing !== undefined) return existing;
    const profileId = this.freshProfileId(tenant, account);
    this.kv.put('profiles', `${tenant}/${profileId}`, { profileId, addresses: [account] } satisfies Profile);
    this.kv.put('accounts', accountKey(tenant, account), profileId);
    return profileId;
  }

  private moveAccount(tenant: string, account: StoredAccount, target: string): void {
    const current = this.kv.get<string>('accounts', accountKey(tenant, account));
    if (current === target) return;
    if (current !== undefined) this.detach(tenant, account, current);
    const profile = this.kv.get<Profile>('profiles', `${tenant}/${target}`)!;
    profile.addresses.push(account);
    this.kv.put('profiles', `${tenant}/${target}`, profile);
    this.kv.put('accounts', accountKey(tenant, account), target);
  }

  /** Takes `account` out of a profile; a profile left empty is deleted. */
  private detach(tenant: string, account: StoredAccount, profileId: string): void {
    const profile = this.kv.get<Profile>('profiles', `${tenant}/${profileId}`);
    if (profile === undefined) return;
    const k = accountKey(tenant, account);
    profile.addresses = profile.addresses.filter((a) => accountKey(tenant, a) !== k);
    if (profile.addresses.length === 0) this.kv.remove('profiles', `${tenant}/${profileId}`);
    else this.kv.put('profiles', `${tenant}/${profileId}`, profile);
  }

  // ---- pending bind and unbind messages -------------------------------------

  /**
   * Refuses `n` more messages waiting for a signature past the tenant's limit. The counts are kept with every
   * write (engine/expiry.ts), so this is two reads; at the limit, what is already due is purged first, so an
   * expired message never counts. The caller writes the messages before it next yields, so no request slips in between.
   */
  private admitPending(tenant: string, n: number, now: number): void {
    const pending = (): number => this.expiries.count('challenges', tenant) + this.expiries.count('binds', tenant);
    if (pending() + n <= this.opts.maxPending) return;
    this.expiries.purge(now);
    if (pending() + n <= this.opts.maxPending) return;
    const limit = this.opts.maxPending;
    // The next message of any tenant to expire: finding this tenant's own would be a scan.
    const wait = Math.max(1, Math.ceil(((this.expiries.nextDue() ?? now) - now) / 1000));
    throw new ApiError(
      429,
      `challenges: a tenant has at most ${limit} messages waiting for a signature (sign-in challenges, bind and unbind messages; CHAINPOST_MAX_PENDING_CHALLENGES): verify some or wait until they expire`,
      { field: 'challenges', limit, variable: 'CHAINPOST_MAX_PENDING_CHALLENGES' },
      { 'retry-after': String(wait) },
    );
  }

  private putPending(tenant: string, p: PendingSignature): void {
    const key = `${tenant}/${p.nonce}`;
    this.kv.put('binds', key, p);
    this.expiries.add(p.expiresAt, 'binds', key);
  }

  private removePending(tenant: string, p: PendingSignature): void {
    const key = `${tenant}/${p.nonce}`;
    this.kv.remove('binds', key);
    this.expiries.remove(p.expiresAt, 'binds', key);
  }

  /** Finds the pending message by its nonce line, and checks it is unchanged, unexpired and signed by its address. */
  private async checkPending(
    tenant: string,
    kind: PendingSignature['kind'],
    v: { message: string; signature: string },
    at: string,
  ): Promise<PendingSignature> {
    const field = (f: string): string => (at === '' ? f : `${at}.${f}`);
    const nonce = /\nNonce: ([A-Za-z0-9]+)$/.exec(v.message)?.[1];
    if (nonce === undefined)
      throw badRequest(field('message'), `not a message of /bind/${kind === 'bind' ? 'request' : 'remove'} (no Nonce line at the end)`);
    const record = this.kv.get<PendingSignature>('binds', `${tenant}/${nonce}`);
    if (record === undefined || record.kind !== kind)
      throw notFound(`no ${kind} message with this nonce: unknown, already verified or expired`);
    if (record.message !== v.message) throw badRequest(field('message'), `differs from the message that was issued`);
    if (this.clock.now() >= record.expiresAt) throw badRequest(field('message'), `expired at ${new Date(record.expiresAt).toISOString()}`);
    const signer = {
      family: record.account.blockchainType,
      address: record.account.address,
      nonce,
      application: '',
      chainId: 1,
    } as Parameters<typeof signatureValid>[2];
    if (record.account.publicKey !== undefined) signer.publicKey = record.account.publicKey;
    if (!(await signatureValid(v.message, v.signature, signer, field('signature')))) {
      throw badRequest(field('signature'), `not a valid signature of this message by ${record.account.address}`);
    }
    return record;
  }
}

/**
 * A token's `exp` (s) for a message verified at `now` (ms): the message's expirationTime, or for one verified
 * within the skew allowance after it the end of that allowance (the last instant the message itself is
 * accepted), rounded up to the second; always after `iat` (now, rounded down), so no token is expired at issue.
 */
export function tokenExpiry(now: number, expirationTime: number | undefined, skewMs: number): number {
  const iat = Math.floor(now / 1000);
  if (expirationTime === undefined) return iat + TOKEN_DEFAULT_S;
  const until = expirationTime > now ? expirationTime : expirationTime + skewMs;
  return Math.min(Math.ceil(until / 1000), iat + TOKEN_MAX_S);
}

function chainLine(req: ChallengeRequest): string {
  if ('chainId' in req) return String(req.chainId);
  if ('publicKey' in req) return CHAIN_LINE_APTOS[req.network]!;
  return req.network;
}

function stored(a: Account): StoredAccount {
  const out: StoredAccount = { blockchainType: a.blockchainType, address: displayAddress(a.blockchainType, a.address) };
  if (a.publicKey !== undefined) out.publicKey = a.publicKey.toLowerCase();
  return out;
}
