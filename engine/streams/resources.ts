import type { Clock } from '../clock.js';
import { DEFAULT_LIMITS, type StreamLimits } from './limits.js';
import { uuidV4 } from '../delivery/ids.js';
import { type Dispatcher, streamKey } from '../delivery/dispatcher.js';
import { ApiError, notFound, overLimit } from '../errors.js';
import { page, type Page } from '../page.js';
import type { TargetPolicy } from '../net/targets.js';
import type { Kv, Table } from '../ports.js';
import type { StreamFamily, Watched } from './family.js';
import type { StoredStream, StreamCommon, StreamState } from './model.js';
import { ownerMaySet } from './transitions.js';
import { EVERY_CHAIN, type FollowedChains } from './unfollowed.js';

/** Tables keyed `streamId/…` whose rows go with their stream when it is deleted. */
const OWNED_BY_STREAM: readonly Table[] = ['streamAddresses', 'streamXpubs', 'xpubKeys'];

/** Told of every change to what streams watch (the matcher's watchlist, engine/match/watchlist.ts). */
export interface StreamWatch {
  /** Created or changed: the record with what matching reads (chainIds: the store's chain keys). */
  stream(s: StoredStream & Watched): void;
  removed(id: string): void;
  /** Addresses in their stored form (EVM lower-case; Bitcoin bech32 lower-case, base58 as given; Solana as given). */
  addressesChanged(id: string, added: readonly string[], removed: readonly string[]): void;
  /** Bitcoin: extended keys added (id and key) or removed (ids); the watchlist derives their addresses, and resolves once they are watched. */
  xpubsChanged?(id: string, added: ReadonlyArray<{ id: string; xpub: string }>, removed: readonly string[]): Promise<void> | void;
}

/** 404 unless the tenant has this stream, of any family (stats, the test hook); reads no record: the hook checks a batch's thousand. */
export function mustOwn(kv: Pick<Kv, 'has'>, tenant: string, id: string): void {
  if (!kv.has('streams', streamKey(tenant, id))) throw notFound(`no stream ${id}`);
}

export type AddressAnswer = { streamId: string; address: string | string[] };

/**
 * One family's stream resources of a tenant: create, update, get, list,
 * remove, status and addresses, written once for every family (`fam` says
 * what differs). Streams of all families share the `streams` table; each
 * family sees only its own (another family's id is a 404).
 */
export class FamilyStreams<D extends StreamCommon> {
  constructor(
    protected readonly kv: Kv,
    protected readonly clock: Clock,
    protected readonly dispatcher: Dispatcher,
    protected readonly watch: StreamWatch | undefined,
    protected readonly fam: StreamFamily<D>,
    protected readonly limits: StreamLimits = DEFAULT_LIMITS,
    /** Where webhookUrl may point (CHAINPOST_PRIVATE_TARGETS); none: anywhere. */
    protected readonly targets?: TargetPolicy,
    /** The chains the server follows: a stream on others says so. */
    protected readonly followed: FollowedChains = EVERY_CHAIN,
  ) {}

  async create(tenant: string, def: D, ownerEmail: string | undefined): Promise<Record<string, unknown>> {
    const checked = this.fam.check(def, this.clock.now(), this.limits);
    const now = this.clock.now();
    const id = uuidV4();
    await this.testWebhook(tenant, id, checked);
    // An unmarked family's records carry none (EVM's, as before other families existed).
    const family = this.fam.unmarked === true ? {} : { family: this.fam.family };
    const s: D & StreamState = { ...checked, id, tenantId: tenant, ...family, status: 'active', statusMessage: '', createdAt: now, updatedAt: now, amountOfAddresses: 0 };
    if (ownerEmail !== undefined) s.ownerEmail = ownerEmail;
    // Counted and written in one write transaction (LMDB serializes them, across processes too): creates
    // racing each other past the test webhook's wait cannot pass the limit. Every family's streams count.
    const committed = await this.kv.transactAsync(() => {
      const held = this.kv.count('streams', { start: `${tenant}/`, end: `${tenant}/\uffff`, limit: this.limits.streams });
      if (held >= this.limits.streams) throw overLimit('streams', 'a tenant holds', this.limits.streams, 'CHAINPOST_MAX_STREAMS');
      this.kv.put('streams', streamKey(tenant, id), s);
      return this.dispatcher.saved(s);
    });
    committed();
    this.tellStream(s);
    this.followed.saved(id, this.fam.watched(s).chainIds, now);
    return this.answer(s);
  }

