import { getAddress } from 'viem/utils';
import type { Clock } from '../clock.js';
import { badRequest, notFound } from '../errors.js';
import { Expiries } from '../expiry.js';
import { randomAlphanumeric } from '../random.js';
import { SIGNED_MESSAGE_CHARS } from '../size-limits.js';
import type { Kv } from '../ports.js';
import {
  accountKey,
  freshProfileId,
  pendingOf,
  type AuthChanges,
  type Challenge,
  type PendingSignature,
  type Profile,
  type StoredAccount,
} from './changes.js';
import { MessageError, formatMessage, type Family, type MessageFields } from './message.js';
import type { Account, ChallengeRequest } from './schemas.js';
import type { TokenIssuer } from './token.js';
import { parseSignIn, signatureValid, verifySignIn } from './verify.js';

/**
 * The Authentication API: sign-in challenges (request, verify), profiles, and
 * binding addresses into one profile or out of it. All state is per tenant in
 * the store, read there and changed only by the changes of engine/auth/changes.ts written through the control
 * plane; expired challenges and bind messages are purged on the service clock.
 */
export interface AuthOptions {
  /** Allowance for clock skew on a message's expirationTime and notBefore, ms. */
  skewMs: number;
  /** How long a bind or unbind message waits for its signature, ms. */
  bindTtlMs: number;
  /** Messages a tenant may have waiting for a signature: sign-in challenges, bind and unbind messages together. */
  maxPending: number;
  /**
   * On a cluster node: resolves once this node has applied the control log as far as it went at the call, or after
   * `ms` (false). A message requested through another node may not be applied here yet when its verify arrives.
   */
  caughtUp?: (ms: number) => Promise<boolean>;
}

/** How long a verify meeting an unknown nonce waits for this node to apply what the other nodes wrote, ms. */
const OTHER_NODE_MS = 1_000;

/** A sign-in token's life without an expirationTime in the message, s. */
const TOKEN_DEFAULT_S = 3_600;
/** A sign-in token lives at most a day from its issue, whatever the signed message's expirationTime says, s. */
const TOKEN_MAX_S = 86_400;

const displayAddress = (family: Family, address: string): string =>
  family === 'evm' ? getAddress(address) : family === 'aptos' ? address.toLowerCase() : address;
const CHAIN_LINE_APTOS: Record<string, string> = { mainnet: '1', testnet: '2' };
const APTOS_NETWORK: Record<string, string> = { '1': 'mainnet', '2': 'testnet' };

export class AuthService {
  private readonly expiries: Expiries;

  constructor(
    private readonly kv: Kv,
    /** Where every change is written: the control plane. */
    private readonly changes: AuthChanges,
    private readonly clock: Clock,
    private readonly tokens: TokenIssuer,
    private readonly opts: AuthOptions,
  ) {
    this.expiries = new Expiries(kv);
  }

  // ---- challenges -------------------------------------------------------

  async requestChallenge(
    tenant: string,
    family: Family,
    req: ChallengeRequest,
  ): Promise<{ id: string; profileId: string; message: string }> {
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
    await this.expireAtLimit(tenant, 1, now);
    const challenge: Challenge = { id: randomAlphanumeric(17), family, nonce: fields.nonce!, message, expiresAt: now + req.timeout * 1000 };
    if ('publicKey' in req) challenge.publicKey = req.publicKey;
    await this.changes.write({ kind: 'auth.challenge.request', tenant, challenge, maxPending: this.opts.maxPending, at: now });
    return { id: challenge.id, profileId: this.profileOf(tenant, account), message };
  }

