/**
 * Real mainnet blocks from test/fixtures/bitcoin, and chains built from them. Works from test/kit/ (vitest)
 * and from dist-bench/test/kit/ (benchmarks), which both reach the same fixture folder.
 */
import { existsSync, readFileSync } from 'node:fs';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { BitcoinChain, relinkBlock } from './chain.js';
import { GENESIS_HASH, PrunedHeaders } from './headers.js';

export { GENESIS_HASH };

const FOLDERS = ['../../fixtures/bitcoin/', '../../../../test/fixtures/bitcoin/'].map((p) => new URL(p, import.meta.url));

/** A fixture file's bytes (`.gz` files gunzipped, `.br` ones brotli-decompressed). */
export function fixtureBytes(path: string): Buffer {
  for (const folder of FOLDERS) {
    const url = new URL(path, folder);
    if (existsSync(url)) {
      const bytes = readFileSync(url);
      return path.endsWith('.gz') ? gunzipSync(bytes) : path.endsWith('.br') ? brotliDecompressSync(bytes) : bytes;
    }
  }
  throw new Error(`no fixture ${path} under test/fixtures/bitcoin`);
}

/** A fixture file's text. */
export const fixtureText = (path: string): string => fixtureBytes(path).toString();

/** The header fields and transactions of a getblock (verbosity 2) answer. */
interface GetblockV2 {
  version: number;
  previousblockhash?: string;
  merkleroot: string;
  time: number;
  bits: string;
  nonce: number;
  tx: Array<{ hex: string }>;
}

const le32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n >>> 0);
  return b;
};
const reversed = (hex: string): Buffer => Buffer.from(hex, 'hex').reverse();

/** Transaction count as Bitcoin's CompactSize. */
function compactSize(n: number): Buffer {
  if (n < 0xfd) return Buffer.of(n);
  const b = Buffer.alloc(n <= 0xffff ? 3 : 5);
  b[0] = n <= 0xffff ? 0xfd : 0xfe;
  if (n <= 0xffff) b.writeUInt16LE(n, 1);
  else b.writeUInt32LE(n, 1);
  return b;
}

/** The serialized block a getblock 2 answer describes (its header fields and each tx's hex). */
export function rawBlockFromGetblock(json: GetblockV2): Buffer {
  const header = [
    le32(json.version),
    reversed(json.previousblockhash ?? '0'.repeat(64)),
    reversed(json.merkleroot),
    le32(json.time),
    le32(parseInt(json.bits, 16)),
    le32(json.nonce),
  ];
  return Buffer.concat([...header, compactSize(json.tx.length), ...json.tx.map((t) => Buffer.from(t.hex, 'hex'))]);
}

/** The mainnet genesis block, rebuilt from Core's getblock answer for it. */
export function genesisBlock(): Buffer {
  return rawBlockFromGetblock(JSON.parse(fixtureText(`rpc/bitcoin-etl/getblock_${GENESIS_HASH}_2.json`)) as GetblockV2);
}

/** Mainnet blocks 1..255 in order: `{ height, hash, raw }`. */
export function earlyMainnetBlocks(): Array<{ height: number; hash: string; raw: Buffer }> {
  return fixtureText('raw-blocks/btc-mainnet-blocks-1-to-255.txt.gz')
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const [height, hash, raw] = line.split(' ');
      return { height: Number(height), hash: hash!, raw: Buffer.from(raw!, 'hex') };
    });
}

/** The large real blocks in the fixtures, by height. */
export const BIG_BLOCKS: Record<number, string> = {
  277647: '0000000000000000054a714e580b16c583701712ab91060e92dbde6eb1e052a8',
  540107: '00000000000000000021868c2cefc52a480d173c849412fe81c4e5ab806f94ab',
  574200: '0000000000000000001602407ac49862a7bca9d00f7f402db20b7be2f5de59d2',
};

/** One of BIG_BLOCKS, serialized (stored as its bytes, brotli-compressed: signatures hardly compress, and hex would double them). */
export function bigBlock(height: number): Buffer {
  const hash = BIG_BLOCKS[height];
  if (hash === undefined) throw new Error(`no raw block ${height} in the fixtures (have ${Object.keys(BIG_BLOCKS).join(', ')})`);
  return fixtureBytes(`raw-blocks/btc-mainnet-${height}-${hash}.bin.br`);
}

/** Genesis and mainnet blocks 1..`tip` (at most 255), real and linked. */
export function mainnetChain(tip = 255): BitcoinChain {
  const chain = new BitcoinChain(0);
  chain.append(genesisBlock());
  for (const b of earlyMainnetBlocks().filter((b) => b.height <= tip)) chain.append(b.raw);
  return chain;
}

/** Where a pruned node stands by default: above mainnet's block 880,000 (January 2025). */
export const PRUNED_HEIGHT = 880_000;

/**
 * A pruned node at a mainnet height, as one serving mainnet has it: the headers of every height below
 * `height` (computed when asked: getblockhash and getblockheader answer, getblock is refused as pruned),
 * then mainnet blocks 1…`blocks` (at most 255; block 170 spends block 9's coinbase) relinked from `height`
 * on, each onto the one below with the time a block later (their hashes change, their txids do not).
 * Blocks below `prunedBelow` (default `height`: none of them) have their data pruned too.
 */
export function prunedChain(opts: { height?: number; blocks?: number; prunedBelow?: number } = {}): BitcoinChain {
  const { height = PRUNED_HEIGHT, blocks = 20 } = opts;
  const below = new PrunedHeaders(height);
  const chain = new BitcoinChain(height, below);
  for (const b of earlyMainnetBlocks().filter((b) => b.height <= blocks)) {
    const parent = chain.tip?.hash ?? below.hash(height - 1);
    chain.append(relinkBlock(b.raw, parent, (chain.tip?.block.timestamp ?? below.time(height - 1)) + 600));
  }
  chain.prune(opts.prunedBelow ?? height);
  return chain;
}

/**
 * Real big blocks at consecutive heights from `start` (by default the first one's own height): the first is
 * stored unchanged, each next one relinked onto the one before (its hash changes, its txids do not), so a
 * height may be listed again. Heights below `start` are not served.
 */
export function relinkedChain(heights: number[], start = heights[0] ?? 0): BitcoinChain {
  const chain = new BitcoinChain(start);
  for (const h of heights) chain.append(chain.tip ? chain.relink(bigBlock(h), chain.tip.hash) : bigBlock(h));
  return chain;
}
