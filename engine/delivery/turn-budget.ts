/**
 * At most `perTurn` deliveries start in one event-loop turn; streams past it start in the next turns, in the order
 * they came. A burst (a chunk of 200 webhooks committed, an outcome flush releasing each stream's next webhook)
 * would otherwise sign and send all of them in one stretch of the loop, holding requests (docs/reliability.md, Soak).
 */
export class TurnBudget {
  private used = 0;
  private resetting = false;
  private readonly later = new Map<string, Array<() => void>>();

  /**
   * At the start of each turn after one that started or deferred anything: `opened` before the deferred starts
   * (the dispatcher's streams waiting in line for a slot go first), `start` for each deferred stream while the turn
   * has room, then `drained`.
   */
  constructor(
    private readonly perTurn: number,
    private readonly start: (id: string) => Promise<void> | undefined,
    private readonly opened: () => void,
    private readonly drained: () => void,
  ) {}

  /** Whether a start may happen in this turn. Schedules nothing: only a start or a deferral opens a next turn. */
  hasRoom(): boolean {
    return this.used < this.perTurn;
  }

  /** Counts a start in this turn; false once the turn's budget is spent. */
  take(): boolean {
    this.nextTurn();
    if (!this.hasRoom()) return false;
    this.used++;
    return true;
  }

  /** The stream starts in a later turn; resolves once what it started there ended (at once if nothing started). */
  defer(id: string): Promise<void> {
    this.nextTurn();
    return new Promise((resolve) => {
      const waiters = this.later.get(id);
      if (waiters === undefined) this.later.set(id, [resolve]);
      else waiters.push(resolve);
    });
  }

  /** Streams waiting for a later turn. */
  get waiting(): number {
    return this.later.size;
  }

  private nextTurn(): void {
    if (this.resetting) return;
    this.resetting = true;
    setImmediate(() => {
      this.resetting = false;
      this.used = 0;
      this.opened();
      // In the order deferred, while the turn has room: the others wait on in place.
      for (const [id, waiters] of this.later) {
        if (this.used >= this.perTurn) break;
        this.later.delete(id);
        const done = (): void => waiters.forEach((w) => w());
        const started = this.start(id);
        if (started === undefined) done();
        else void started.then(done, done);
      }
      // Streams left waiting need no reschedule here: the loop stops only after a take(), which opened the next turn.
      this.drained();
    });
  }
}