  async update(tenant: string, id: string, changes: Partial<D>): Promise<Record<string, unknown>> {
    const s = this.get(tenant, id);
    const given = stripUndefined(changes);
    const merged = this.fam.check({ ...definitionOf(s), ...given }, this.clock.now(), this.limits);
    await this.testWebhook(tenant, id, merged);
    const changed = Object.keys(given) as Array<keyof D>;
    const [updated, committed] = await this.kv.transactAsync(() => {
      // Re-read after the test webhook's wait: only the fields this update names change.
      const cur = this.get(tenant, id);
      const next: D & StreamState = { ...cur, ...Object.fromEntries(changed.map((k) => [k, merged[k]])), updatedAt: this.clock.now() };
      // A stream listing a removed chain is reported invalid until updated; an update that fixes it clears that.
      if (next.status !== 'error' && next.status !== 'terminated') next.statusMessage = '';
      this.kv.put('streams', streamKey(tenant, id), next);
      return [next, this.dispatcher.saved(next)] as const;
    });
    committed();
    this.tellStream(updated);
    this.followed.saved(id, this.fam.watched(updated).chainIds, this.clock.now());
    return this.answer(updated);
  }

  /** The tenant's stream of this family; 404 for another tenant's or another family's. */
  get(tenant: string, id: string): D & StreamState {
    const s = this.kv.get<StoredStream>('streams', streamKey(tenant, id));
    if (s === undefined || !this.mine(s)) throw notFound(`no stream ${id}`);
    return s as D & StreamState;
  }

  /** Whether a stored stream is of this family: marked with its name, or marked with none when the family is the unmarked one. */
  private mine(s: StoredStream): boolean {
    return s.family === undefined ? this.fam.unmarked === true : s.family === this.fam.family;
  }

  /** The stream as the API answers it. */
  describe(tenant: string, id: string): Record<string, unknown> {
    return this.answer(this.get(tenant, id));
  }

  list(tenant: string, limit: number, cursor: string | null): Page<Record<string, unknown>> {
    return page<D & StreamState, Record<string, unknown>>(this.kv, 'streams', `${tenant}/`, { limit, cursor, keep: (s) => this.mine(s), map: (s) => this.answer(s) });
  }

  async remove(tenant: string, id: string): Promise<Record<string, unknown>> {
    const s = this.get(tenant, id);
    const committed = await this.kv.transactAsync(() => {
      this.kv.remove('streams', streamKey(tenant, id));
      for (const table of OWNED_BY_STREAM) {
        for (const { key } of this.kv.range(table, { start: `${id}/`, end: `${id}/\uffff` })) this.kv.remove(table, key);
      }
      return this.dispatcher.deleting(id);
    });
    committed();
    this.watch?.removed(id);
    return this.answer(s);
  }

  async setStatus(tenant: string, id: string, status: 'active' | 'paused'): Promise<Record<string, unknown>> {
    const s = this.get(tenant, id);
    ownerMaySet(s.status, status);
    if (status === 'active' && s.status !== 'active') await this.testWebhook(tenant, id, s);
    const updated = await this.kv.transactAsync(() => {
      const cur = this.get(tenant, id);
      ownerMaySet(cur.status, status);
      const was = cur.status;
      const committed = this.dispatcher.statusSet(cur, status, was);
      cur.status = status;
      cur.statusMessage = '';
      delete cur.errorSince;
      cur.updatedAt = this.clock.now();
      this.kv.put('streams', streamKey(tenant, id), cur);
      return { cur, committed };
    });
    updated.committed();
    return this.answer(updated.cur);
  }

