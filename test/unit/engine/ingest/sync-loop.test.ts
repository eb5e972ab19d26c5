import { describe, expect, it } from 'vitest';
import { ServiceClock } from '../../../../engine/clock.js';
import { SyncLoop } from '../../../../engine/ingest/follow.js';
import { stillClock } from '../delivery/parts.js';
import { quietLog } from '../../../kit/quiet-log.js';

const quiet = (clock: ServiceClock) => quietLog(() => clock.now());

describe('SyncLoop and where following ends', () => {
  it('syncs on each poll until the end date, then stops: the first wake-up from then on calls end once and runs no round', async () => {
    const clock = stillClock(0);
    const rounds: number[] = [];
    let ended = 0;
    const loop = new SyncLoop(
      '0x504',
      quiet(clock),
      clock,
      50,
      async () => void rounds.push(clock.now()),
      async () => {},
      { at: 1_000, end: () => void ended++ },
    );
    loop.start();
    for (let t = 0; t < 3_000; t += 50) {
      await new Promise((r) => setImmediate(r));
      await clock.advance(50);
    }
    expect(rounds).toHaveLength(1_000 / 50);
    expect(Math.max(...rounds)).toBeLessThan(1_000);
    expect(loop.stopped).toBe(true);
    await loop.sync();
    expect(ended).toBe(1);
    expect(rounds).toHaveLength(1_000 / 50);
  });

  it('ends on a wake-up that comes while a round is running: that round finishes, no further one starts', async () => {
    const clock = stillClock(0);
    let release: () => void = () => {};
    let rounds = 0;
    let ended = 0;
    const loop = new SyncLoop(
      '0x504',
      quiet(clock),
      clock,
      600_000,
      () => (rounds++, new Promise<void>((r) => (release = r))),
      async () => {},
      { at: 1_000, end: () => void ended++ },
    );
    const first = loop.sync();
    await clock.advance(1_000);
    // A head announced past the end date, during the round: following ends now, the round does not repeat.
    await loop.sync();
    expect(ended).toBe(1);
    expect(loop.stopped).toBe(true);
    release();
    await first;
    expect(rounds).toBe(1);
  });
});
