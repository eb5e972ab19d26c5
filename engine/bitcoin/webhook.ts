import { EVERY } from '../match/filter-set.js';
import type { BuildWebhook } from '../match/build.js';
import type { BitcoinStreamRecord } from './stream.js';
import { bitcoinBody, type XpubMatch } from './body.js';
import { readBtcProbe } from './probe.js';
import { BtcRecordView } from './record.js';
import type { XpubWindows } from './xpub-windows.js';

/**
 * A Bitcoin stream's webhook for a block: the transactions its addresses and
 * xpubs matched (every one for allAddresses), with the xpub addresses each
 * touched. A transaction using an xpub address moves that wallet's window on,
 * and the block is looked at again with the new addresses (a wallet's next
 * address may be used in the same block); the watchlist is told to compile
 * them for the next blocks.
 */
export interface BitcoinWebhookDeps {
  /** The block's probe column (a copy), undefined when gone. */
  probe(chain: string, number: number): Uint8Array | undefined;
  windows: XpubWindows;
  /** The stream's xpub windows moved on (new addresses derived): store the indexes used and compile again. */
  grown(streamId: string): void;
}

/** A ref's transaction index (refs are kind << 24 | index). */
const txOf = (ref: number): number => ref & 0xffffff;

export function bitcoinWebhookBuilder(deps: BitcoinWebhookDeps): BuildWebhook<BitcoinStreamRecord> {
  return (block, stream, refs) => {
    const view = BtcRecordView.shared(block.bytes);
    const everything = refs.includes(EVERY);
    const txs = new Set(everything ? [] : refs.map(txOf));
    const xpubs =
      deps.windows.keysOf(stream.id).length === 0
        ? new Map<number, XpubMatch[]>()
        : xpubMatches(deps, stream.id, deps.probe(block.chain, block.number), txs);
    const txIndexes = everything ? Array.from({ length: view.txCount }, (_, i) => i) : [...txs].sort((a, b) => a - b);
    if (txIndexes.length === 0) return Promise.resolve(null);
    // A BtcBody is a plain JSON object (an interface has no index signature to say so).
    return Promise.resolve(
      bitcoinBody(view, {
        streamId: stream.id,
        tag: stream.tag,
        includeInputs: stream.includeInputs,
        includeOutputs: stream.includeOutputs,
        confirmed: block.confirmed,
        txIndexes,
        xpubsOf: (i) => xpubs.get(i) ?? [],
      }) as unknown as Record<string, unknown>,
    );
  };
}

/**
 * Per transaction of a probe column (a block's, or one mempool transaction's), the stream's xpub addresses
 * it pays or spends from; each transaction found is added to `txs`. Walks the column until the windows stop
 * moving (an address derived because of it is looked for in it too), and says so through `grown`.
 */
export function xpubMatches(
  deps: Pick<BitcoinWebhookDeps, 'windows' | 'grown'>,
  streamId: string,
  probe: Uint8Array | undefined,
  txs: Set<number>,
): Map<number, XpubMatch[]> {
  const out = new Map<number, XpubMatch[]>();
  if (probe === undefined) return out;
  const { count, keysAt, refsAt } = readBtcProbe(probe);
  const buf = Buffer.from(probe.buffer, probe.byteOffset, probe.byteLength);
  const seen = new Set<number>();
  let grown = false;
  for (let again = true; again; ) {
    again = false;
    for (let k = 0; k < count; k++) {
      if (seen.has(k)) continue;
      const d = deps.windows.lookup(streamId, buf.toString('hex', keysAt + k * 32, keysAt + k * 32 + 32));
      if (d === undefined) continue;
      seen.add(k);
      const tx = txOf(buf.readUInt32LE(refsAt + k * 4));
      txs.add(tx);
      const list = out.get(tx) ?? [];
      if (!list.some((m) => m.xpub === d.xpub && m.address === d.address)) list.push({ xpub: d.xpub, address: d.address });
      out.set(tx, list);
      if (deps.windows.markUsed(streamId, d)) again = grown = true;
    }
  }
  if (grown) deps.grown(streamId);
  return out;
}
