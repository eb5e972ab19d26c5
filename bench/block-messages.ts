/**
 * bench:block-messages — what a cluster's JetStream streams hold. CHAINPOST_BLOCKS: the real fixture blocks
 * (Ethereum mainnet bundles, Bitcoin mainnet blocks) prepared as a follower prepares them, published with the
 * cluster's own publisher (bus/blocks.ts) to a real nats-server, and the stream's bytes counted after each; times the
 * blocks a chain makes a day, that is the stream's disk per chain and per copy (it keeps a day of blocks).
 * CHAINPOST_CONTROL: a node (the built binary) on the same server, written to through its API, and the log's bytes
 * counted after each kind of write (it keeps every change).
 *
 * The Bitcoin fixtures are raw blocks, without the outputs their inputs spend: each spent output is given as a
 * distinct P2WPKH output (22-byte script, the most common kind today), since the stored record and probe column keep
 * the spent output's script and address of every input.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { privateKeyToAccount } from 'viem/accounts';
import { BlockPublisher } from '../bus/blocks.js';
import { connectBus } from '../bus/connect.js';
import { BLOCKS_MAX_PAYLOAD, BLOCKS_STREAM, CONTROL_STREAM, ensureBlocksStream } from '../bus/streams.js';
import { prepareBitcoinBlock } from '../engine/bitcoin/prepared.js';
import type { ChainFamily } from '../engine/chains/registry.js';
import { prepareBlock } from '../engine/evm/prepared.js';
import type { StartState } from '../engine/ingest/chain-start.js';
import { statesAfter, type CommittedBlock } from '../engine/ingest/commit.js';
import { jsonRpcUpstream } from '../http/clients/rpc.js';
import { pack } from '../storage/codec.js';
import { BitcoinChain } from '../test/kit/bitcoin-core/chain.js';
import { BIG_BLOCKS, bigBlock } from '../test/kit/bitcoin-core/fixtures.js';
import { parseBlock } from '../test/kit/bitcoin-core/raw.js';
import { startBitcoinCore } from '../test/kit/bitcoin-core/server.js';
import { FIXTURE_BLOCKS, bundle } from '../test/kit/fixtures.js';
import { startNatsServer } from '../test/kit/nats-server.js';
import { startProcess } from '../test/kit/proc.js';
import { BIN, report, round } from './report.js';

/** Blocks a day: Ethereum's 12 s slots since the merge, Bitcoin's 10-minute target. */
const ETHEREUM_BLOCKS_PER_DAY = 7_200;
const BITCOIN_BLOCKS_PER_DAY = 144;
/** The first block after the merge: the fixtures from here on are what Ethereum's blocks look like today. */
const MERGE_BLOCK = 15_537_394;
/** The Bitcoin fixture nearest today's full blocks (3,315 transactions, 1.2 MB). */
const BITCOIN_TODAY = 574_200;
const CONFIRMATIONS = 12;
const MB = 1024 * 1024;

interface Measured {
  family: ChainFamily;
  height: number;
  transactions: number;
  /** The message's body, as the publisher sent it (bus/blocks.ts blocksMessage). */
  bodyBytes: number;
  /** What the stream's bytes grew by: body, subject, headers (format, message id) and the store's framing. */
  storedBytes: number;
}

const envelope = (result: unknown): Uint8Array => Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, result }));

/** The chain's state around a block as a follower in step with its node has it. */
function states(block: CommittedBlock): { before: StartState; after: StartState } {
  const before: StartState = { head: block.number - 1, confirmed: block.number - 1 - CONFIRMATIONS, pruned: -1 };
  return { before, after: statesAfter(before, [block], CONFIRMATIONS)[0]! };
}

/** Each Ethereum fixture bundle as the worker pool prepares it from the node's answers. */
function* ethereumBlocks(): Generator<{ block: CommittedBlock; transactions: number }> {
  for (const n of FIXTURE_BLOCKS) {
    const b = bundle(n);
    const block = prepareBlock('0x1', { block: envelope(b.block), receipts: envelope(b.receipts), traces: envelope(b.traces) }, pack);
    if (block === null) throw new Error(`fixture block ${n} did not prepare`);
    yield { block, transactions: b.receipts.length };
  }
}

/**
 * Each Bitcoin fixture block as the pool prepares it from Core's getblock 3 answer (the stand-in's, over HTTP), every
 * spent output known to the stand-in as a distinct P2WPKH output.
 */