  async verifyChallenge(tenant: string, family: Family, body: { message: string; signature: string }): Promise<Record<string, unknown>> {
    const fields = parseSignIn(family, body.message);
    const key = `${tenant}/${fields.nonce}`;
    const challenge = await this.issued(() => this.kv.get<Challenge>('challenges', key));
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
    // Single use: only the verify applied while the challenge is there succeeds (engine/auth/changes.ts).
    const profileId = await this.changes.write({
      kind: 'auth.challenge.verify',
      tenant,
      nonce: challenge.nonce,
      account,
      profileId: this.profileOf(tenant, account),
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

  async requestBind(tenant: string, accounts: Account[]): Promise<{ messages: string[] }> {
    const list = accounts.map(stored);
    const seen = new Set<string>();
    list.forEach((a, i) => {
      const k = accountKey(tenant, a);
      if (seen.has(k)) throw badRequest(`addresses.${i}.address`, 'is listed twice');
      seen.add(k);
    });
    const now = this.clock.now();
    await this.expireAtLimit(tenant, list.length, now);
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
    await this.changes.write({ kind: 'auth.bind.request', tenant, pending, maxPending: this.opts.maxPending, at: now });
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
    const first = records.find((r) => r.nonce === group[0])!;
    const profileId = await this.changes.write({
      kind: 'auth.bind.verify',
      tenant,
      nonces: group,
      profileId: this.profileOf(tenant, first.account),
    });
    return { profileId };
  }

  async removeBind(tenant: string, req: Account & { profileId: string }): Promise<{ message: string }> {
    const account = stored(req);
    const profileId = req.profileId.toLowerCase();
    const profile = this.kv.get<Profile>('profiles', `${tenant}/${profileId}`);
    if (profile === undefined) throw notFound(`no profile ${profileId}`);
    if (this.kv.get<string>('accounts', accountKey(tenant, account)) !== profileId)
      throw notFound(`${account.address} is not bound to profile ${profileId}`);
    const now = this.clock.now();
    await this.expireAtLimit(tenant, 1, now);
    const nonce = randomAlphanumeric(17);
    const pending: PendingSignature = {
      kind: 'unbind',
      nonce,
      message: `Please sign this message to unbind:\nAddress: ${account.address}\nfrom\nProfile Id:\n- ${profileId}\nNonce: ${nonce}`,
      account,
      profileId,
      expiresAt: now + this.opts.bindTtlMs,
    };
    await this.changes.write({ kind: 'auth.unbind.request', tenant, pending: [pending], maxPending: this.opts.maxPending, at: now });
    return { message: pending.message };
  }

  async verifyRemoveBind(tenant: string, body: { message: string; signature: string }): Promise<{ profileId: string }> {
    const record = await this.checkPending(tenant, 'unbind', body, '');
    return { profileId: await this.changes.write({ kind: 'auth.unbind.verify', tenant, nonce: record.nonce }) };
  }

  addresses(tenant: string, profileId: string): string[] {
    const profile = this.kv.get<Profile>('profiles', `${tenant}/${profileId.toLowerCase()}`);
    if (profile === undefined) throw notFound(`no profile ${profileId}`);
    return profile.addresses.map((a) => a.address);
  }

  // ---- profiles -------------------------------------------------------------

  /** The profile `account` has, or the one it will get at its first sign-in. */
  private profileOf(tenant: string, account: StoredAccount): string {
    return this.kv.get<string>('accounts', accountKey(tenant, account)) ?? freshProfileId(this.kv, tenant, account);
  }

  // ---- what expired -----------------------------------------------------------

  /** Writes the removal of what expired by now, when something has (the purge every minute of service time). */
  async expire(now = this.clock.now()): Promise<void> {
    const due = this.expiries.nextDue();
    if (due !== undefined && due <= now) await this.changes.write({ kind: 'auth.expire', at: now });
  }

  /**
   * At the tenant's limit of messages waiting for a signature, what is already due is removed first, so an
   * expired message never counts (the counts are kept with every write, engine/expiry.ts: this is two reads).
   * The limit itself is checked where the new messages are applied, so racing requests cannot pass it.
   */
  private async expireAtLimit(tenant: string, n: number, now: number): Promise<void> {
    if (pendingOf(this.kv, tenant) + n > this.opts.maxPending) await this.expire(now);
  }

  /**
   * What `read` finds of a message issued for signing; none found on a cluster node, read again once this node has
   * applied the control log (up to OTHER_NODE_MS): another node may have issued it a moment ago.
   */
  private async issued<T>(read: () => T | undefined): Promise<T | undefined> {
    const found = read();
    if (found !== undefined || this.opts.caughtUp === undefined) return found;
    await this.opts.caughtUp(OTHER_NODE_MS);
    return read();
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
    const record = await this.issued(() => this.kv.get<PendingSignature>('binds', `${tenant}/${nonce}`));
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
