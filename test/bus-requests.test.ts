import { describe, expect, it } from 'vitest';
import { connectBus, type BusConnection } from '../bus/connect.js';
import { BusPartitionRequests, type BusPartitionRequestsParts } from '../bus/requests.js';
import { NotHere, type PartitionRequest, type PartitionRequestHandler } from '../engine/streams/partition-requests.js';
import { ApiError, notFound } from '../engine/errors.js';
import { onOwnNatsServer, type NatsServer } from './kit/nats-server.js';
import { quietLog } from './kit/quiet-log.js';

/**
 * A partition's work asked on any node and carried out by its owner, over a real nats-server (bus/requests.ts):
 * nodes in this process, each with its own NATS connection. The owner answers for the partitions it opened; an asker
 * gets the owner's answer once it applied as far as the owner wrote, the owner's ApiError as it was, and 503 with
 * Retry-After when no node answers for the partition or the bus is down.
 */

const REPLAY: PartitionRequest = { kind: 'replay', tenant: 't_1', historyId: 'h_1' };
const RETRY_AFTER_S = 3;

interface Node {
  bus: BusConnection;
  requests: BusPartitionRequests;
  /** The partitions it carries out. */
  owned: Set<number>;
  /** Each partition's position in its log, as this node's store holds it. */
  positions: Map<number, number>;
  /** The positions it was asked to wait for. */
  waited: Array<[number, number]>;
  /** The requests it carried out for others. */
  carried: Array<[number, PartitionRequest]>;
}

class Scene {
  readonly nodes: Node[] = [];
  constructor(readonly nats: NatsServer) {}

  async node(handler?: PartitionRequestHandler, parts: Partial<BusPartitionRequestsParts> = {}): Promise<Node> {
    const bus = await connectBus({ servers: this.nats.url, maxReconnectWaitMs: 100 });
    const node: Node = {
      bus,
      owned: new Set(),
      positions: new Map(),
      waited: [],
      carried: [],
      requests: undefined as unknown as BusPartitionRequests,
    };
    node.requests = new BusPartitionRequests({
      bus,
      log: quietLog(() => Date.now()),
      here: (p) => node.owned.has(p),
      position: (p) => node.positions.get(p) ?? 0,
      reached: async (p, seq) => void node.waited.push([p, seq]),
      retryAfterSeconds: RETRY_AFTER_S,
      noOwnerWaitMs: 300,
      ...parts,
    });
    node.requests.serve(async (p, request) => {
      node.carried.push([p, request]);
      return handler === undefined ? { answered: p } : handler(p, request);
    });
    this.nodes.push(node);
    return node;
  }

  /** `node` owns the partition and answers for it. */
  own(node: Node, p: number): void {
    node.owned.add(p);
    node.requests.open(p);
  }

  async close(): Promise<void> {
    for (const n of this.nodes) {
      await n.requests.stop();
      await n.bus.close();
    }
    await this.nats.close();
  }
}

const scene = (body: (s: Scene) => Promise<void>) => onOwnNatsServer((nats) => new Scene(nats), body);

/** What `ask` threw, as the API would answer it. */
const refusal = async (work: Promise<unknown>): Promise<{ status: number; message: string; headers?: Record<string, string> }> => {
  try {
    await work;
  } catch (err) {
    if (err instanceof ApiError)
      return { status: err.status, message: err.message, ...(err.headers === undefined ? {} : { headers: err.headers }) };
    throw err;
  }
  throw new Error('not refused');
};

