import type { Clock } from '../clock.js';
import { DEFAULT_LIMITS, type StreamLimits } from './limits.js';
import { uuidV4 } from '../delivery/ids.js';
import { type Dispatcher, streamKey } from '../delivery/dispatcher.js';
import { ApiError, notFound } from '../errors.js';
import { page, type Page } from '../page.js';
import type { TargetPolicy } from '../net/targets.js';
import type { Kv } from '../ports.js';
import { changeEffects } from './change-effects.js';
import { type ControlPlane, StoreControlPlane, streamOf } from './control-plane.js';
import type { StreamFamily } from './family.js';
import { ofFamily, type FamilyName, type StoredStream, type StreamCommon, type StreamState } from './model.js';
import { ownerMaySet } from './transitions.js';
import { EVERY_CHAIN, type FollowedChains } from './unfollowed.js';

/** 404 unless the tenant has this stream, of any family (stats, the test hook); reads no record: the hook checks a batch's thousand. */
export function mustOwn(kv: Pick<Kv, 'has'>, tenant: string, id: string): void {
  if (!kv.has('streams', streamKey(tenant, id))) throw notFound(`no stream ${id}`);
}

export type AddressAnswer = { streamId: string; address: string | string[] };

/**
 * One family's stream resources of a tenant: create, update, get, list,
 * remove, status and addresses, written once for every family (`fam` says
 * what differs). Streams of all families share the `streams` table; each
 * family sees only its own (another family's id is a 404). Every change
 * is written through the control plane, where what it sets off on this node runs (change-effects.ts); reads go
 * to the store.
 */
export class FamilyStreams<D extends StreamCommon> {
  constructor(
    protected readonly kv: Kv,
    protected readonly clock: Clock,
    protected readonly dispatcher: Dispatcher,
    protected readonly fam: StreamFamily<D>,
    protected readonly limits: StreamLimits = DEFAULT_LIMITS,
    /** Where webhookUrl may point (CHAINPOST_PRIVATE_TARGETS); none: anywhere. */
    protected readonly targets?: TargetPolicy,
    /** The chains the server follows: a stream on others says so. */
    protected readonly followed: FollowedChains = EVERY_CHAIN,
    /** Where changes are written (engine/streams/control-plane.ts); none: this store, telling the dispatcher (unit tests, benches). */
    protected readonly plane: ControlPlane = new StoreControlPlane(
      kv,
      undefined,
      changeEffects({ dispatcher, followed, watched: (s) => fam.watched(s as D & StreamState) }),
    ),
  ) {}

  async create(tenant: string, def: D, ownerEmail: string | undefined): Promise<Record<string, unknown>> {
    const checked = this.fam.check(def, this.clock.now(), this.limits);
    const now = this.clock.now();
    const id = uuidV4();
    await this.testWebhook(tenant, id, checked);
    // An unmarked family's records carry none (EVM's, as before other families existed).
    const family = this.fam.unmarked === true ? {} : { family: this.fam.family };
    const s: D & StreamState = {
      ...checked,
      id,
      tenantId: tenant,
      ...family,
      status: 'active',
      statusMessage: '',
      createdAt: now,
      updatedAt: now,
      amountOfAddresses: 0,
    };
    if (ownerEmail !== undefined) s.ownerEmail = ownerEmail;
    // The limit is checked where the change is applied: creates racing each other past the test webhook's wait cannot pass it.
    const written = await this.plane.write({ kind: 'stream.create', stream: s, maxStreams: this.limits.streams });
    return this.answer(written as D & StreamState);
  }

  async update(tenant: string, id: string, changes: Partial<D>): Promise<Record<string, unknown>> {
    const s = this.get(tenant, id);
    const given = stripUndefined(changes);
    const merged = this.fam.check({ ...definitionOf(s), ...given }, this.clock.now(), this.limits);
    await this.testWebhook(tenant, id, merged);
    const changed = Object.keys(given) as Array<keyof D>;
    // Applied after the test webhook's wait, to the stream as it is then: only the fields this update names change.
    const fields = Object.fromEntries(changed.map((k) => [k, merged[k]]));
    const written = await this.plane.write({ kind: 'stream.update', ...this.target(tenant, id), fields, at: this.clock.now() });
    return this.answer(written as D & StreamState);
  }

