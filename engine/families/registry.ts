import type { Dispatcher } from '../delivery/dispatcher.js';
import { BlockReplay, type ReplayFamily } from '../match/block-replay.js';
import type { WatchFamilies } from '../match/ports.js';
import type { BlockStores } from '../ingest/commit.js';
import type { Kv } from '../ports.js';
import type { Watched } from '../streams/family.js';
import type { StoredStream } from '../streams/model.js';
import type { Config } from '../config/config.js';
import { NO_DERIVED } from '../match/ports.js';
import { WorkerFamilies } from './worker-registry.js';
import type { Part } from '../readiness.js';
import type { ChangeEffects } from '../streams/control-plane.js';
import type {
  BeginParts,
  FamilyEffectParts,
  Family,
  FollowParts,
  PrepareParts,
  PreparedState,
  RunTask,
  Started,
  StreamParts,
} from './family.js';

/** Every family's follow parts at once: what app/ingest.ts hands each of them. */
type Intersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;
export type FollowAll<F extends Readonly<Record<string, Family<any, any, any, any, any, any>>>> = Intersection<
  { [K in keyof F]: Parameters<F[K]['follow']>[0] }[keyof F]
>;
/** Every family's webhook parts at once: what app/server.ts hands each of them. */
export type WebhookAll<F extends Readonly<Record<string, Family<any, any, any, any, any, any>>>> = Intersection<
  { [K in keyof F]: Parameters<F[K]['webhooks']>[0] }[keyof F]
>;
/** Each family's webhook builder, by name. */
export type Webhooks<F extends Readonly<Record<string, Family<any, any, any, any, any, any>>>> = {
  [K in keyof F]: ReturnType<F[K]['webhooks']>;
};
/** Every family's ports onto the worker pool at once. */
export type FamilyPools<F extends Readonly<Record<string, Family<any, any, any, any, any, any>>>> = Intersection<
  { [K in keyof F]: ReturnType<F[K]['pool']> }[keyof F]
>;
/** The block endpoints of each family that has them, by name. */
export type Replays<F extends Readonly<Record<string, Family<any, any, any, any, any, any>>>> = {
  [K in keyof F as F[K] extends { replay(...args: any[]): unknown } ? K : never]: F[K] extends {
    replay(...args: any[]): ReplayFamily<infer S>;
  }
    ? BlockReplay<S>
    : never;
};

/** Each family's state (its `prepare`'s), by name. */
export type States<F extends Readonly<Record<string, Family<any, any, any, any, any, any>>>> = {
  [K in keyof F]: F[K] extends { prepare(...args: any[]): infer S } ? S : undefined;
};

/** A family with the adapters its hooks take (app/families.ts): handed to its `prepare`. */
export const bind = <Fa extends Family<any, any, any, any, any, any>>(
  family: Fa,
  adapters: NonNullable<Parameters<NonNullable<Fa['prepare']>>[1]>,
): Fa => ({ ...family, adapters });

/**
 * The server's chain families by name (built in app/families.ts): what the shared parts look a family up in.
 * A stored stream names its family, but for the one family whose records are unmarked (its stream family
 * says so: EVM's, stored before other families existed).
 */