  addAddresses(tenant: string, id: string, addresses: string[]): Promise<AddressAnswer> {
    return this.changeAddresses(tenant, id, addresses, true);
  }

  removeAddresses(tenant: string, id: string, addresses: string[]): Promise<AddressAnswer> {
    return this.changeAddresses(tenant, id, addresses, false);
  }

  listAddresses(tenant: string, id: string, limit: number, cursor: string | null): Page<{ address: string }> {
    this.get(tenant, id);
    return page<number, { address: string }>(this.kv, 'streamAddresses', `${id}/`, { limit, cursor, map: (_v, key) => ({ address: key.slice(id.length + 1) }) });
  }

  /**
   * The test webhook: the change is refused with 400 unless the receiver answers 200 within 10 s. A webhookUrl
   * whose host resolves to an address the target policy refuses is refused first, naming why (deliveries are
   * checked again where each connection opens: the name may resolve elsewhere by then).
   */
  private async testWebhook(tenant: string, id: string, def: StreamCommon): Promise<void> {
    const refused = await this.targets?.check(def.webhookUrl, 'webhookUrl');
    if (refused !== undefined) throw new ApiError(400, refused, { field: 'webhookUrl' });
    const test = this.fam.testWebhook(id, def.tag);
    const body = test === null ? new Uint8Array(0) : new TextEncoder().encode(JSON.stringify(test));
    const res = await this.dispatcher.post(tenant, def.webhookUrl, body, 0);
    if (!res.delivered) throw new ApiError(400, `webhookUrl: the test webhook to ${def.webhookUrl} was not accepted (${res.error ?? 'no answer'}); it must answer 200 within 10 s`, { field: 'webhookUrl' });
  }

  /** The stream as the API answers it now, saying whether it cannot fire on a chain the server does not follow. */
  private answer(s: D & StreamState): Record<string, unknown> {
    const now = this.clock.now();
    return this.followed.answer(this.fam.response(s, now), s.status, this.fam.watched(s).chainIds, now);
  }

  private tellStream(s: D & StreamState): void {
    this.watch?.stream({ ...s, ...this.fam.watched(s) });
  }

  private async changeAddresses(tenant: string, id: string, addresses: string[], add: boolean): Promise<AddressAnswer> {
    const stored = [...new Set(addresses.map(this.fam.address))];
    const changed: string[] = [];
    const committed = await this.kv.transactAsync(() => {
      const s = this.get(tenant, id);
      let n = s.amountOfAddresses;
      for (const a of stored) {
        const key = `${id}/${a}`;
        const has = this.kv.has('streamAddresses', key);
        if (add && !has) {
          if (n >= this.limits.addresses) throw overLimit('address', 'a stream holds', this.limits.addresses, 'CHAINPOST_MAX_ADDRESSES');
          this.kv.put('streamAddresses', key, 1);
          changed.push(a);
          n++;
        } else if (!add && has) {
          this.kv.remove('streamAddresses', key);
          changed.push(a);
          n--;
        }
      }
      s.amountOfAddresses = n;
      s.updatedAt = this.clock.now();
      this.kv.put('streams', streamKey(tenant, id), s);
      return this.dispatcher.recordWritten(id);
    });
    committed();
    this.watch?.addressesChanged(id, add ? changed : [], add ? [] : changed);
    return { streamId: id, address: addresses.length === 1 ? stored[0]! : stored };
  }
}

/** The definition a record was made from: the record without its state. */
function definitionOf<D extends StreamCommon>(s: D & StreamState): D {
  const { id: _id, tenantId: _t, family: _f, status: _s, statusMessage: _m, createdAt: _c, updatedAt: _u, amountOfAddresses: _a, errorSince: _e, ownerEmail: _o, ...def } = s;
  return def as unknown as D;
}

const stripUndefined = <T extends object>(o: T): Partial<T> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
