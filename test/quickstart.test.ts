import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { startProcess, type Started } from './kit/proc.js';
import { freePort } from './kit/free-port.js';
import { mineBlock, owner } from './kit/bitcoin-core/build.js';
import { mainnetChain } from './kit/bitcoin-core/fixtures.js';
import { startBitcoinCore, type BitcoinCore } from './kit/bitcoin-core/server.js';
import { apiCaller, BIN, tempDir, until } from './helpers.js';

/**
 * README.md's Quickstart, run as written. Each of its fenced blocks marked
 * `<!-- quickstart:KIND -->` is taken from the README:
 *   start          must be `npm start`; run as `node bin/chainpost.js serve`, what npm start runs after
 *                  its build (npm test built dist/ already; a second tsc here would rewrite dist/ under
 *                  the other test files), on a temp CHAINPOST_DATA, CHAINPOST_PORT=0 and
 *                  CHAINPOST_DEVNET_PORT=0 (8545 may be taken on this machine)
 *   placeholders   `export NAME=…` lines: the names must be exactly CHAINPOST, KEY and RECEIVER_PORT, which
 *                  this test sets instead (the server's URL, the key it printed, a free port); nothing
 *                  else in the blocks is substituted
 *   file:NAME      saved as NAME in a working directory whose node_modules is chainpost's
 *   run            run with `bash -e` in that directory, in order; must exit 0
 *   output         the receiver's lines, in order among all it printed (a block number and `0x…` stand for any)
 * The receiver keeps running in the background of its block; its output (one line per webhook) is read.
 *
 * Beyond the README's steps (they have no Bitcoin or Solana node): the server also follows the Bitcoin Core
 * stand-in, and before the transfer a Bitcoin stream and a Solana stream (whose test webhook is an empty body)
 * point at the same receiver; the Bitcoin one gets a webhook from a block mined then, paying its address (a
 * new block is delivered whatever height the server started following Bitcoin from). The transfer's webhooks
 * arriving afterwards show the receiver survived every family.
 */

const README = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
const ROOT = fileURLToPath(new URL('..', import.meta.url));

interface Block {
  kind: string;
  lang: string;
  code: string;
}

const blocks: Block[] = [...README.matchAll(/<!-- quickstart:(\S+) -->\n```(\w+)\n([\s\S]*?)\n```\n/g)].map((m) => ({
  kind: m[1]!,
  lang: m[2]!,
  code: `${m[3]!}\n`,
}));

interface Line {
  valid: boolean;
  standard: boolean;
  confirmed?: boolean;
  chainId: string;
  block: string;
  txs: string[];
}

/** A line of the README's example output as a pattern: its block number and each `0x…` stand for any. */
const shown = (line: string): RegExp =>
  new RegExp(
    `^${line
      .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
      .replace(/"block":"\d+"/, '"block":"\\d+"')
      .replaceAll('0x…', '0x[0-9a-f]{64}')}$`,
  );

/** A Bitcoin stream and a Solana stream at the receiver, then a Bitcoin block paying the watched address; answers its coinbase's txid, its height and the address. */
async function otherFamilies(
  call: ReturnType<typeof apiCaller>,
  webhookUrl: string,
  core: BitcoinCore,
): Promise<{ txid: string; height: number; payee: string }> {
  // Mined on what the server already follows: the new block is above whatever height it started from.
  const bitcoinHead = async (): Promise<number | undefined> =>
    ((await call('/health')).body.chains as Array<{ chain: string; head: number }>).find((c) => c.chain === 'bitcoin')?.head;
  expect(await until(async () => (await bitcoinHead()) === core.chain.height, 20_000, 50)).toBe(true);
  const bitcoin = await call('/streams/bitcoin', {
    method: 'PUT',
    json: { webhookUrl, description: 'quickstart receiver, Bitcoin', tag: 'quickstart-btc' },
  });
  expect(bitcoin.status, JSON.stringify(bitcoin.body)).toBe(200);
  const payee = owner('p2wpkh', 'quickstart');
  expect((await call(`/streams/bitcoin/${bitcoin.body.id}/address`, { method: 'POST', json: { address: payee.address } })).status).toBe(
    200,
  );
  const solana = await call('/streams/solana', {
    method: 'PUT',
    json: { webhookUrl, description: 'quickstart receiver, Solana', tag: 'quickstart-sol' },
  });
  expect(solana.status, JSON.stringify(solana.body)).toBe(200);
  // Its coinbase pays the watched address.
  const block = mineBlock(core.chain, [], payee.output);
  return { txid: block.transactions![0]!.getId(), height: core.chain.height, payee: payee.address };
}

it('README.md has the marked Quickstart blocks: start, placeholders, files, commands and the output', () => {
  expect(blocks.map((b) => b.kind)).toEqual([
    'start',
    'placeholders',
    'file:receiver.mjs',
    'run',
    'run',
    'file:transfer.mjs',
    'run',
    'output',
  ]);
  // Every marker is followed by its block: none was skipped by the pattern above.
  expect(README.match(/<!-- quickstart:/g)).toHaveLength(blocks.length);
  expect(blocks[0]!.code).toBe('npm start\n');
  expect([...blocks[1]!.code.matchAll(/^export (\w+)=/gm)].map((m) => m[1])).toEqual(['CHAINPOST', 'KEY', 'RECEIVER_PORT']);
});