async function* bitcoinBlocks(): AsyncGenerator<{ block: CommittedBlock; transactions: number }> {
  for (const height of Object.keys(BIG_BLOCKS).map(Number)) {
    const chain = new BitcoinChain(height);
    const raw = bigBlock(height);
    chain.append(raw);
    const txs = parseBlock(raw).tx;
    for (const t of txs) {
      if (t.isCoinbase) continue;
      for (const i of t.vin) {
        const hash = createHash('sha256').update(`${i.txid}:${i.vout}`).digest().subarray(0, 20);
        chain.knowOutput(i.txid, i.vout, {
          generated: false,
          height: height - 1,
          value: 100_000n,
          script: Buffer.concat([Buffer.of(0, 20), hash]),
        });
      }
    }
    const core = await startBitcoinCore({ chain });
    const node = jsonRpcUpstream(core.url);
    try {
      const answer = await node.callRaw('getblock', [chain.at(height)!.hash, 3]);
      const block = prepareBitcoinBlock({ block: answer });
      if (block === null || block.unresolved.length > 0) throw new Error(`fixture block ${height} did not prepare with every prevout`);
      yield { block, transactions: txs.length };
    } finally {
      await node.close();
      await core.close();
    }
  }
}

/** One kind of write through a node's API and what it added to the control log. */
interface ControlWrite {
  write: string;
  changes: number;
  bytes: number;
}

const KEY = 'cpk_bench_block_messages_0123456789';
const SIGNER = privateKeyToAccount('0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80');

