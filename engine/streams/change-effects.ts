import type { Dispatcher } from '../delivery/dispatcher.js';
import type { AddressesChange, ChangeEffects, Committed, Effect } from './control-plane.js';
import type { Watched } from './family.js';
import type { StoredStream } from './model.js';
import type { FollowedChains } from './unfollowed.js';

/**
 * What a node does when a configuration change is applied: every reaction, by change kind, in this one place.
 * They run where a change is applied (the control plane's applier, engine/streams/control-plane.ts), for the
 * node's own changes and, behind a replicated log, for the other nodes' alike: so each is worked out from the
 * change and what applying it gave, never from the writer's state. Key changes need none (ApiKeys' cache follows
 * the key store's version, bumped with every key write); nor do settings (read from the store at each signature).
 */

/** Told of every change to what streams watch (the matcher's watchlist, engine/match/watchlist.ts). */
export interface StreamWatch {
  /** Created or changed: the record with what matching reads (chainIds: the store's chain keys). */
  stream(s: StoredStream & Watched): void;
  removed(id: string): void;
  /**
   * Addresses in their stored form (EVM lower-case; Bitcoin bech32 lower-case, base58 as given; Solana as given);
   * `seq`: the change's number in the watch log (engine/streams/watch-log.ts).
   */
  addressesChanged(id: string, added: readonly string[], removed: readonly string[], seq?: number): void;
}

/** What one node's reactions act on (app/server.ts gives the server's). */
export interface EffectParts {
  /** Its dispatcher: told inside the change's transaction, then once it committed. */
  dispatcher: Pick<Dispatcher, 'saved' | 'recordWritten' | 'statusSet' | 'healthSet' | 'deleting'>;
  /** Its watchlist; none: nothing is matched here (unit tests, benches). */
  watch?: StreamWatch;
  /** The chains it follows: a stream on others is logged once saved. */
  followed?: FollowedChains;
  /** What a stored stream of any family watches (the registry of families). */
  watched(s: StoredStream): Watched;
}

/**
 * The node's reactions to applied changes: the streams' (its dispatcher, watchlist and followed chains), then those
 * each family contributes (the Bitcoin family's xpub windows), each kind's in that order.
 */
export function changeEffects(
  { dispatcher, watch, followed, watched }: EffectParts,
  families: readonly ChangeEffects[] = [],
): ChangeEffects {
  const saved = (s: StoredStream): Committed => {
    const delivery = dispatcher.saved(s);
    return () => {
      delivery();
      const w = watched(s);
      watch?.stream({ ...s, ...w });
      followed?.saved(s.id, w.chainIds, s.updatedAt);
    };
  };
  const addresses =
    (add: boolean): Effect<AddressesChange> =>
    ({ id }, { changed, seq }) => {
      const delivery = dispatcher.recordWritten(id);
      return () => {
        delivery();
        watch?.addressesChanged(id, add ? changed : [], add ? [] : changed, seq);
      };
    };
  const streams: ChangeEffects = {
    'stream.create': (_change, stream) => saved(stream),
    'stream.update': (_change, stream) => saved(stream),
    'stream.status': ({ status }, { stream, was }) => dispatcher.statusSet(stream, status, was),
    'stream.health': (_change, stream) => (stream === undefined ? undefined : dispatcher.healthSet(stream)),
    'stream.remove': ({ id }) => {
      const delivery = dispatcher.deleting(id);
      return () => {
        delivery();
        watch?.removed(id);
      };
    },
    'addresses.add': addresses(true),
    'addresses.remove': addresses(false),
  };
  return combined([streams, ...families]);
}

/** Several parts' reactions as one: each kind's inside the transaction in order, and what they return after it in order. */
export function combined(all: readonly ChangeEffects[]): ChangeEffects {
  const out: Record<string, Effect<any>> = {};
  const kinds = new Set(all.flatMap((effects) => Object.keys(effects)));
  for (const kind of kinds) {
    const each = all.flatMap((effects) => (effects as Record<string, Effect<any> | undefined>)[kind] ?? []);
    out[kind] = (change, applied) => inOrder(each.map((effect) => effect(change, applied)).filter((c): c is Committed => c !== undefined));
  }
  return out as ChangeEffects;
}

/** Runs each in turn once the previous one is done, synchronously for as long as none returns a promise. */
const inOrder =
  (list: readonly Committed[]): Committed =>
  () =>
    list.reduce<void | Promise<void>>((before, next) => (before instanceof Promise ? before.then(next) : next()), undefined);