it('runs the Quickstart: a stream on the devnet, a transfer through node access, its webhooks confirmed false then true, signatures valid; the receiver prints Bitcoin and Solana webhooks too', async () => {
  const data = tempDir();
  const core = await startBitcoinCore({ chain: mainnetChain(20) });
  const work = mkdtempSync(join(tmpdir(), 'chainpost-quickstart-'));
  symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'));
  let server: Started | undefined;
  const shells: ChildProcess[] = [];
  let out = '';
  try {
    server = await startProcess([BIN, 'serve'], {
      CHAINPOST_DATA: data,
      CHAINPOST_PORT: '0',
      CHAINPOST_DEVNET_PORT: '0',
      CHAINPOST_CHAINS: undefined,
      CHAINPOST_API_KEY: undefined,
      CHAINPOST_CONFIRMATIONS: undefined,
      CHAINPOST_DEVNET_BLOCK_TIME: undefined,
      CHAINPOST_BITCOIN_RPC: core.url,
      CHAINPOST_BITCOIN_POLL_MS: '100',
      // The Quickstart's devnet alone allows the receiver on loopback by default; with a Bitcoin node it is allowed here.
      CHAINPOST_PRIVATE_TARGETS: 'allow',
      CHAINPOST_SOLANA_RPC: undefined,
    });
    const key = /API key: (cpk_\S+)/.exec(server.output())?.[1];
    expect(key, server.output()).toBeDefined();
    const env = { ...process.env, CHAINPOST: `http://127.0.0.1:${server.port}`, KEY: key!, RECEIVER_PORT: String(await freePort()) };

    const run = (code: string): Promise<number | null> => {
      // Its own process group: a job the block leaves in the background (the receiver) is stopped with it.
      const sh = spawn('bash', ['-e', '-c', code], { cwd: work, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      shells.push(sh);
      sh.stdout!.on('data', (c: Buffer) => void (out += c.toString()));
      sh.stderr!.on('data', (c: Buffer) => void (out += c.toString()));
      return new Promise((resolve) => sh.once('exit', resolve));
    };
    const lines = () =>
      out
        .split('\n')
        .filter((l) => l.startsWith('{"valid"'))
        .map((l) => JSON.parse(l) as Line);
    for (const b of blocks.slice(2)) {
      if (b.kind === 'output') continue;
      if (b.code.includes('node transfer.mjs')) {
        const bitcoin = await otherFamilies(apiCaller(env.CHAINPOST, key!), `http://127.0.0.1:${env.RECEIVER_PORT}/webhook`, core);
        // The block's webhook (in a block, not yet confirmed) was printed: the receiver read Bitcoin's transactions.
        const printed = () => lines().find((l) => l.chainId === 'btc-mainnet');
        expect(await until(() => printed() !== undefined, 20_000, 50), out).toBe(true);
        expect(printed()).toEqual({
          valid: true,
          standard: true,
          confirmed: false,
          chainId: 'btc-mainnet',
          block: String(bitcoin.height),
          txs: [`${bitcoin.txid} ${bitcoin.payee} 50 BTC`],
        });
      }
      if (b.kind.startsWith('file:')) {
        writeFileSync(join(work, b.kind.slice('file:'.length)), b.code);
        continue;
      }
      expect(await run(b.code), `${b.code}\n${out}`).toBe(0);
      // The receiver is in the background: wait until it listens before the stream's test webhook.
      if (b.code.includes('node receiver.mjs'))
        expect(await until(() => out.includes('receiving webhooks on port'), 10_000), out).toBe(true);
    }

    const hash = /^(0x[0-9a-f]{64})$/m.exec(out)?.[1];
    expect(hash, out).toBeDefined();
    const carrying = (confirmed: boolean) => lines().find((l) => l.confirmed === confirmed && l.txs.some((t) => t.endsWith(hash!)));
    // 12 confirmations at a block a second: the confirmed webhook comes about 12 s after the first.
    expect(await until(() => carrying(true) !== undefined, 60_000, 100), out).toBe(true);
    const seen = carrying(false)!;
    expect(seen).toMatchObject({ valid: true, standard: true, chainId: '0x539' });
    expect(seen.txs).toEqual([
      `0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266 -> 0x70997970c51812dc3a010c7d01b50e0d17dc79c8 1000000000000000000 wei ${hash}`,
    ]);
    expect(carrying(true)).toEqual({ ...seen, confirmed: true });
    // The test webhook of the stream's creation came first, and every signature checked out.
    expect(lines()[0]).toMatchObject({ valid: true, standard: true, chainId: '' });
    expect(lines().every((l) => l.valid && l.standard)).toBe(true);
    // The Solana stream's test webhook, an empty body, printed as a line with no chain and no transactions.
    expect(lines()).toContainEqual({ valid: true, standard: true, chainId: '', block: '', txs: [] });
    // The transfer's webhooks came after Bitcoin's: the receiver went on.
    const printedLines = out.split('\n').filter((l) => l.startsWith('{'));
    expect(printedLines.findIndex((l) => l.includes('"btc-mainnet"'))).toBeLessThan(printedLines.findIndex((l) => l.includes(hash!)));
    expect(out).not.toContain('{"error"');
    // The README's example output, line by line, in order among what the receiver printed.
    const expected = blocks
      .find((b) => b.kind === 'output')!
      .code.trimEnd()
      .split('\n')
      .map(shown);
    expected.reduce((at, pattern) => {
      const found = printedLines.findIndex((l, i) => i >= at && pattern.test(l));
      expect(found, `${pattern}\n${out}`).toBeGreaterThanOrEqual(0);
      return found + 1;
    }, 0);
  } finally {
    for (const sh of shells) {
      try {
        process.kill(-sh.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await server?.stop('SIGTERM');
    await core.close();
    rmSync(work, { recursive: true, force: true });
    rmSync(data, { recursive: true, force: true });
  }
}, 120_000);
