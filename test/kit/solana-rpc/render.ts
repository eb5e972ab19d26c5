/**
 * getBlock's json-encoded answer as bytes, keys in the node's order (serde_json's sorted maps): the block's
 * fields, then each transaction's `{meta, transaction, version}`. Each transaction's text is rendered once and
 * kept (bench chains reuse a pool of transactions across slots), so a block's answer is a copy of pieces.
 */
import { type TxEntry } from './build.js';
import { type SlotBlock } from './chain.js';

/** What changes the text: `rewards` (false: no block rewards, meta.rewards null) and whether `version` is shown. */
export interface RenderOptions {
  rewards: boolean;
  showVersion: boolean;
}

/** A transaction's text, and where its first signature's characters end (a bench slot varies the last 5). */
interface TxText {
  bytes: Buffer;
  signatureEnd: number;
}

const rendered = new WeakMap<TxEntry, Map<string, TxText>>();

const keyOf = (o: RenderOptions): string => `${o.rewards ? 'r' : ''}${o.showVersion ? 'v' : ''}`;

/** The text of one transaction entry as the node writes it. */
export function txText(entry: TxEntry, opts: RenderOptions): string {
  const meta = opts.rewards ? entry.meta : { ...entry.meta, rewards: null };
  const version = opts.showVersion ? `,"version":${JSON.stringify(entry.version)}` : '';
  return `{"meta":${JSON.stringify(meta)},"transaction":${JSON.stringify(entry.transaction)}${version}}`;
}

function txPieces(entry: TxEntry, opts: RenderOptions): TxText {
  let byOptions = rendered.get(entry);
  if (!byOptions) rendered.set(entry, (byOptions = new Map()));
  const key = keyOf(opts);
  let t = byOptions.get(key);
  if (!t) {
    const text = txText(entry, opts);
    // The message has no "signatures" key and log text would escape the quotes, so the last match is the list.
    const at = text.lastIndexOf('"signatures":["') + '"signatures":["'.length;
    // Signatures and everything before them in the text are ASCII except log text; count bytes, not characters.
    t = { bytes: Buffer.from(text), signatureEnd: Buffer.byteLength(text.slice(0, at)) + (entry.transaction.signatures[0] ?? '').length };
    byOptions.set(key, t);
  }
  return t;
}

const BASE58 = Buffer.from('123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz');
const SALT_DIGITS = 5;

/** Writes `salt` (mod 58^5) as 5 base58 digits ending at `end`: a signature of the same length and another value. */
function writeSalt(into: Buffer, end: number, salt: number): void {
  let n = salt % 58 ** SALT_DIGITS;
  for (let i = 1; i <= SALT_DIGITS; i++) {
    into[end - i] = BASE58[n % 58]!;
    n = Math.floor(n / 58);
  }
}

/** `signature` with its last 5 base58 digits replaced by `salt`, as a bench slot serves it. */
export function saltedSignature(signature: string, salt: number): string {
  const b = Buffer.from(signature);
  writeSalt(b, b.length, salt);
  return b.toString();
}

/** The block's fields before the transaction list (the node omits `rewards` when asked for none). */
function headText(b: SlotBlock, opts: RenderOptions): string {
  const rewards = opts.rewards ? `,"rewards":${JSON.stringify(b.rewards)}` : '';
  return `{"blockHeight":${JSON.stringify(b.blockHeight)},"blockTime":${JSON.stringify(b.blockTime)},"blockhash":${JSON.stringify(b.blockhash)},"parentSlot":${b.parentSlot},"previousBlockhash":${JSON.stringify(b.previousBlockhash)}${rewards},"transactions":[`;
}

/** getBlock's result for `b` (json, transactionDetails full) as one buffer (from `into` if given): the prerendered pieces copied once. */
export function blockBytes(b: SlotBlock, opts: RenderOptions, into?: (size: number) => Buffer): Buffer {
  const head = Buffer.from(headText(b, opts));
  const txs = b.transactions.map((entry) => txPieces(entry, opts));
  const size = head.length + txs.reduce((n, t) => n + t.bytes.length, 0) + Math.max(0, txs.length - 1) + 2;
  const out = into ? into(size) : Buffer.allocUnsafe(size);
  out.set(head, 0);
  let at = head.length;
  txs.forEach((t, i) => {
    if (i > 0) out[at++] = 0x2c; // ','
    out.set(t.bytes, at);
    if (b.salt !== undefined) writeSalt(out, at + t.signatureEnd, b.salt + i);
    at += t.bytes.length;
  });
  out.write(']}', at);
  return out;
}

/** getBlock's JSON-RPC response body for `b`, as the node sends it with chainpost's parameters (no rewards, versions shown). */
export function getBlockResponse(b: SlotBlock): Buffer {
  return Buffer.concat([
    Buffer.from('{"jsonrpc":"2.0","result":'),
    blockBytes(b, { rewards: false, showVersion: true }),
    Buffer.from(',"id":1}'),
  ]);
}

/** Whether the block holds a transaction a client without maxSupportedTransactionVersion cannot get (-32015). */
export const versionedIn = (b: SlotBlock): 0 | undefined => (b.transactions.some((t) => t.version === 0) ? 0 : undefined);
