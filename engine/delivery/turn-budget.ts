/**
 * At most `perTurn` deliveries start in one event-loop turn; streams past it start in the next turns, in the order
 * they came. A burst (a chunk of 200 webhooks committed, an outcome flush releasing each stream's next webhook)
 * would otherwise sign and send all of them in one stretch of the loop, holding requests (issue 19).
 */
export class TurnBudget {
  private used = 0;
  private resetting = false;
  private readonly later = new Map<string, Array<() => void>>();

  /** `start`: starts a stream's delivery (or defers it again); `drained`: called after each turn's deferred starts. */
  constructor(
    private readonly perTurn: number,
    private readonly start: (id: string) => Promise<void> | undefined,
    private readonly drained: () => void,
  ) {}

  /** Counts a start in this turn; false once the turn's budget is spent. */
  take(): boolean {
    this.nextTurn();
    if (this.used >= this.perTurn) return false;
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
      const due = [...this.later];
      this.later.clear();
      for (const [id, waiters] of due) {
        const done = (): void => waiters.forEach((w) => w());
        const started = this.start(id);
        if (started === undefined) done();
        else void started.then(done, done);
      }
      this.drained();
    });
  }
}
