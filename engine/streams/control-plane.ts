import { logWatchChange } from './watch-log.js';
import { xpubCountKey, xpubKey, type StoredXpub } from './xpub-record.js';
import { AUTH_APPLY, type AuthKinds } from '../auth/changes.js';
import { streamKey } from '../delivery/stream-port.js';
import { notFound, overLimit } from '../errors.js';
import { applyKeyChange, type KeyChange, type KeyKinds, type KeyStore } from '../keys.js';
import type { Kv, Table } from '../ports.js';
import { ofFamily, type FamilyName, type StoredStream, type StreamStatus } from './model.js';
import { applySettings, type Settings } from './settings.js';
import { ownerMaySet } from './transitions.js';

/**
 * The control plane: what tenants configure (streams, their addresses and xpubs, settings; API keys and tenants) changes only by a
 * change written here. A change is plain data (it goes through msgpack unchanged) that says all it needs:
 * ids, times and limits are chosen before it is written, so applying it is a function of the store and the
 * change alone, and checks that must be atomic with the write (a limit's count and the insert) are made
 * where it is applied. Today it is applied in one LMDB write transaction (StoreControlPlane); a replicated
 * log can stand behind the same port, every node applying the same changes in the same order.
 */
export interface ControlPlane {
  /**
   * Writes the change; resolves with what applying it gave, once that is durable and this node's reactions to it
   * ran (ChangeEffects). A change its checks refuse rejects (with their ApiError) and changes nothing.
   */
  write<C extends Change>(change: C): Promise<Applied<C>>;
}

/** A new stream (id, times and state chosen by its creator), unless its tenant holds `maxStreams` already. */
export interface StreamCreate {
  kind: 'stream.create';
  stream: StoredStream;
  maxStreams: number;
}

/** The named fields of a stream's definition set to these (checked) values. */
export interface StreamUpdate {
  kind: 'stream.update';
  tenant: string;
  id: string;
  family: FamilyName;
  /** The family's records carry no family name (EVM's). */
  unmarked: boolean;
  fields: Record<string, unknown>;
  at: number;
}

/** The owner sets a stream active or paused (the interface's transitions decide whether it may). */
export interface StreamStatusSet {
  kind: 'stream.status';
  tenant: string;
  id: string;
  family: FamilyName;
  /** The family's records carry no family name (EVM's). */
  unmarked: boolean;
  status: 'active' | 'paused';
  at: number;
}

/**
 * Delivery's health rules moved a stream to error or ended it (engine/delivery/stream-health.ts), on the node that
 * delivers it, which wrote it with what the rule changed: written through the log too, so every node shows it.
 */
export interface StreamHealthSet {
  kind: 'stream.health';
  tenant: string;
  id: string;
  status: 'error' | 'terminated';
  statusMessage: string;
  /** When it entered error; for `terminated`, the error period it ended. */
  errorSince: number;
  at: number;
}

/** A stream goes, with the rows it owns. */
export interface StreamRemove {
  kind: 'stream.remove';
  tenant: string;
  id: string;
}

/** Addresses (in their stored form) added to or removed from a stream; an add stops at `maxAddresses`. */
export interface AddressesChange {
  kind: 'addresses.add' | 'addresses.remove';
  tenant: string;
  id: string;
  family: FamilyName;
  /** The family's records carry no family name (EVM's). */
  unmarked: boolean;
  addresses: string[];
  at: number;
  maxAddresses: number;
}

/** An xpub added to a Bitcoin stream (its id chosen by the caller); the same key again keeps the one it has. */
export interface XpubAdd {
  kind: 'xpub.add';
  tenant: string;
  xpub: StoredXpub;
  maxXpubs: number;
}

export interface XpubRemove {
  kind: 'xpub.remove';
  tenant: string;
  streamId: string;
  xpubId: string;
}

/** A tenant's settings replaced; `first`: written only when the tenant has none yet (their first use). */
export interface SettingsSet {
  kind: 'settings.set';
  tenant: string;
  settings: Settings;
  first?: true;
}

/** Each kind of change to the store's tables and what applying it gives (the Auth API's: engine/auth/changes.ts). */
interface StoreKinds extends AuthKinds {
  'stream.create': [StreamCreate, StoredStream];
  'stream.update': [StreamUpdate, StoredStream];
  'stream.status': [StreamStatusSet, { stream: StoredStream; was: StreamStatus }];
  /** Undefined: the stream is gone, or its state moved on (the owner set it otherwise). */
  'stream.health': [StreamHealthSet, StoredStream | undefined];
  'stream.remove': [StreamRemove, void];
  'addresses.add': [AddressesChange, AddressesApplied];
  'addresses.remove': [AddressesChange, AddressesApplied];
  'xpub.add': [XpubAdd, { xpub: StoredXpub; added: boolean }];
  'xpub.remove': [XpubRemove, StoredXpub];
  'settings.set': [SettingsSet, Settings];
}

/** The stream as written and the addresses that changed (those it had already, or did not have, are left out). */
export interface AddressesApplied {
  stream: StoredStream;
  changed: string[];
  /** The change's number in the watch log (engine/streams/watch-log.ts); 0 when none changed. */
  seq: number;
}