  /** The tenant's stream of this family; 404 for another tenant's or another family's. */
  get(tenant: string, id: string): D & StreamState {
    return streamOf(this.kv, tenant, id, this.fam.family, this.fam.unmarked === true) as D & StreamState;
  }

  /** The stream a change names: the tenant's of this family (applying it refuses another's with a 404). */
  private target(tenant: string, id: string): { tenant: string; id: string; family: FamilyName; unmarked: boolean } {
    return { tenant, id, family: this.fam.family, unmarked: this.fam.unmarked === true };
  }

  /** Whether a stored stream is of this family. */
  private mine(s: StoredStream): boolean {
    return ofFamily(s, this.fam.family, this.fam.unmarked === true);
  }

  /** The stream as the API answers it. */
  describe(tenant: string, id: string): Record<string, unknown> {
    return this.answer(this.get(tenant, id));
  }

  list(tenant: string, limit: number, cursor: string | null): Page<Record<string, unknown>> {
    return page<D & StreamState, Record<string, unknown>>(this.kv, 'streams', `${tenant}/`, {
      limit,
      cursor,
      keep: (s) => this.mine(s),
      map: (s) => this.answer(s),
    });
  }

  async remove(tenant: string, id: string): Promise<Record<string, unknown>> {
    const s = this.get(tenant, id);
    await this.plane.write({ kind: 'stream.remove', tenant, id });
    return this.answer(s);
  }

  async setStatus(tenant: string, id: string, status: 'active' | 'paused'): Promise<Record<string, unknown>> {
    const s = this.get(tenant, id);
    ownerMaySet(s.status, status);
    if (status === 'active' && s.status !== 'active') await this.testWebhook(tenant, id, s);
    const { stream } = await this.plane.write({ kind: 'stream.status', ...this.target(tenant, id), status, at: this.clock.now() });
    return this.answer(stream as D & StreamState);
  }

  addAddresses(tenant: string, id: string, addresses: string[]): Promise<AddressAnswer> {
    return this.changeAddresses(tenant, id, addresses, true);
  }

  removeAddresses(tenant: string, id: string, addresses: string[]): Promise<AddressAnswer> {
    return this.changeAddresses(tenant, id, addresses, false);
  }

  listAddresses(tenant: string, id: string, limit: number, cursor: string | null): Page<{ address: string }> {
    this.get(tenant, id);
    return page<number, { address: string }>(this.kv, 'streamAddresses', `${id}/`, {
      limit,
      cursor,
      map: (_v, key) => ({ address: key.slice(id.length + 1) }),
    });
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
    if (!res.delivered)
      throw new ApiError(
        400,
        `webhookUrl: the test webhook to ${def.webhookUrl} was not accepted (${res.error ?? 'no answer'}); it must answer 200 within 10 s`,
        { field: 'webhookUrl' },
      );
  }

  /** The stream as the API answers it now, saying whether it cannot fire on a chain the server does not follow. */
  private answer(s: D & StreamState): Record<string, unknown> {
    const now = this.clock.now();
    return this.followed.answer(this.fam.response(s, now), s.status, this.fam.watched(s).chainIds, now);
  }

  private async changeAddresses(tenant: string, id: string, addresses: string[], add: boolean): Promise<AddressAnswer> {
    const stored = [...new Set(addresses.map(this.fam.address))];
    const kind = add ? 'addresses.add' : 'addresses.remove';
    await this.plane.write({
      kind,
      ...this.target(tenant, id),
      addresses: stored,
      at: this.clock.now(),
      maxAddresses: this.limits.addresses,
    });
    return { streamId: id, address: addresses.length === 1 ? stored[0]! : stored };
  }
}

/** The definition a record was made from: the record without its state. */
function definitionOf<D extends StreamCommon>(s: D & StreamState): D {
  const {
    id: _id,
    tenantId: _t,
    family: _f,
    status: _s,
    statusMessage: _m,
    createdAt: _c,
    updatedAt: _u,
    amountOfAddresses: _a,
    errorSince: _e,
    ownerEmail: _o,
    ...def
  } = s;
  return def as unknown as D;
}

const stripUndefined = <T extends object>(o: T): Partial<T> =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
