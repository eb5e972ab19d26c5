/**
 * Ports the engine is wired to in app/ (the composition root). The clock is engine/clock.ts;
 * the key-value store is below (LMDB in storage/env.ts). A port that speaks a
 * subfolder's types lives beside them (the match workers in engine/match/ports.ts,
 * the xpub window deriver in engine/bitcoin/xpub-windows.ts): this file imports
 * no subfolder, as every subfolder imports it.
 */

/**
 * Named tables of the store besides the Data API's, whose indexes declare theirs beside their code
 * (engine/data-api/tables.ts gathers them: DeclaredTables). storage/README.md documents each key and value.
 */
export const CORE_TABLES = [
  'meta',
  'keys',
  'tenants',
  'challenges',
  'binds',
  'expiries',
  'expiryCounts',
  'profiles',
  'accounts',
  'blocks',
  'probes',
  'transfers',
  'sales',
  'canon',
  'chainState',
  'blockEvents',
  // Per chain and delivery partition: the streams whose webhook for a block event is staged (engine/match/block-events.ts).
  'matchMarks',
  'tokens',
  'streams',
  'streamAddresses',
  // Compiled watched sets kept on disk and read in place (engine/match/stored-base.ts): derived, rebuilt when absent.
  'watchedSets',
  // The change log of what streams watch, laid over a stored watched set (engine/streams/watch-log.ts).
  'watchChanges',
  'streamXpubs',
  'xpubUsed',
  'xpubKeys',
  'queue',
  'retries',
  'queueMeta',
  'history',
  'deliveryLogs',
  'rates',
  'settings',
  'stats',
  'outbox',
  // Stream alerts decided and not yet e-mailed, per delivery partition (engine/delivery/alerts.ts).
  'alerts',
  'blockHashes',
  'counts',
  'btcOutputs',
  'btcMempool',
  // Bitcoin's address indexes (engine/bitcoin/address-index.ts): transactions and unspent outputs by address, blocks by txid.
  'btcAddressTxs',
  'btcUtxos',
  'btcTxs',
] as const;
/**
 * Tables declared beside the code that owns them, by name: engine/data-api/tables.ts adds the Data API's by
 * augmenting this interface, so no list here grows with each index.
 */
export interface DeclaredTables {}
export type Table = (typeof CORE_TABLES)[number] | (keyof DeclaredTables & string);

export interface Entry<T> {
  key: string;
  value: T;
}

/** A group of changes (API keys', the Auth API's): each kind's change and what applying it gives. */
export type ChangeKinds<K> = { [N in keyof K]: [{ kind: keyof K }, unknown] };
export type ChangeOf<K extends ChangeKinds<K>> = K[keyof K][0];
export type AppliedOf<K extends ChangeKinds<K>, C extends ChangeOf<K>> = K[C['kind'] & keyof K][1];

/** Where a service writes its group's changes: the control plane (engine/streams/control-plane.ts), which writes every kind. */
export interface ChangeWriter<K extends ChangeKinds<K>> {
  write<C extends ChangeOf<K>>(change: C): Promise<AppliedOf<K, C>>;
}

/** Ordered, transactional key-value storage; keys sort as strings. Writes are durable when they return. */
export interface Kv {
  /** A value's binary fields (Uint8Array) view the store's read buffer: copy them to keep them past the next read. */
  get<T>(table: Table, key: string): T | undefined;
  /**
   * Raw bytes, stored as given (block records and probe columns are already encoded). A key given as bytes
   * is the ASCII of a printable string key (keyBytes in engine/evm/prepared.ts): the same entry.
   */
  putRaw(table: Table, key: string | Uint8Array, bytes: Uint8Array): void;
  /** Raw bytes without a copy: valid only until the next read. */
  getRaw(table: Table, key: string): Uint8Array | undefined;
  /** Whether the key exists (the value is not read). */
  has(table: Table, key: string): boolean;
  put(table: Table, key: string, value: unknown): void;
  remove(table: Table, key: string): void;
  /** Entries with start ≤ key < end in key order; with `reverse`, start ≥ key > end, in reverse order. */
  range<T>(table: Table, opts?: { start?: string; end?: string; limit?: number; reverse?: boolean }): Array<Entry<T>>;
  /** Keys of start ≤ key < end in key order, at most `limit` (values are not read): a large table read a page at a time. */
  keys(table: Table, opts: { start?: string; end?: string; limit?: number }): string[];
  /** Removes up to `limit` keys of start ≤ key < end, first ones first (values are not read); returns how many. */
  removeRange(table: Table, opts: { start: string; end: string; limit: number }): number;
  /** How many keys lie in start ≤ key < end (values are not read), counting at most `limit` when given. */
  count(table: Table, opts: { start: string; end: string; limit?: number }): number;
  /** Runs `fn` in one write transaction (nested calls join it); durable when it returns. */
  transact<T>(fn: () => T): T;
  /** Runs `fn` in a write transaction whose commit (and fsync) happens off the event loop; resolves once durable. */
  transactAsync<T>(fn: () => T): Promise<T>;
  /**
   * Runs `fn`, whose puts and removes are not written at once but handed to LMDB's write thread, which
   * writes and commits them as one atomic unit off this thread; resolves once that is durable. Reads in `fn`
   * do not see its writes. A throw in `fn` writes nothing and is thrown here; so is a nested call. For bulk writes (a follower's blocks) whose
   * B-tree work would otherwise hold this thread.
   */
  writeBehind(fn: () => void): Promise<void>;
  /**
   * Writes kept in memory over the store, read back by the overlay's own reads (the store's otherwise), and
   * written with `seal` (storage/overlay.ts): a writer that reads what it wrote works outside any transaction.
   */
  overlay(opts?: OverlayOptions): KvOverlay;
}