/** Each kind of change and what applying it gives: API keys and tenants are written through the key store (engine/keys.ts). */
interface Kinds extends StoreKinds, KeyKinds {}

export type Change = { [K in keyof Kinds]: Kinds[K][0] }[keyof Kinds];
type StoreChange = { [K in keyof StoreKinds]: StoreKinds[K][0] }[keyof StoreKinds];
export type Applied<C extends Change> = Kinds[C['kind']][1];

/** Tables keyed `streamId/…` whose rows go with their stream when it is deleted. */
const OWNED_BY_STREAM: readonly Table[] = ['streamAddresses', 'streamXpubs', 'xpubKeys'];

/** The tenant's stream of this family; 404 for another tenant's or another family's. */
export function streamOf(kv: Kv, tenant: string, id: string, family: FamilyName, unmarked = false): StoredStream {
  const s = kv.get<StoredStream>('streams', streamKey(tenant, id));
  if (s === undefined || !ofFamily(s, family, unmarked)) throw notFound(`no stream ${id}`);
  return s;
}

const APPLY: { [K in keyof StoreKinds]: (kv: Kv, change: StoreKinds[K][0]) => StoreKinds[K][1] } = {
  ...AUTH_APPLY,
  'stream.create': (kv, { stream, maxStreams }) => {
    // Counted and written together: creates racing each other cannot pass the limit. Every family's streams count.
    const tenant = stream.tenantId;
    const held = kv.count('streams', { start: `${tenant}/`, end: `${tenant}/\uffff`, limit: maxStreams });
    if (held >= maxStreams) throw overLimit('streams', 'a tenant holds', maxStreams, 'CHAINPOST_MAX_STREAMS');
    kv.put('streams', streamKey(tenant, stream.id), stream);
    logWatchChange(kv, { id: stream.id, created: true });
    return stream;
  },
  'stream.update': (kv, { tenant, id, family, unmarked, fields, at }) => {
    // Read where it is applied: only the fields this change names change.
    const next: StoredStream = { ...streamOf(kv, tenant, id, family, unmarked), ...fields, updatedAt: at };
    // A stream listing a removed chain is reported invalid until updated; an update that fixes it clears that.
    if (next.status !== 'error' && next.status !== 'terminated') next.statusMessage = '';
    kv.put('streams', streamKey(tenant, id), next);
    return next;
  },
  'stream.status': (kv, { tenant, id, family, unmarked, status, at }) => {
    const stream = streamOf(kv, tenant, id, family, unmarked);
    ownerMaySet(stream.status, status);
    const was = stream.status;
    stream.status = status;
    stream.statusMessage = '';
    delete stream.errorSince;
    stream.updatedAt = at;
    kv.put('streams', streamKey(tenant, id), stream);
    return { stream, was };
  },
  'stream.health': (kv, { tenant, id, status, statusMessage, errorSince, at }) => {
    const stream = kv.get<StoredStream>('streams', streamKey(tenant, id));
    // The rules' own conditions: only an active stream enters error, only the same error period ends. The node that
    // decided holds it in that state already: applied there, it writes the same fields again.
    const same = stream?.errorSince === errorSince && (stream.status === status || stream.status === 'error');
    if (stream === undefined || !(same || (status === 'error' && stream.status === 'active'))) return undefined;
    Object.assign(stream, { status, statusMessage, errorSince, updatedAt: at });
    kv.put('streams', streamKey(tenant, id), stream);
    return stream;
  },
  'stream.remove': (kv, { tenant, id }) => {
    kv.remove('streams', streamKey(tenant, id));
    for (const table of OWNED_BY_STREAM) {
      for (const { key } of kv.range(table, { start: `${id}/`, end: `${id}/\uffff` })) kv.remove(table, key);
    }
  },
  'addresses.add': (kv, change) => changeAddresses(kv, change, true),
  'addresses.remove': (kv, change) => changeAddresses(kv, change, false),
  'xpub.add': (kv, { tenant, xpub, maxXpubs }) => {
    const { streamId } = xpub;
    streamOf(kv, tenant, streamId, 'bitcoin');
    // Keyed reads only (the key's entry and the stream's count): an add costs the same whatever the stream holds.
    const knownId = kv.get<string>('xpubKeys', xpubKey(streamId, xpub.xpub));
    const same = knownId === undefined ? undefined : kv.get<StoredXpub>('streamXpubs', `${streamId}/${knownId}`);
    if (same !== undefined) return { xpub: same, added: false };
    const held = kv.get<number>('xpubKeys', xpubCountKey(streamId)) ?? 0;
    if (held >= maxXpubs) throw overLimit('xpub', 'a stream holds', maxXpubs, 'CHAINPOST_MAX_XPUBS');
    kv.put('streamXpubs', `${streamId}/${xpub.id}`, xpub);
    kv.put('xpubKeys', xpubKey(streamId, xpub.xpub), xpub.id);
    kv.put('xpubKeys', xpubCountKey(streamId), held + 1);
    return { xpub, added: true };
  },
  'xpub.remove': (kv, { tenant, streamId, xpubId }) => {
    streamOf(kv, tenant, streamId, 'bitcoin');
    const key = `${streamId}/${xpubId}`;
    const x = kv.get<StoredXpub>('streamXpubs', key);
    if (x === undefined) throw notFound(`no xpub ${xpubId} on stream ${streamId}`);
    kv.remove('streamXpubs', key);
    kv.remove('xpubKeys', xpubKey(streamId, x.xpub));
    const left = (kv.get<number>('xpubKeys', xpubCountKey(streamId)) ?? 1) - 1;
    if (left > 0) kv.put('xpubKeys', xpubCountKey(streamId), left);
    else kv.remove('xpubKeys', xpubCountKey(streamId));
    return x;
  },
  'settings.set': applySettings,
};

