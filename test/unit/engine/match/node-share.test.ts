import { describe, expect, it } from 'vitest';
import { ServiceClock } from '../../../../engine/clock.js';
import { NodeShare, OVER_BUDGET } from '../../../../engine/match/node-share.js';

/**
 * A chain's share of node time for trigger calls on the service clock, which moves only when the test advances
 * it: each call is a promise the test ends, and the log says when (service ms from the start) each call started.
 */
const T0 = Date.parse('2026-12-01T00:00:00Z');

function rig(opts = { msPerSecond: 100, burstMs: 1_000 }) {
  const clock = new ServiceClock({ elapsedMs: () => 0, wake: () => () => {} }, T0);
  const share = new NodeShare(clock, opts);
  const started: string[] = [];
  const ends = new Map<string, (answer: string) => void>();
  const never = new Promise<void>(() => {});
  /** A call named `name` of `tenant`: started when the share lets it, answered when the test ends it. */
  const call = (tenant: string, name: string, over: Promise<void> = never) =>
    share.run(
      tenant,
      () =>
        new Promise<string>((resolve) => {
          started.push(`${name}@${clock.now() - T0}`);
          ends.set(name, resolve);
        }),
      over,
    );
  const turn = () => new Promise((resolve) => setImmediate(resolve));
  return { clock, call, started, end: (name: string) => ends.get(name)!(name), turn };
}

describe("a chain's share of node time for trigger calls", () => {
  it('starts calls while the tenant has time; once a burst is spent, the next starts when the share has refilled what was overdrawn, and other tenants start meanwhile', async () => {
    const r = rig();
    const a1 = r.call('a', 'a1');
    await r.turn();
    // a1 runs 1.5 s: 500 ms past the burst of 1 s.
    await r.clock.advance(1_500);
    r.end('a1');
    expect(await a1).toBe('a1');
    const a2 = r.call('a', 'a2');
    const b1 = r.call('b', 'b1');
    await r.turn();
    expect(r.started).toEqual(['a1@0', 'b1@1500']);
    // 500 ms overdrawn at 100 ms a second: 5 s.
    await r.clock.advance(4_999);
    expect(r.started).toEqual(['a1@0', 'b1@1500']);
    await r.clock.advance(1);
    await r.turn();
    expect(r.started).toEqual(['a1@0', 'b1@1500', 'a2@6500']);
    r.end('a2');
    r.end('b1');
    expect([await a2, await b1]).toEqual(['a2', 'b1']);
  });

  it("counts a tenant's calls under way as they run: a call waits until one of them settled and the share has time again", async () => {
    const r = rig();
    void r.call('a', 'a1');
    void r.call('a', 'a2');
    await r.turn();
    // Two calls under way 600 ms each: 1.2 s of the 1 s burst, so a third waits.
    await r.clock.advance(600);
    const a3 = r.call('a', 'a3');
    await r.turn();
    expect(r.started).toEqual(['a1@0', 'a2@0']);
    r.end('a1');
    await r.turn();
    await r.clock.advance(100);
    r.end('a2');
    await r.turn();
    // 1.3 s taken from the 1 s burst, 10 ms refilled while a2 ran on: 290 ms overdrawn, 2.9 s at 100 ms a second.
    expect(r.started).toEqual(['a1@0', 'a2@0']);
    await r.clock.advance(2_899);
    await r.turn();
    expect(r.started).toEqual(['a1@0', 'a2@0']);
    await r.clock.advance(1);
    await r.turn();
    expect(r.started).toEqual(['a1@0', 'a2@0', 'a3@3600']);
    r.end('a3');
    expect(await a3).toBe('a3');
  });

  it('gives up a call waiting for time, or under way, once its budget runs out; one given up is charged when the node is done with it', async () => {
    const r = rig();
    let overNow!: () => void;
    const over = new Promise<void>((resolve) => (overNow = resolve));
    const a1 = r.call('a', 'a1', over);
    await r.turn();
    await r.clock.advance(2_000);
    overNow();
    expect(await a1).toBe(OVER_BUDGET);
    // a1 still runs on the node: a call of the tenant waits, and is given up with its own budget.
    let over2Now!: () => void;
    const a2 = r.call('a', 'a2', new Promise<void>((resolve) => (over2Now = resolve)));
    await r.turn();
    over2Now();
    expect(await a2).toBe(OVER_BUDGET);
    await r.clock.advance(1_000);
    r.end('a1');
    await r.turn();
    // 3 s taken from a 1 s burst (refilled to it meanwhile): 2 s overdrawn, 20 s of refill.
    const a3 = r.call('a', 'a3');
    await r.clock.advance(19_999);
    await r.turn();
    expect(r.started).toEqual(['a1@0']);
    await r.clock.advance(1);
    await r.turn();
    expect(r.started).toEqual(['a1@0', 'a3@23000']);
    r.end('a3');
    expect(await a3).toBe('a3');
  });
});