/** A node on the server (the built binary), written to through its API: each kind of write, the log's growth. */
async function controlWrites(natsUrl: string, jsm: JetStreamManager): Promise<ControlWrite[]> {
  const receiver = await startProcess([fileURLToPath(new URL('./receiver-server.js', import.meta.url))], {});
  const dir = mkdtempSync(join(tmpdir(), 'chainpost-bench-control-'));
  const node = await startProcess([BIN, 'serve'], {
    CHAINPOST_NATS: natsUrl,
    CHAINPOST_CHAINS: 'none',
    CHAINPOST_DATA: dir,
    CHAINPOST_PORT: '0',
    CHAINPOST_API_KEY: KEY,
    CHAINPOST_WORKER_THREADS: '1',
    CHAINPOST_PRIVATE_TARGETS: 'allow',
    CHAINPOST_RATE_LIMIT: '0',
  });
  const call = async (method: string, path: string, json: unknown): Promise<Record<string, any>> => {
    const res = await fetch(`http://127.0.0.1:${node.port}${path}`, {
      method,
      headers: { 'x-api-key': KEY, 'content-type': 'application/json' },
      body: JSON.stringify(json),
    });
    const body = (await res.json()) as Record<string, any>;
    if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(body)}`);
    return body;
  };
  const out: ControlWrite[] = [];
  const measure = async <T>(write: string, run: () => Promise<T>): Promise<T> => {
    const was = (await jsm.streams.info(CONTROL_STREAM)).state;
    const result = await run();
    const now = (await jsm.streams.info(CONTROL_STREAM)).state;
    out.push({ write, changes: now.messages - was.messages, bytes: now.bytes - was.bytes });
    return result;
  };
  const address = (i: number): string => `0x${i.toString(16).padStart(40, '0')}`;
  try {
    const webhookUrl = `http://127.0.0.1:${receiver.port}/hook`;
    const { id } = await measure('an EVM stream created', () =>
      call('PUT', '/streams/evm', { webhookUrl, chainIds: ['0x1'], includeNativeTxs: true, description: 'bench' }),
    );
    await measure('one address added', () => call('POST', `/streams/evm/${id}/address`, { address: [address(1)] }));
    await measure('100 addresses added in one request', () =>
      call('POST', `/streams/evm/${id}/address`, { address: Array.from({ length: 100 }, (_, i) => address(1_000 + i)) }),
    );
    const request = { domain: 'defi.finance', uri: 'https://defi.finance/login', statement: 'Please confirm', timeout: 120 };
    const challenge = await measure('an Auth API challenge requested', () =>
      call('POST', '/challenge/request/evm', { ...request, chainId: 1, address: SIGNER.address }),
    );
    const signature = await SIGNER.signMessage({ message: challenge['message'] as string });
    await measure('an Auth API challenge verified', () =>
      call('POST', '/challenge/verify/evm', { message: challenge['message'], signature }),
    );
  } finally {
    await node.stop();
    await receiver.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

const nats = await startNatsServer();
const bus = await connectBus({ servers: nats.url });
const measured: Measured[] = [];
let control: ControlWrite[];
try {
  const jsm = await jetstreamManager(bus.nc);
  await ensureBlocksStream(jsm);
  const publisher = new BlockPublisher(bus);
  const streamBytes = async (): Promise<number> => (await jsm.streams.info(BLOCKS_STREAM)).state.bytes;
  const measure = async (family: ChainFamily, chain: string, block: CommittedBlock, transactions: number): Promise<void> => {
    const was = await streamBytes();
    const { seq } = await publisher.publishBlock(family, { chain, block, ...states(block) }, 1);
    const stored = await jsm.streams.getMessage(BLOCKS_STREAM, { seq });
    if (stored === null) throw new Error(`message ${seq} of ${BLOCKS_STREAM} is gone`);
    const bodyBytes = stored.data.byteLength;
    measured.push({ family, height: block.number, transactions, bodyBytes, storedBytes: (await streamBytes()) - was });
  };
  for (const { block, transactions } of ethereumBlocks()) await measure('evm', '0x1', block, transactions);
  for await (const { block, transactions } of bitcoinBlocks()) await measure('bitcoin', 'bitcoin', block, transactions);
  control = await controlWrites(nats.url, jsm);
} finally {
  await bus.close();
  await nats.close();
}

const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
const ethereumToday = mean(measured.filter((m) => m.family === 'evm' && m.height >= MERGE_BLOCK).map((m) => m.storedBytes));
const bitcoinToday = measured.find((m) => m.family === 'bitcoin' && m.height === BITCOIN_TODAY)!.storedBytes;
const largest = Math.max(...measured.map((m) => m.bodyBytes));
const figures = {
  ...Object.fromEntries(measured.map((m) => [`${m.family === 'evm' ? 'ethereum' : 'bitcoin'}${m.height}StoredBytes`, m.storedBytes])),
  ethereumBytesPerBlock: Math.round(ethereumToday),
  ethereumMbPerDay: round((ethereumToday * ETHEREUM_BLOCKS_PER_DAY) / MB, 0),
  bitcoinBytesPerBlock: bitcoinToday,
  bitcoinMbPerDay: round((bitcoinToday * BITCOIN_BLOCKS_PER_DAY) / MB, 0),
  largestBodyBytes: largest,
  ...Object.fromEntries(control.map((c, i) => [`control${i + 1}Bytes`, c.bytes])),
};
const table = [
  '| family | block | transactions | message body, bytes | stored in the stream, bytes |',
  '|---|---|---|---|---|',
  ...measured.map(
    (m) =>
      `| ${m.family} | ${m.height} | ${m.transactions.toLocaleString('en-US')} | ${m.bodyBytes.toLocaleString('en-US')} | ${m.storedBytes.toLocaleString('en-US')} |`,
  ),
  '',
  `Per chain and per copy of CHAINPOST_BLOCKS (it keeps a day): Ethereum ${figures.ethereumBytesPerBlock.toLocaleString('en-US')} bytes a block (the mean of the fixtures after the merge) × ${ETHEREUM_BLOCKS_PER_DAY.toLocaleString('en-US')} blocks = **${figures.ethereumMbPerDay.toLocaleString('en-US')} MB a day**; Bitcoin ${figures.bitcoinBytesPerBlock.toLocaleString('en-US')} bytes (block ${BITCOIN_TODAY}) × ${BITCOIN_BLOCKS_PER_DAY} = **${figures.bitcoinMbPerDay.toLocaleString('en-US')} MB a day**.`,
  '',
  '| write through a node | changes | CHAINPOST_CONTROL grew by, bytes |',
  '|---|---|---|',
  ...control.map((c) => `| ${c.write} | ${c.changes} | ${c.bytes.toLocaleString('en-US')} |`),
];
for (const line of table) console.log(line);
report(
  'block-messages',
  'npm run bench:block-messages',
  figures,
  { largestBodyBytes: `< ${BLOCKS_MAX_PAYLOAD} (the documented max_payload, 8 MB)` },
  largest < BLOCKS_MAX_PAYLOAD,
  [
    'Each fixture block prepared as the follower prepares it (record, probe column, index rows) and published with BlockPublisher to a real nats-server; "stored" is what the CHAINPOST_BLOCKS stream grew by (body, subject, headers, framing). The Bitcoin fixtures are raw blocks: each input is given a distinct P2WPKH spent output (22-byte script), as getblock 3 would show its prevout.',
    'The control log: a node (the built binary, CHAINPOST_NATS on the same server) written to through its API; controlNBytes are the rows of the second table in order.',
  ],
  table,
);