function changeAddresses(
  kv: Kv,
  { tenant, id, family, unmarked, addresses, at, maxAddresses }: AddressesChange,
  add: boolean,
): AddressesApplied {
  const stream = streamOf(kv, tenant, id, family, unmarked);
  const changed: string[] = [];
  let n = stream.amountOfAddresses;
  for (const a of addresses) {
    const key = `${id}/${a}`;
    const has = kv.has('streamAddresses', key);
    if (add && !has) {
      if (n >= maxAddresses) throw overLimit('address', 'a stream holds', maxAddresses, 'CHAINPOST_MAX_ADDRESSES');
      kv.put('streamAddresses', key, 1);
      changed.push(a);
      n++;
    } else if (!add && has) {
      kv.remove('streamAddresses', key);
      changed.push(a);
      n--;
    }
  }
  stream.amountOfAddresses = n;
  stream.updatedAt = at;
  kv.put('streams', streamKey(tenant, id), stream);
  // Logged with the rows: what a stored watched set lays over itself (engine/streams/watch-log.ts).
  const seq = changed.length === 0 ? 0 : logWatchChange(kv, { id, add, addresses: changed });
  return { stream, changed, seq };
}

/** Applies a change to the store, with its checks; call inside a write transaction (a check that throws leaves it to be rolled back). */
export function applyChange<C extends StoreChange>(kv: Kv, change: C): Applied<C> {
  return (APPLY[change.kind] as (kv: Kv, change: C) => Applied<C>)(kv, change);
}

const isKeyChange = (change: Change): change is KeyChange => change.kind.startsWith('key.');

/** Runs once the transaction that applied a change committed; a promise: the writer's answer waits for it (an xpub's window watched). */
export type Committed = () => void | Promise<void>;

/**
 * What a node does when a change of one kind is applied, the node's own and the others' alike: called inside the
 * change's write transaction after its writes (what must commit with it: the dispatcher's queue of a removed
 * stream), from the change and what applying it gave alone (a node has no writer's state); what it returns runs
 * once that transaction committed (the watchlist, the dispatcher's timers). engine/streams/change-effects.ts
 * registers them.
 */
export type Effect<C extends Change> = (change: C, applied: Applied<C>) => Committed | void;
export type ChangeEffects = { readonly [K in keyof Kinds]?: Effect<Kinds[K][0]> };

const NOTHING: Committed = () => {};

/** One node's application of changes: a change's writes and what must commit with them, inside a write transaction
 *  the caller opened; `committed` runs once that transaction committed (on the same node). */
export interface ChangeApplier {
  applyInside<C extends Change>(change: C): { applied: Applied<C>; committed: Committed };
}

/** The applier of a node over its store and key store (none: key changes are refused), with its reactions. */
export function changeApplier(kv: Kv, keys: KeyStore | undefined, effects: ChangeEffects = {}): ChangeApplier {
  return {
    applyInside<C extends Change>(change: C) {
      let applied: Applied<C>;
      if (!isKeyChange(change)) applied = applyChange(kv, change as C & StoreChange);
      else if (keys === undefined) throw new Error(`this control plane has no key store for a ${change.kind}`);
      else applied = applyKeyChange(keys, change) as Applied<C>;
      const effect = effects[change.kind] as Effect<C> | undefined;
      return { applied, committed: effect?.(change, applied) ?? NOTHING };
    },
  };
}

/**
 * The control plane of one process: each change applied by its applier in its own LMDB write transaction, which
 * LMDB serializes (across processes too); key changes in the key store's (synchronous, as the CLI's beside a server).
 */
export class StoreControlPlane implements ControlPlane {
  /** This node's applier: what a replicated log's consumer applies the others' changes with. */
  readonly applier: ChangeApplier;

  constructor(
    private readonly kv: Kv,
    /** Where key changes are applied; none: this plane refuses them. */
    private readonly keys?: KeyStore,
    /** What this node does when a change is applied (engine/streams/change-effects.ts); none: nothing beyond the writes. */
    effects?: ChangeEffects,
  ) {
    this.applier = changeApplier(kv, keys, effects);
  }

  async write<C extends Change>(change: C): Promise<Applied<C>> {
    const apply = () => this.applier.applyInside(change);
    const { applied, committed } = isKeyChange(change) ? (this.keys ?? this.kv).transact(apply) : await this.kv.transactAsync(apply);
    await committed();
    return applied;
  }
}
