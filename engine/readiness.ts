/** The server's own parts, each up once started: until all are, /health answers 503 naming those still starting. */
export type Part = 'store' | 'watchlist' | 'worker pool' | 'devnet' | 'listener';

export class Readiness {
  private readonly pending: Set<Part>;

  constructor(parts: Iterable<Part>) {
    this.pending = new Set(parts);
  }

  up(part: Part): void {
    this.pending.delete(part);
  }

  /** The parts not up yet, in start order; empty once the server is ready. */
  starting(): Part[] {
    return [...this.pending];
  }
}
