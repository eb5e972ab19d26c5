/**
 * Runs the stand-in Solana RPC node on its own (after `npm run build:bench`):
 *   node dist-bench/test/kit/solana-rpc/main.js [--port 0] [--blocks fixtures|bench] [--slots N] [--start S] [--skip-every K] [--no-ws] [--prerender]
 * `--blocks fixtures` (default) serves the real block of slot 100,000,000 and the getTransaction fixtures at
 * their slots, then `--slots` built slots (default 0); `--blocks bench` serves `--slots` (default 100)
 * mainnet-size slots of 3,000 transactions from slot `--start` (default 320,000,000), every `--skip-every`-th
 * slot skipped. Prints one JSON line `{"url","ws","tip"}` once listening; stops on SIGINT/SIGTERM.
 */
import { parseArgs } from 'node:util';
import { benchChain } from './bench.js';
import { mainnetChain } from './fixtures.js';
import { startSolanaRpc } from './server.js';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    blocks: { type: 'string', default: 'fixtures' },
    slots: { type: 'string' },
    start: { type: 'string' },
    'skip-every': { type: 'string', default: '0' },
    'no-ws': { type: 'boolean', default: false },
    prerender: { type: 'boolean', default: false },
  },
});

if (values.blocks !== 'fixtures' && values.blocks !== 'bench') throw new Error(`--blocks is fixtures or bench, not ${values.blocks}`);
const skipEvery = Number(values['skip-every']);
const chain =
  values.blocks === 'bench'
    ? benchChain({ slots: Number(values.slots ?? 100), skipEvery, ...(values.start === undefined ? {} : { start: Number(values.start) }) })
        .chain
    : mainnetChain();
if (values.blocks === 'fixtures') {
  for (let n = 0; n < Number(values.slots ?? 0); n++) {
    if (skipEvery > 0 && n > 0 && n % skipEvery === 0) chain.skip();
    chain.produce();
  }
}
const node = await startSolanaRpc({ chain, port: Number(values.port), ws: !values['no-ws'], prerender: values.prerender });
process.stdout.write(`${JSON.stringify({ url: node.url, ws: node.wsUrl ?? null, tip: chain.tip })}\n`);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void node.close().then(() => process.exit(0)));
