import { describe, expect, it } from 'vitest';
import { TurnBudget } from '../../../../engine/delivery/turn-budget.js';

const nextTurn = () => new Promise((r) => setImmediate(r));

describe('the deliveries started per event-loop turn', () => {
  it('starts at most perTurn in a turn and the rest in the next turns, in the order they came', async () => {
    const started: Array<[number, string]> = [];
    let turn = 0;
    let drains = 0;
    // Asked once per deferred stream: those past a turn's room wait in place, not deferred again.
    const asked: string[] = [];
    const budget: TurnBudget = new TurnBudget(
      2,
      (id) => (asked.push(id), budget.take() ? (started.push([turn, id]), Promise.resolve()) : budget.defer(id)),
      () => {},
      () => drains++,
    );
    const kick = (id: string): Promise<void> | undefined => (budget.take() ? (started.push([turn, id]), undefined) : budget.defer(id));
    const waits = ['a', 'b', 'c', 'd', 'e'].map(kick);
    expect(started).toEqual([
      [0, 'a'],
      [0, 'b'],
    ]);
    expect(budget.waiting).toBe(3);
    turn = 1;
    await nextTurn();
    expect(started.slice(2)).toEqual([
      [1, 'c'],
      [1, 'd'],
    ]);
    expect(budget.hasRoom()).toBe(false);
    turn = 2;
    await nextTurn();
    expect(started.slice(4)).toEqual([[2, 'e']]);
    expect(budget.waiting).toBe(0);
    expect(asked).toEqual(['c', 'd', 'e']);
    // Each deferred start's promise settles once what it started ended.
    await Promise.all(waits);
    expect(drains).toBeGreaterThanOrEqual(2);
  });

  it('asks for a stream deferred twice in a turn once', async () => {
    const starts: string[] = [];
    const budget: TurnBudget = new TurnBudget(
      1,
      (id) => (starts.push(id), undefined),
      () => {},
      () => {},
    );
    expect(budget.take()).toBe(true);
    const [x, y] = [budget.defer('s'), budget.defer('s')];
    expect(budget.waiting).toBe(1);
    await Promise.all([x, y]);
    expect(starts).toEqual(['s']);
  });

  it('opens a next turn only after a start or a deferral, never for being asked whether there is room', async () => {
    const turns: string[] = [];
    const budget = new TurnBudget(
      1,
      () => undefined,
      () => turns.push('opened'),
      () => turns.push('drained'),
    );
    // A dispatcher asks while streams wait in line for a busy receiver: that alone must not keep the loop spinning.
    for (let i = 0; i < 3; i++) {
      expect(budget.hasRoom()).toBe(true);
      await nextTurn();
    }
    expect(turns).toEqual([]);
    expect(budget.take()).toBe(true);
    await nextTurn();
    await nextTurn();
    expect(turns).toEqual(['opened', 'drained']);
  });
});
