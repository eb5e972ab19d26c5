import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { blockKey } from '../engine/ingest/chain-store.js';
import type { Kv } from '../engine/ports.js';
import { openStore } from '../storage/env.js';
import { cpuMs, startProcess } from '../test/kit/proc.js';
import { BIN } from './report.js';

interface Health {
  chains: Array<{ chain: string; head: number }>;
}

export interface FollowRate {
  /** Blocks (slots) per second from the first committed to the last. */
  perSec: number;
  fromListeningSeconds: number;
  /** The first head /health showed, and the last. */
  firstHead: number;
  head: number;
  /** Blocks stored from the start to the head (Solana: slots with a block). */
  blocks: number;
  /** Averages over the stored blocks, read back from the server's LMDB once it is gone. */
  recordBytes: number;
  probeBytes: number;
  /** CPU time the server used per block (main thread and workers) between the first and the last block committed, and the node's (`nodePid`). */
  serverCpuMsPerBlock: number;
  nodeCpuMsPerBlock: number;
}

/**
 * The server binary following a stand-in node: polls /health every 20 ms and notes when `chain`'s head first
 * moves (the first block committed) and when it reaches `last`. The rate is taken between those two, so the
 * server's start and its first block's fetch are left out; when the first poll already sees `last`, from the spawn
 * instead (the start then counted in: a rate too low rather than one made up). `seed` writes into the fresh store before the
 * server opens it (where to start from). Bounded: on a machine too busy to finish, the rate is taken over the
 * blocks reached.
 */
export async function serverFollows(opts: {
  env: Record<string, string>;
  chain: string;
  from: number;
  last: number;
  key: string;
  seed?: (kv: Kv) => void;
  limitMs?: number;
  nodePid?: number;
}): Promise<FollowRate> {
  const dataDir = mkdtempSync(join(tmpdir(), `chainpost-bench-${opts.chain}-`));
  try {
    if (opts.seed !== undefined) {
      const store = openStore(dataDir);
      store.transact(() => opts.seed!(store));
      await store.close();
    }
    // The start the rate is taken from when the first poll already sees every block (a short run on a fast machine):
    // the spawn, the server's own start counted in (it may commit blocks before it says it listens).
    const spawned = { head: opts.from - 1, at: performance.now(), cpu: 0, nodeCpu: cpuMs(opts.nodePid) };
    const server = await startProcess(
      [BIN, 'serve'],
      {
        CHAINPOST_DATA: dataDir,
        CHAINPOST_PORT: '0',
        CHAINPOST_API_KEY: opts.key,
        CHAINPOST_CHAINS: 'none',
        CHAINPOST_ACCESS_LOG: '0',
        ...opts.env,
      },
      30_000,
    );
    const listening = performance.now();
    let first: { head: number; at: number; cpu: number; nodeCpu: number } | undefined;
    let cpu = { server: NaN, node: NaN };
    let head = -1;
    // When /health last showed the head move: the rate ends there, not after the server's stop.
    let end = listening;
    try {
      while (head < opts.last && performance.now() < listening + (opts.limitMs ?? 120_000)) {
        await new Promise((r) => setTimeout(r, 20));
        const health = (await (await fetch(`http://127.0.0.1:${server.port}/health`)).json()) as Health;
        const now = health.chains.find((c) => c.chain === opts.chain)?.head ?? -1;
        if (now > head) {
          end = performance.now();
          cpu = { server: cpuMs(server.child.pid), node: cpuMs(opts.nodePid) };
        }
        head = now;
        if (head >= opts.from && first === undefined)
          first = head >= opts.last ? spawned : { head, at: performance.now(), cpu: cpu.server, nodeCpu: cpu.node };
      }
    } finally {
      await server.stop();
    }
    if (first === undefined || head <= first.head)
      throw new Error(`the server committed up to ${head} of ${opts.from}..${opts.last}:\n${server.output().slice(-2000)}`);
    const store = openStore(dataDir);
    let recordBytes = 0;
    let probeBytes = 0;
    let blocks = 0;
    for (let n = opts.from; n <= head; n++) {
      const record = store.getRaw('blocks', blockKey(opts.chain, n));
      if (record === undefined) continue;
      blocks++;
      recordBytes += record.length;
      probeBytes += store.getRaw('probes', blockKey(opts.chain, n))?.length ?? 0;
    }
    await store.close();
    return {
      perSec: (head - first.head) / ((end - first.at) / 1000),
      fromListeningSeconds: (performance.now() - listening) / 1000,
      firstHead: first.head,
      head,
      blocks,
      recordBytes: recordBytes / blocks,
      probeBytes: probeBytes / blocks,
      serverCpuMsPerBlock: (cpu.server - first.cpu) / (head - first.head),
      nodeCpuMsPerBlock: (cpu.node - first.nodeCpu) / (head - first.head),
    };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}
