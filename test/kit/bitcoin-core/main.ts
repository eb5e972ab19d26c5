/**
 * Runs the stand-in Bitcoin Core on its own (after `npm run build:bench`):
 *   node dist-bench/test/kit/bitcoin-core/main.js [--port 18443] [--user u] [--password p]
 *     [--blocks mainnet | 574200,277647,540107] [--repeat N] [--start H] [--txindex] [--old-node] [--jsonrpc2] [--prerender 2,3]
 * `--blocks mainnet` (default) serves genesis and blocks 1..255, or with `--start H` a pruned node at height H
 * (headers below H, mainnet blocks 1..255 relinked from H on: prunedChain); a list of heights serves those
 * real big blocks relinked at consecutive heights, the list `--repeat` times over (a long chain of big blocks
 * for benchmarks), from height `--start` (default: the first one's own). `--old-node` answers like Core before v23 (no getblock 3).
 * Prints one JSON line `{"url": …}` once listening; stops on SIGINT/SIGTERM.
 */
import { parseArgs } from 'node:util';
import { mainnetChain, prunedChain, relinkedChain } from './fixtures.js';
import { startBitcoinCore } from './server.js';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    user: { type: 'string', default: 'user' },
    password: { type: 'string', default: 'pass' },
    blocks: { type: 'string', default: 'mainnet' },
    repeat: { type: 'string', default: '1' },
    start: { type: 'string' },
    txindex: { type: 'boolean', default: false },
    'old-node': { type: 'boolean', default: false },
    prerender: { type: 'string', default: '' },
    jsonrpc2: { type: 'boolean', default: false },
  },
});

const heights =
  values.blocks === 'mainnet' ? [] : Array.from({ length: Number(values.repeat) }, () => values.blocks.split(',').map(Number)).flat();
const start = values.start === undefined ? undefined : Number(values.start);
const chain =
  values.blocks !== 'mainnet'
    ? relinkedChain(heights, start)
    : start === undefined
      ? mainnetChain()
      : prunedChain({ height: start, blocks: 255 });
const core = await startBitcoinCore({
  chain,
  port: Number(values.port),
  user: values.user,
  password: values.password,
  txindex: values.txindex,
  verbosity3: !values['old-node'],
  jsonrpc2: values.jsonrpc2,
  prerender: values.prerender.split(',').filter(Boolean).map(Number),
});
process.stdout.write(`${JSON.stringify({ url: core.url, height: chain.height, tip: chain.tip?.hash })}\n`);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void core.close().then(() => process.exit(0)));