export class Families<F extends Readonly<Record<string, Family<any, any, any, any, any, any>>>>
  extends WorkerFamilies
  implements WatchFamilies
{
  private readonly unmarked: Family<any, any, any, any, any, any> | undefined;

  constructor(readonly byName: F) {
    // Each family's match step and its tasks by name, as a worker knows them.
    super(Object.values(byName));
    const unmarked = Object.values(byName).filter((f) => f.streams.unmarked === true);
    if (unmarked.length > 1)
      throw new Error(`one family at most stores its streams unmarked, not ${unmarked.map((f) => f.name).join(' and ')}`);
    this.unmarked = unmarked[0];
    for (const f of Object.values(byName)) {
      // Block endpoints need both: the replay, and the request body it is matched with (else no route, silently).
      if ((f.replay === undefined) !== (f.api.blockRequest === undefined))
        throw new Error(
          `the ${f.name} family has ${f.replay === undefined ? 'a block request but no replay' : 'a replay but no block request'}`,
        );
    }
  }

  /** Every family's ports onto the worker pool, over the runner of their tasks; no two by one name, nor by a name `taken` by the pool. */
  pools(run: RunTask, taken: readonly string[] = []): FamilyPools<F> {
    const ports: Record<string, unknown> = {};
    for (const f of this.list)
      for (const [name, port] of Object.entries(f.pool(run))) {
        if (name in ports || taken.includes(name)) throw new Error(`two ports onto the worker pool are named ${name}`);
        ports[name] = port;
      }
    return ports as FamilyPools<F>;
  }

  get list(): Array<F[keyof F]> {
    return Object.values(this.byName) as Array<F[keyof F]>;
  }

  /** The family of a stored stream. */
  of(s: Pick<StoredStream, 'family' | 'id'>): F[keyof F] {
    const f = s.family === undefined ? this.unmarked : this.named(s.family);
    if (f === undefined) throw new Error(`stream ${s.id} is of no known family (${s.family ?? 'unmarked'})`);
    return f as F[keyof F];
  }

  /** Each family's stream resources, by name, built from the same parts. */
  resources(parts: StreamParts, states: States<F>): { [K in keyof F]: ReturnType<F[K]['resources']> } {
    return Object.fromEntries(this.list.map((f) => [f.name, f.resources(parts, states[f.name as keyof F])])) as {
      [K in keyof F]: ReturnType<F[K]['resources']>;
    };
  }

  /** The reactions to applied changes of each family that has them, in the registry's order (engine/streams/change-effects.ts). */
  effects(parts: FamilyEffectParts, states: States<F>): ChangeEffects[] {
    return this.list.flatMap((f) => f.effects?.(parts, states[f.name as keyof F]) ?? []);
  }

  /** Starts every family's followers, in the registry's order; what they started beside them, to close at the stop. */
  follow(parts: FollowParts & FollowAll<F>, states: States<F>): Started[] {
    return this.list.flatMap((f) => f.follow(parts, states[f.name as keyof F]) ?? []);
  }

  /** Each family's part of the commit path, by name, for a family that has followers. */
  blockStores(): BlockStores {
    return Object.fromEntries(this.list.flatMap((f) => (f.blocks === undefined ? [] : [[f.name, f.blocks]])));
  }

  /** Each family's webhook builder, by name, built from the same parts. */
  webhooks(parts: WebhookAll<F>, states: States<F>): Webhooks<F> {
    return Object.fromEntries(this.list.map((f) => [f.name, f.webhooks(parts, states[f.name as keyof F])])) as Webhooks<F>;
  }

  /** The block endpoints of each family that has them, by name: its replay over the store, with its webhook builder. */
  replays({
    kv,
    dispatcher,
    webhooks,
    parts,
    states,
  }: {
    kv: Kv;
    dispatcher: Pick<Dispatcher, 'enqueueBatch'>;
    webhooks: Webhooks<F>;
    parts: WebhookAll<F>;
    states: States<F>;
  }): Replays<F> {
    return Object.fromEntries(
      this.list.flatMap((f) =>
        f.replay === undefined
          ? []
          : [[f.name, new BlockReplay(kv, f.replay(webhooks[f.name as keyof F], parts, states[f.name as keyof F]), dispatcher)]],
      ),
    ) as Replays<F>;
  }

  /** What a stored stream of any family watches. */
  watched(s: StoredStream): Watched {
    return this.of(s).streams.watched(s);
  }

  /** Each family's state, made before its other hooks run, with the adapters bound to it. */
  prepare(parts: PrepareParts): States<F> {
    return Object.fromEntries(
      this.list.map((f) => {
        // A prepare that takes adapters gets them bound (app/families.ts), or the start fails naming the family.
        if (f.prepare !== undefined && f.prepare.length > 1 && f.adapters === undefined)
          throw new Error(`the ${f.name} family's adapters are not bound (bind it in app/families.ts)`);
        return [f.name, f.prepare?.(parts, f.adapters)];
      }),
    ) as States<F>;
  }

  /**
   * The keys the families derive from a stream (the watchlist's `derivedOf`): a stream is of one family, so
   * the first family deriving any for it has them all.
   */
  derivedOf(states: States<F>): (id: string) => Uint8Array {
    const derived = Object.values<unknown>(states).flatMap((s) =>
      (s as PreparedState | undefined)?.derived === undefined ? [] : [(s as Required<PreparedState>).derived.bind(s)],
    );
    if (derived.length <= 1) return derived[0] ?? (() => NO_DERIVED);
    return (id) => derived.map((d) => d(id)).find((keys) => keys.length > 0) ?? NO_DERIVED;
  }

  /** Starts what each family runs before the worker pool, in the registry's order; what to stop, in that order. */
  async begin(parts: BeginParts, states: States<F>): Promise<Array<{ stop(): Promise<void> }>> {
    const begun: Array<{ stop(): Promise<void> }> = [];
    try {
      for (const f of this.list) {
        const b = await f.begin?.(parts, states[f.name as keyof F]);
        if (b !== undefined) begun.push(b);
      }
    } catch (err) {
      for (const b of begun) await b.stop();
      throw err;
    }
    return begun;
  }

  /** The families' parts of the server's readiness. */
  readiness(config: Config): Part[] {
    return this.list.flatMap((f) => f.readiness?.(config) ?? []);
  }

  private named(name: string): Family<any, any, any, any, any, any> | undefined {
    return Object.hasOwn(this.byName, name) ? this.byName[name] : undefined;
  }
}