describe('partition requests over a real nats-server', () => {
  it('carries a request out on the owner of its partition alone and answers what it answered, once the asker applied as far as the owner wrote', () =>
    scene(async (s) => {
      const [owner, other, asker] = [await s.node(), await s.node(), await s.node()];
      s.own(owner, 7);
      s.own(other, 8);
      owner.positions.set(7, 42);
      expect(await asker.requests.ask(7, REPLAY)).toEqual({ answered: 7 });
      expect(owner.carried).toEqual([[7, REPLAY]]);
      expect(other.carried).toEqual([]);
      expect(asker.waited).toEqual([[7, 42]]);
      const enqueue: PartitionRequest = { kind: 'enqueue', items: [{ streamId: 's_1', payload: { block: { number: '1' }, logs: [] } }] };
      expect(await asker.requests.ask(8, enqueue)).toEqual({ answered: 8 });
      expect(other.carried).toEqual([[8, enqueue]]);
    }));

  it('has one node carry out a request while two answer for its partition (a hand-over)', () =>
    scene(async (s) => {
      const [old, next, asker] = [await s.node(), await s.node(), await s.node()];
      s.own(old, 3);
      s.own(next, 3);
      for (let i = 0; i < 20; i++) await asker.requests.ask(3, REPLAY);
      expect(old.carried.length + next.carried.length).toBe(20);
    }));

  it('answers the owner’s ApiError with its status, message and headers', () =>
    scene(async (s) => {
      const owner = await s.node(async () => {
        throw notFound('no history record h_1');
      });
      const limited = await s.node(async () => {
        throw new ApiError(429, 'slow down', undefined, { 'retry-after': '9' });
      });
      const asker = await s.node();
      s.own(owner, 1);
      s.own(limited, 2);
      expect(await refusal(asker.requests.ask(1, REPLAY))).toEqual({ status: 404, message: 'no history record h_1' });
      expect(await refusal(asker.requests.ask(2, REPLAY))).toEqual({ status: 429, message: 'slow down', headers: { 'retry-after': '9' } });
    }));

  it('refuses with 503 and Retry-After when no node answers for the partition, or the one asked no longer owns it', () =>
    scene(async (s) => {
      const [owner, asker] = [await s.node(async (p) => Promise.reject(new NotHere(p))), await s.node()];
      const none = await refusal(asker.requests.ask(5, REPLAY));
      expect(none).toMatchObject({ status: 503, headers: { 'retry-after': String(RETRY_AFTER_S) } });
      expect(none.message).toMatch(/no node owns partition 5 now \(it is between owners\)/);
      // Subscribed, but the partition is not its own any more: the asker keeps asking for a while, then refuses.
      s.own(owner, 6);
      owner.owned.delete(6);
      expect(await refusal(asker.requests.ask(6, REPLAY))).toMatchObject({ status: 503 });
      // Subscribed and owning, but its handler says the partition is not its own (taken over meanwhile).
      owner.owned.add(6);
      expect(await refusal(asker.requests.ask(6, REPLAY))).toMatchObject({ status: 503 });
      expect(owner.carried.length).toBeGreaterThanOrEqual(2);
      // Closed: the partition went to another node, which answers.
      owner.requests.close(6);
      const next = await s.node();
      s.own(next, 6);
      expect(await asker.requests.ask(6, REPLAY)).toEqual({ answered: 6 });
    }));

  it('asks again while the partition is between owners, and is answered by the next owner within the wait', () =>
    scene(async (s) => {
      const [next, asker] = [await s.node(), await s.node(undefined, { noOwnerWaitMs: 2_000 })];
      setTimeout(() => s.own(next, 9), 300);
      expect(await asker.requests.ask(9, REPLAY)).toEqual({ answered: 9 });
    }));

  it('refuses with 503 and Retry-After at once while the bus is down, and refuses an owner that does not answer in time', () =>
    scene(async (s) => {
      let hold: () => void = () => {};
      const owner = await s.node(() => new Promise((resolve) => (hold = () => resolve('late'))));
      const asker = await s.node(undefined, { answerWithinMs: 300 });
      s.own(owner, 4);
      const slow = await refusal(asker.requests.ask(4, REPLAY));
      expect(slow).toMatchObject({ status: 503, headers: { 'retry-after': String(RETRY_AFTER_S) } });
      expect(slow.message).toMatch(/did not answer within 0.3 s: what was asked may have been carried out/);
      hold();
      await s.nats.stop('kill');
      const deadline = Date.now() + 10_000;
      while (asker.bus.up() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      const started = performance.now();
      const down = await refusal(asker.requests.ask(4, REPLAY));
      expect(performance.now() - started).toBeLessThan(100);
      expect(down).toMatchObject({ status: 503, headers: { 'retry-after': String(RETRY_AFTER_S) } });
      expect(down.message).toMatch(/the message bus is down/);
    }));
});
