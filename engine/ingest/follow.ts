/**
 * What every chain family's follower shares: the events it announces blocks
 * with (the matcher's block-event log listens), and the status /health and
 * /metrics report (a family adds its own fields). Each family's follower is in its folder (engine/evm/,
 * engine/bitcoin/).
 */
export interface ChainEvents {
  seen(chain: string, number: number, hash: string): void;
  /** `hash`: the confirmed block's (canonical) hash. */
  confirmed(chain: string, number: number, hash: string): void;
  /** A transaction the follower's announcements were made in is durable (they can be read now). */
  committed?(chain: string): void;
  /** Blocks from `from` to `to` (inclusive) are no longer canonical. */
  reorged(chain: string, from: number, to: number): void;
  /** The lowest block whose record a listener has yet to read (pruning stops below it); undefined when none. */
  oldestUnread?(chain: string): number | undefined;
}

export interface FollowerStatus {
  chain: string;
  head: number;
  confirmed: number;
  /** The highest block the node announced, by newHeads or eth_blockNumber (−1 before the first). */
  nodeHead: number;
  /** Oldest block whose full record is still stored. */
  oldest: number;
  upstream: 'ok' | 'failing';
  /** Failed sync attempts since the start. */
  upstreamErrors: number;
  lastError?: string;
}

/** A followed chain, whatever its family. */
export interface ChainFollower {
  start(): void;
  stop(): void;
  status(): FollowerStatus;
  /** How many times the store rolled back (a reorg) since the start. */
  reorgs(): number;
}
