import { describe, expect, it } from 'vitest';
import { newsFirst } from '../../../../engine/match/lanes.js';

/** Kinds as in engine/match/block-events.ts: 0 seen (a new block), 1 confirmed. */
const SEEN = 0;
const CONFIRMED = 1;
const item = (streamId: string, number: number, kind: typeof SEEN | typeof CONFIRMED) => ({ streamId, event: { number, kind } });
const order = (items: ReadonlyArray<ReturnType<typeof item>>): string[] => newsFirst(items).map((i) => `${i.streamId}${i.event.number}`);

describe('the order a round enqueues its webhooks in', () => {
  it('puts the streams whose first webhook is a new block ahead, each stream keeping its own block order', () => {
    const round = [item('a', 10, CONFIRMED), item('b', 10, CONFIRMED), item('c', 22, SEEN), item('b', 22, SEEN), item('d', 22, SEEN)];
    expect(order(round)).toEqual(['c22', 'd22', 'a10', 'b10', 'b22']);
  });

  it('keeps the webhooks of each stream together, in block order', () => {
    expect(order([item('a', 5, SEEN), item('b', 5, SEEN), item('a', 6, SEEN)])).toEqual(['a5', 'a6', 'b5']);
  });
});
