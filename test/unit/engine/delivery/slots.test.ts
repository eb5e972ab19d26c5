import { describe, expect, it } from 'vitest';
import { Slots, type SlotLimits } from '../../../../engine/delivery/slots.js';

const wide: SlotLimits = { max: 100, perOrigin: 100, perTenant: 100, unanswered: 100 };

/** Takes a slot for each [tenant, origin, stream]; answers which got one. */
const takeAll = (slots: Slots, takes: Array<[string, string, string]>): string[] =>
  takes.filter(([t, o, id]) => slots.take(t, o, id)).map(([, , id]) => id);

/** Frees one slot of `tenant` to `origin` at a time and says which stream in line takes it, until none does. */
function handOver(slots: Slots, frees: Array<[string, string]>): string[] {
  const out: string[] = [];
  for (const [tenant, origin] of frees) {
    slots.release(tenant, origin, 'answer');
    const id = slots.next();
    if (id === undefined) break;
    out.push(id);
    // The stream takes its slot as the dispatcher's kick does.
    const [t, o] = id.split('/') as [string, string];
    expect(slots.take(t, o, id)).toBe(true);
  }
  return out;
}

describe('the delivery slots', () => {
  it('hold at most `max` in all and `perOrigin` to one receiver origin, whatever the tenants', () => {
    const slots = new Slots({ ...wide, max: 3, perOrigin: 2 });
    expect(
      takeAll(slots, [
        ['a', 'o1', 'a/o1/1'],
        ['b', 'o1', 'b/o1/1'],
        ['b', 'o1', 'b/o1/2'],
        ['b', 'o2', 'b/o2/1'],
        ['c', 'o3', 'c/o3/1'],
      ]),
    ).toEqual(['a/o1/1', 'b/o1/1', 'b/o2/1']);
    expect(slots.inFlight).toBe(3);
    expect(slots.inLine).toBe(2);
  });

  it('give one tenant at most `perTenant`: another tenant still finds a slot', () => {
    const slots = new Slots({ ...wide, perTenant: 2 });
    expect(
      takeAll(slots, [
        ['a', 'o1', 'a1'],
        ['a', 'o2', 'a2'],
        ['a', 'o3', 'a3'],
        ['b', 'o1', 'b1'],
      ]),
    ).toEqual(['a1', 'a2', 'b1']);
    expect(slots.free('a', 'o4')).toBe(false);
    expect(slots.free('b', 'o4')).toBe(true);
    // A slot of another tenant freed is not one of a's.
    slots.release('b', 'o1', 'answer');
    expect(slots.next()).toBeUndefined();
    slots.release('a', 'o1', 'answer');
    expect(slots.next()).toBe('a3');
  });

  it('hand freed slots to the tenants in line in turn, not to the one that came first with most', () => {
    const slots = new Slots({ ...wide, max: 2 });
    // Two slots held; tenant a puts four streams in line, then b two, then c one.
    takeAll(slots, [
      ['x', 'x', 'x/x/1'],
      ['x', 'x', 'x/x/2'],
    ]);
    takeAll(slots, [
      ['a', 'a', 'a/a/1'],
      ['a', 'a', 'a/a/2'],
      ['a', 'a', 'a/a/3'],
      ['a', 'a', 'a/a/4'],
      ['b', 'b', 'b/b/1'],
      ['b', 'b', 'b/b/2'],
      ['c', 'c', 'c/c/1'],
    ]);
    const frees: Array<[string, string]> = [
      ['x', 'x'],
      ['x', 'x'],
      ['a', 'a'],
      ['b', 'b'],
      ['c', 'c'],
      ['a', 'a'],
      ['b', 'b'],
      ['a', 'a'],
    ];
    expect(handOver(slots, frees)).toEqual(['a/a/1', 'b/b/1', 'c/c/1', 'a/a/2', 'b/b/2', 'a/a/3', 'a/a/4']);
    expect(slots.inLine).toBe(0);
  });

  it("hand a tenant's slots to its origins in turn, each origin's streams in arrival order", () => {
    const slots = new Slots({ ...wide, perTenant: 1 });
    takeAll(slots, [
      ['t', 'busy', 't/busy/0'],
      ['t', 'o1', 't/o1/1'],
      ['t', 'o1', 't/o1/2'],
      ['t', 'o1', 't/o1/3'],
      ['t', 'o2', 't/o2/1'],
      ['t', 'o3', 't/o3/1'],
      ['t', 'o3', 't/o3/2'],
    ]);
    const frees: Array<[string, string]> = [
      ['t', 'busy'],
      ['t', 'o1'],
      ['t', 'o2'],
      ['t', 'o3'],
      ['t', 'o1'],
      ['t', 'o3'],
      ['t', 'o1'],
    ];
    expect(handOver(slots, frees)).toEqual(['t/o1/1', 't/o2/1', 't/o3/1', 't/o1/2', 't/o3/2', 't/o1/3']);
  });

  it('skip a line whose origin is full and serve the next in turn', () => {
    const slots = new Slots({ ...wide, perOrigin: 1 });
    takeAll(slots, [
      ['a', 'shared', 'a/shared/1'],
      ['b', 'b', 'b/b/1'],
      ['b', 'shared', 'b/shared/1'],
      ['b', 'b2', 'b/b2/1'],
    ]);
    // b's stream to `shared` waits while a holds its one slot; b's other origins go on.
    expect(slots.inLine).toBe(1);
    expect(slots.next()).toBeUndefined();
    slots.release('a', 'shared', 'answer');
    expect(slots.next()).toBe('b/shared/1');
  });

  it('give a tenant at most `unanswered` to origins that have not answered it, until one answers', () => {
    const slots = new Slots({ ...wide, unanswered: 2 });
    // Nothing answered yet: two of tenant t's to new origins, whichever they are; another tenant is not held back.
    expect(
      takeAll(slots, [
        ['t', 'h1', 'h1a'],
        ['t', 'h2', 'h2a'],
        ['t', 'h1', 'h1b'],
        ['t', 'ok', 'ok1'],
        ['u', 'h1', 'u1'],
      ]),
    ).toEqual(['h1a', 'h2a', 'u1']);
    expect(slots.free('t', 'ok')).toBe(false);
    // h2 answers: it is proven for t, and its slots stop counting among the unanswered.
    slots.release('t', 'h2', 'answer');
    expect(slots.free('t', 'h2')).toBe(true);
    expect(['h2x', 'h2y', 'h2z'].every((id) => slots.take('t', 'h2', id))).toBe(true);
    // One of the two unanswered slots is free again (h1a still holds the other): the line's turn, h1b before ok1.
    expect(slots.next()).toBe('h1b');
    expect(slots.take('t', 'h1', 'h1b')).toBe(true);
    expect(slots.next()).toBeUndefined();
  });

  it('count an origin among the unanswered again once an attempt gets no answer, with its attempts still in flight', () => {
    const slots = new Slots({ ...wide, unanswered: 2 });
    slots.take('t', 'o', 'first');
    slots.release('t', 'o', 'answer');
    // Proven: as many as the tenant's share.
    expect(['a', 'b', 'c', 'd'].every((id) => slots.take('t', 'o', id))).toBe(true);
    // One gets no answer within the timeout: the three still in flight now fill (and pass) the unanswered share.
    slots.release('t', 'o', 'silence');
    expect(slots.free('t', 'o')).toBe(false);
    expect(slots.free('t', 'new')).toBe(false);
    slots.release('t', 'o');
    expect(slots.free('t', 'o')).toBe(false);
    slots.release('t', 'o');
    expect(slots.free('t', 'o')).toBe(true);
    // An error (a refused connection) says nothing of the origin: still unanswered.
    slots.take('t', 'o', 'e');
    slots.release('t', 'o');
    slots.take('t', 'o', 'f');
    expect(slots.free('t', 'o')).toBe(false);
    // An answer, of any status, proves it again.
    slots.release('t', 'o', 'answer');
    expect(['g', 'h', 'i'].every((id) => slots.take('t', 'o', id))).toBe(true);
  });

  it('move a line waiting for an origin along when the origin falls silent or answers', () => {
    const slots = new Slots({ ...wide, perTenant: 2, unanswered: 1 });
    slots.take('t', 'o', 'x');
    slots.release('t', 'o', 'answer');
    // o is proven; t's share is full, so o's third waits, and so does p's first (the line of an origin never answered).
    expect(
      takeAll(slots, [
        ['t', 'o', 'o1'],
        ['t', 'o', 'o2'],
        ['t', 'o', 'o3'],
        ['t', 'p', 'p1'],
      ]),
    ).toEqual(['o1', 'o2']);
    // o falls silent with one in flight: that one fills the unanswered share, and o's line waits with p's.
    slots.release('t', 'o', 'silence');
    expect(slots.next()).toBeUndefined();
    // o answers again: its line goes back among the answering, after p's in turn.
    slots.release('t', 'o', 'answer');
    expect(slots.next()).toBe('p1');
    expect(slots.take('t', 'p', 'p1')).toBe(true);
    expect(slots.next()).toBe('o3');
  });

  it('empties every line on clear', () => {
    const slots = new Slots({ ...wide, max: 1 });
    takeAll(slots, [
      ['a', 'o', '1'],
      ['a', 'o', '2'],
      ['b', 'p', '3'],
    ]);
    slots.clear();
    expect(slots.inLine).toBe(0);
    slots.release('a', 'o', 'answer');
    expect(slots.next()).toBeUndefined();
  });
});
