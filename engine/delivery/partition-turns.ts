/** What the dispatcher is told of the partitions this node owns (a cluster node; one process owns them all). */
export interface DeliveryGate {
  /** This node owns the partition (its log caught up at takeover, not lost since). */
  owns(partition: number): boolean;
  /** Units of the partition may be committed now: owned and its log's publishes going through. */
  writable(partition: number): boolean;
}

/**
 * Which attempts of each partition may start on a cluster node, and which are under way (docs/decisions/cluster.md,
 * Part 2): none of a partition being handed over, none while its log is not writable (the streams held are told at
 * `resume`), and a hand-over waits for those under way to end.
 */
export class PartitionTurns {
  /** Partitions being handed over: no attempt of theirs starts. */
  private readonly closing = new Set<number>();
  /** Per partition, the streams whose attempt did not start because it was not writable. */
  private readonly unwritable = new Map<number, Set<string>>();
  /** Attempts under way per partition, and who waits for a partition's to end (a hand-over). */
  private readonly inFlight = new Map<number, number>();
  private readonly quiet = new Map<number, Array<() => void>>();

  /** Whether an attempt of partition `p` may start: owned, not being handed over, writable (else held until `resume`). */
  mayStart(gate: DeliveryGate, p: number, streamId: string): boolean {
    if (this.closing.has(p) || !gate.owns(p)) return false;
    if (gate.writable(p)) return true;
    let held = this.unwritable.get(p);
    if (held === undefined) this.unwritable.set(p, (held = new Set()));
    held.add(streamId);
    return false;
  }

  started(p: number): void {
    this.inFlight.set(p, (this.inFlight.get(p) ?? 0) + 1);
  }

  ended(p: number): void {
    const n = (this.inFlight.get(p) ?? 1) - 1;
    if (n > 0) {
      this.inFlight.set(p, n);
      return;
    }
    this.inFlight.delete(p);
    for (const f of this.quiet.get(p)?.splice(0) ?? []) f();
    this.quiet.delete(p);
  }

  /** No attempt of `p` starts any more; resolves once those under way ended. */
  handOver(p: number): Promise<void> {
    this.closing.add(p);
    if ((this.inFlight.get(p) ?? 0) === 0) return Promise.resolve();
    return new Promise((resolve) => {
      let waiting = this.quiet.get(p);
      if (waiting === undefined) this.quiet.set(p, (waiting = []));
      waiting.push(resolve);
    });
  }

  /** `p` adopted, or dropped: a hand-over of it is over; dropped, the streams held for it are forgotten. */
  reset(p: number, dropped: boolean): void {
    this.closing.delete(p);
    if (dropped) this.unwritable.delete(p);
  }

  /** The streams held while `p` was not writable, to start now. */
  resume(p: number): Iterable<string> {
    const held = this.unwritable.get(p);
    this.unwritable.delete(p);
    return held ?? [];
  }
}