export interface OverlayOptions {
  /**
   * Tables the overlay's writer never reads back (the Data API's indexes: the lists each block adds under keys of its
   * own, `writtenOnly` in their declarations): their writes go to the unit and are not kept for reads, which then
   * are refused (getRaw alone reads the store's bytes, as a key's first write saves them for a reorg). The store's
   * overlay takes the declared ones unless told (an empty set: every write kept).
   */
  writeOnly?: ReadonlySet<Table>;
}

/**
 * Kv.overlay's writes: its puts and removes are kept, not written, and its reads (point and range) see them over
 * the store's. Transactions and write-behinds are refused inside it.
 */
export interface KvOverlay extends Kv {
  /**
   * Writes what was written since the last seal as one atomic unit, in a transaction off the event loop, if the store
   * then holds what `expect` says ((table, key, value), undefined for no key: checked in that transaction); the
   * overlay's reads see those writes until the unit is settled, the store's from then on. Resolves once durable:
   * true, or false when the store did not hold what was expected (nothing was written).
   */
  seal(expect?: ReadonlyArray<readonly [Table, string, unknown]>): Promise<boolean>;
  /** Drops the writes made since the last seal. */
  discard(): void;
  /** Sealed units not yet settled. */
  readonly pending: number;
  /** Writes made since the last seal. */
  readonly unsealed: number;
}

/** Outgoing webhook POSTs (undici in http/clients/webhook.ts). */
export interface Sender {
  /**
   * POSTs `body` (UTF-8 bytes, sent as they are); resolves with the status (and for another status than 200 the start
   * of the receiver's answer, as text, `answer`), or with `error` for no answer (connection,
   * timeout, an address CHAINPOST_PRIVATE_TARGETS refuses), `timedOut` when the receiver did not answer within
   * `timeoutMs`. Never rejects.
   */
  post(
    url: string,
    body: Uint8Array,
    headers: Record<string, string>,
    timeoutMs: number,
  ): Promise<{ status: number; answer?: string } | { error: string; timedOut?: true }>;
}

/** Off-chain NFT metadata documents over HTTP (undici in http/clients/metadata-fetch.ts). */
export interface MetadataFetcher {
  /**
   * GETs `url` (http or https): its body as text, or why not (too large, too slow, an address it may not
   * reach, a status other than 2xx). The adapter sets the limits. Never rejects.
   */
  get(url: string): Promise<{ body: string } | { error: string }>;
}

/**
 * Host names to addresses (the system resolver in http/clients/dns.ts; tests inject one that answers
 * what they choose). Every address the name has, in the resolver's order; rejects when it has none.
 */
export interface Resolver {
  lookup(hostname: string): Promise<ReadonlyArray<{ address: string; family: 4 | 6 }>>;
}

/** Outgoing e-mail (nodemailer in http/clients/mailer.ts). */
export interface Mailer {
  send(mail: { to: string; subject: string; text: string }): Promise<void>;
}

/** An EVM node's JSON-RPC (http/clients/rpc.ts). */
export interface Upstream {
  /** Rejects with a NodeError when the node answers with a JSON-RPC error; with any other error when it cannot be reached. */
  call<T>(method: string, params: unknown[]): Promise<T>;
  /**
   * The response body of a call as the node sent it (a JSON-RPC envelope; ingestion hands it to a worker
   * unparsed). Rejects as `call` does; a large body is not read here, so an error in one is left to the reader.
   */
  callRaw?(method: string, params: unknown[]): Promise<Uint8Array>;
  /** newHeads where the node offers a subscription; returns how to stop it. `onOpen` runs once the node accepted it, `onClose` when it ends. */
  subscribeHeads?(handlers: { onHead(number: number): void; onOpen(): void; onClose(): void }): () => void;
}

/**
 * A Solana node's slotSubscribe over its WebSocket (http/clients/solana-slots.ts): wakes the follower as a
 * slot is produced. One subscription per call; it returns how to end it. `onOpen` runs once the node
 * accepted the subscription, `onClose` once when the socket ends (or never opened): call again to reconnect.
 */
export interface SlotWake {
  subscribe(handlers: { onSlot(slot: number): void; onOpen(): void; onClose(): void }): () => void;
}

/** The node answered, with a JSON-RPC error (as opposed to not answering). */
export class NodeError extends Error {
  override name = 'NodeError';
  constructor(
    readonly code: number,
    message: string,
    /** The error object exactly as the node sent it (node access passes it on to its caller). */
    readonly sent: { code: number; message: string; data?: unknown } = { code, message },
  ) {
    super(message);
  }
}

/**
 * Blocks made ready to write off the main thread (the same piscina pool in workers/pool.ts), from a
 * family's node answers into what its follower writes (EVM: engine/evm/prepared.ts).
 */
export interface IngestPool<Answers, Prepared> {
  /** The node's answers are handed over (their bytes may be moved to another thread); null when the node has no such block yet. */
  prepare(chain: string, answers: Answers): Promise<Prepared | null>;
}
