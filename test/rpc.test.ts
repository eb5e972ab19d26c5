import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPublicClient, encodeFunctionData, http, parseEther, parseGwei, type TransactionReceipt } from 'viem';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { freePort } from './kit/free-port.js';
import { DEV_ACCOUNTS, deploy, mined, publicClient, walletClient, write, type Deployed } from './contracts.js';
import { advance, startBinary, startChainpost, stopAndClean, until, type Running } from './helpers.js';
import { nodeProxy, type NodeProxy } from './node-proxy.js';
import { checkAnswer } from './openapi-check.js';
import { A0, A1, A2, ERC20_ABI as ERC20 } from './streams-harness.js';
import { TRANSFER, TRANSFER_SINGLE } from '../engine/evm/store.js';

/**
 * Node access over real HTTP: the server binary follows a real anvil (through
 * a proxy that counts what reaches the node), and every answer is checked
 * against anvil's own answer to the same call. Which path served a call (the
 * store, the node, the cache, a call in flight) is read from the server's
 * chainpost_rpc_calls_total counter, and what reached the node from the proxy.
 */
const APPROVAL = '0x8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925';
const pad = (a: string): string => `0x${a.slice(2).toLowerCase().padStart(64, '0')}`;
const hex = (n: number | bigint): string => `0x${n.toString(16)}`;

/** A contract that loops until its gas runs out (JUMPDEST PUSH1 0 JUMP), put at LOOPER by a state override. */
const LOOPER = '0x00000000000000000000000000000000000100aa';
const LOOP_OVERRIDE = { [LOOPER]: { code: '0x5b600056' } };
/** Where the embedded devnet has the same code for real (anvil_setCode). */
const LOOPER_DEPLOYED = '0x00000000000000000000000000000000000100bb';
/** anvil's block gas limit. */
const BLOCK_GAS = 30_000_000n;
/** A million times a block's gas: looping, minutes of a node's time. */
const HUGE_GAS = '0xe8d4a51000';

/** Polling at the default interval: both servers hear anvil's new heads (caughtUp checks the subscription). */
const ENV = { CHAINPOST_POLL_MS: '250', CHAINPOST_CONFIRMATIONS: '0x539=2', CHAINPOST_RATE_LIMIT: '0', CHAINPOST_ACCESS_LOG: '0' };

interface Reply {
  status: number;
  body: any;
  text: string;
  headers: Headers;
}

async function post(url: string, body: unknown): Promise<Reply> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  const parsed = text === '' ? undefined : JSON.parse(text);
  // Every answer against the server's OpenAPI document, as the shared caller checks; a notification's empty body has no schema.
  const { origin, pathname } = new URL(url);
  if (text !== '') await checkAnswer(origin, 'POST', pathname, res.status, res.headers.get('content-type'), parsed);
  return { status: res.status, body: parsed, text, headers: res.headers };
}
const call = (method: string, params: unknown[] = [], id: number | string = 1) => ({ jsonrpc: '2.0', id, method, params });
const rpcUrl = (s: Running, chain = 'devnet', key = s.key): string => `${s.url}/rpc/${chain}/${key}`;

/** The server's chainpost_rpc_calls_total for 0x539, as `method/served` → count. */
async function counted(s: Running): Promise<Map<string, number>> {
  const text = (await s.call('/metrics')).body as string;
  const out = new Map<string, number>();
  for (const m of text.matchAll(/^chainpost_rpc_calls_total\{chain="0x539",method="([^"]+)",served="([^"]+)"\} (\d+)$/gm))
    out.set(`${m[1]}/${m[2]}`, Number(m[3]));
  return out;
}
/** Answered here, from the store or from what it answered before (the cache): not by the node. */
const LOCAL = expect.toSatisfy((d: Record<string, number>) => JSON.stringify(d) === '{"store":1}' || JSON.stringify(d) === '{"cache":1}');
/** How the calls of `method` between two readings were served. */
function servedBetween(before: Map<string, number>, after: Map<string, number>, method: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of after) {
    const [m, how] = k.split('/') as [string, string];
    const d = v - (before.get(k) ?? 0);
    if (m === method && d > 0) out[how] = d;
  }
  return out;
}

describe('node access (POST /rpc/:chain/:apiKey)', () => {
  let anvil: Anvil;
  let proxy: NodeProxy;
  /** Follows anvil through the proxy, keeps every block; also serves node access on a second port. */
  let s: Running;
  /** Follows anvil directly and keeps one block: what it answers about older blocks comes from the node. Its calls get at most 1,000,000 gas. */
  let p: Running;
  let rpcPort: number;
  let token: Deployed;
  let nft: Deployed;
  let multi: Deployed;
  let emitter: Deployed;
  /** A block of four transactions with different tips (eth_feeHistory rewards). */
  let mixedBlock: number;
  const receipts: TransactionReceipt[] = [];

  const anvilAnswer = (body: unknown): Promise<Reply> => post(anvil.url, body);
  const head = async (): Promise<number> => Number(await publicClient(anvil.url).getBlockNumber({ cacheTime: 0 }));
  const mine = (n: number) => anvilAnswer(call('anvil_mine', [hex(n)]));
  /** Until the server holds anvil's head and hears its new heads. */
  const caughtUp = async (srv: Running): Promise<void> => {
    const target = await head();
    const ok = await until(async () => {
      const chain = (await srv.call('/health')).body.chains[0];
      return chain.head === target && chain.subscription === true;
    }, 10_000);
    expect(ok, `server at anvil's head ${target}: ${JSON.stringify((await srv.call('/health')).body.chains)}`).toBe(true);
  };
  /** Until the server no longer holds block `n` (pruning runs after each catch-up). */
  const prunedPast = async (srv: Running, n: number): Promise<void> => {
    // Pruning waits for the matcher and the Data API's indexes to have read the block: slower on a busy machine.
    const ok = await until(async () => (await srv.call('/health')).body.chains[0].oldest > n, 30_000);
    expect(
      ok,
      `block ${n} pruned: ${JSON.stringify((await srv.call('/health')).body.chains)}\n${srv.output().split('\n').slice(-40).join('\n')}`,
    ).toBe(true);
  };
  /** Calls `method` on the server and on anvil: the same answer, served as `how` (one call). */
  const sameAsAnvil = async (method: string, params: unknown[], how: string, srv: Running = s): Promise<any> => {
    const before = await counted(srv);
    const ours = await post(rpcUrl(srv), call(method, params, 7));
    const after = await counted(srv);
    const theirs = await anvilAnswer(call(method, params, 7));
    expect(ours.status, ours.text).toBe(200);
    expect(ours.body).toEqual(theirs.body);
    expect(servedBetween(before, after, method), `${method} ${JSON.stringify(params)}`).toEqual({ [how]: 1 });
    return ours.body.result;
  };

  beforeAll(async () => {
    anvil = await startAnvil();
    proxy = await nodeProxy(anvil.url);
    rpcPort = await freePort();
    // s starts at block 0 (CHAINPOST_START_BLOCKS): by default a chain new to the store starts at the node's head
    // when the follower first syncs, which on a busy machine came after the deploys below had mined blocks; s then
    // held none from block 0 and answered "earliest" and ranges from 0 by the node.
    [s, p] = await Promise.all([
      startBinary({
        ...ENV,
        CHAINPOST_CHAINS: `0x539=${proxy.url}`,
        CHAINPOST_START_BLOCKS: '0x539=0',
        CHAINPOST_RPC_PORT: String(rpcPort),
      }),
      startBinary({ ...ENV, CHAINPOST_CHAINS: `0x539=${anvil.url}`, CHAINPOST_RETENTION_BLOCKS: '1', CHAINPOST_RPC_GAS_CAP: '1000000' }),
    ]);
    const send = async (c: Deployed, functionName: string, args: readonly unknown[], account = DEV_ACCOUNTS[0]) => {
      receipts.push(await write(anvil.url, { address: c.address, abi: c.abi, functionName, args, account }));
    };
    token = await deploy(anvil.url, 'TestToken', ['Test Token', 'TST', 18, parseEther('1000')]);
    nft = await deploy(anvil.url, 'TestNFT', ['Test NFT', 'TNFT']);
    multi = await deploy(anvil.url, 'TestMulti');
    emitter = await deploy(anvil.url, 'TestEmitter');
    await send(token, 'transfer', [A1, 100n]);
    await send(token, 'transfer', [A2, 50n]);
    await send(token, 'approve', [A1, 10n]);
    await send(token, 'transfer', [A0, 7n], DEV_ACCOUNTS[1]);
    await send(nft, 'mint', [A0, 1n]);
    await send(nft, 'transferFrom', [A0, A1, 1n]);
    await send(multi, 'mint', [A1, 7n, 5n]);
    await send(multi, 'mintBatch', [A2, [1n, 2n], [3n, 4n]]);
    await send(emitter, 'emitMany', [3n]);

    // One block of four transactions tipping differently (one of them legacy), for eth_feeHistory's rewards.
    await anvilAnswer(call('evm_setAutomine', [false]));
    const [w0, w1, w2] = await Promise.all(DEV_ACCOUNTS.map((a) => walletClient(anvil.url, a)));
    const pending = [
      await w0!.writeContract({
        address: token.address,
        abi: token.abi,
        functionName: 'transfer',
        args: [A2, 3n],
        maxPriorityFeePerGas: parseGwei('3'),
        maxFeePerGas: parseGwei('20'),
        gas: 100_000n,
      }),
      await w1!.sendTransaction({ to: A2, value: 1n, maxPriorityFeePerGas: parseGwei('1'), maxFeePerGas: parseGwei('20'), gas: 21_000n }),
      await w2!.writeContract({
        address: multi.address,
        abi: multi.abi,
        functionName: 'mint',
        args: [A2, 9n, 1n],
        maxPriorityFeePerGas: parseGwei('2'),
        maxFeePerGas: parseGwei('20'),
        gas: 200_000n,
      }),
      await w0!.sendTransaction({
        to: A1,
        value: 2n,
        gasPrice: parseGwei('5'),
        gas: 21_000n,
        type: 'legacy',
        nonce: await publicClient(anvil.url).getTransactionCount({ address: A0, blockTag: 'pending' }),
      }),
    ];
    await mine(1);
    await anvilAnswer(call('evm_setAutomine', [true]));
    for (const h of pending) receipts.push(await mined(anvil.url, h));
    mixedBlock = Number(receipts.at(-1)!.blockNumber);
    expect(new Set(receipts.slice(-4).map((r) => r.blockNumber)).size).toBe(1);
    await mine(3);
    await Promise.all([caughtUp(s), caughtUp(p)]);
    await prunedPast(p, mixedBlock);
  }, 120_000);

  afterAll(async () => {
    await stopAndClean(s);
    await stopAndClean(p);
    await proxy?.close();
    await anvil?.stop();
  });

  describe('eth_getLogs', () => {
    const filters = (): Array<[string, Record<string, unknown>]> => [
      ['every log', { fromBlock: 'earliest', toBlock: 'latest' }],
      ['one address', { fromBlock: '0x0', address: token.address }],
      ['addresses, checksummed and lower case', { fromBlock: '0x0', address: [nft.address, multi.address.toLowerCase()] }],
      ['topic0', { fromBlock: '0x0', topics: [TRANSFER] }],
      ['topic0 OR', { fromBlock: '0x0', topics: [[TRANSFER, APPROVAL]] }],
      ['a sender', { fromBlock: '0x0', topics: [TRANSFER, pad(A0)] }],
      ['a receiver, wildcard before it', { fromBlock: '0x0', topics: [TRANSFER, null, pad(A1)] }],
      ['a wildcard topic0, then an address', { fromBlock: '0x0', topics: [null, pad(A0)] }],
      ['trailing wildcards beyond ERC-20 Transfer topics', { fromBlock: '0x0', topics: [TRANSFER, null, null, null] }],
      ['empty position lists and addresses', { fromBlock: '0x0', address: [], topics: [[], null] }],
      [
        'address and topics',
        {
          fromBlock: '0x1',
          toBlock: 'latest',
          address: [token.address, multi.address],
          topics: [[TRANSFER, TRANSFER_SINGLE], null, [pad(A1), pad(A2)]],
        },
      ],
      ['no match', { fromBlock: '0x0', address: '0x000000000000000000000000000000000000dead' }],
      ['a range in hex', { fromBlock: hex(Number(receipts[0]!.blockNumber)), toBlock: hex(Number(receipts[3]!.blockNumber)) }],
      ['the default range (latest)', {}],
    ];

    it('answers every filter from the store, as anvil does', async () => {
      const nonEmpty: string[] = [];
      for (const [name, f] of filters()) {
        const logs = await sameAsAnvil('eth_getLogs', [f], 'store');
        if (logs.length > 0) nonEmpty.push(name);
      }
      // The filters are not vacuous: all but the last two find logs.
      expect(nonEmpty).toEqual(
        filters()
          .map(([n]) => n)
          .filter((n) => n !== 'no match' && n !== 'the default range (latest)'),
      );
      // A log as the node shows it, every field.
      const [first] = await sameAsAnvil('eth_getLogs', [{ blockHash: receipts[0]!.blockHash }], 'store');
      expect(Object.keys(first).sort()).toEqual([
        'address',
        'blockHash',
        'blockNumber',
        'blockTimestamp',
        'data',
        'logIndex',
        'removed',
        'topics',
        'transactionHash',
        'transactionIndex',
      ]);
    });

    it('answers by block hash from the store; an unknown hash goes to the node', async () => {
      const logs = await sameAsAnvil('eth_getLogs', [{ blockHash: receipts.at(-1)!.blockHash, topics: [TRANSFER_SINGLE] }], 'store');
      expect(logs).toHaveLength(1);
      const unknown = await post(rpcUrl(s), call('eth_getLogs', [{ blockHash: `0x${'ab'.repeat(32)}` }]));
      expect(unknown.body).toEqual((await anvilAnswer(call('eth_getLogs', [{ blockHash: `0x${'ab'.repeat(32)}` }]))).body);
      expect(unknown.body.error).toBeDefined();
    });

    it('goes to the node for what the store does not hold or cannot place: pruned blocks, safe, pending', async () => {
      const f = { fromBlock: '0x1', toBlock: hex(mixedBlock), address: [token.address, multi.address] };
      const logs = await sameAsAnvil('eth_getLogs', [f], 'node', p);
      expect(logs.length).toBeGreaterThan(5);
      await sameAsAnvil('eth_getLogs', [{ fromBlock: '0x0', toBlock: 'safe' }], 'node');
      await sameAsAnvil('eth_getLogs', [{ fromBlock: 'pending', toBlock: 'pending' }], 'node');
      // Beyond the head: anvil stops at its head.
      await sameAsAnvil('eth_getLogs', [{ fromBlock: '0x1', toBlock: '0x270f' }], 'node');
    });

    it('"latest" is the node\'s latest: while the store lags behind the node, the call goes to the node', async () => {
      const release = proxy.hold('eth_getBlockReceipts');
      let transfer: TransactionReceipt;
      try {
        const asked = proxy.calls('eth_getBlockReceipts');
        transfer = await write(anvil.url, { address: token.address, abi: token.abi, functionName: 'transfer', args: [A2, 1n] });
        // The follower heard of the block and is stuck fetching it.
        expect(await until(() => proxy.calls('eth_getBlockReceipts') > asked, 5_000)).toBe(true);
        const logs = await sameAsAnvil('eth_getLogs', [{ fromBlock: hex(mixedBlock), address: token.address }], 'node');
        expect(logs.at(-1).transactionHash).toBe(transfer.transactionHash);
      } finally {
        release();
      }
      await caughtUp(s);
      const logs = await sameAsAnvil('eth_getLogs', [{ fromBlock: hex(mixedBlock), address: token.address }], 'store');
      expect(logs.at(-1).transactionHash).toBe(transfer.transactionHash);
    });

    it('after a reorg, answers for the new blocks, not from what it read of the replaced ones', async () => {
      await caughtUp(s);
      const top = await head();
      const logs = [{ fromBlock: hex(top - 2), toBlock: 'latest', address: token.address }];
      // Read (and so keep in memory) the blocks about to be replaced.
      await sameAsAnvil('eth_getLogs', logs, 'store');
      await sameAsAnvil('eth_getBlockReceipts', [hex(top - 1)], 'store');
      const replaced = (await anvilAnswer(call('eth_getBlockByNumber', [hex(top - 1), false]))).body.result.hash;
      const data = encodeFunctionData({ abi: token.abi, functionName: 'transfer', args: [A2, 9n] });
      expect((await anvilAnswer(call('anvil_reorg', [2, [[{ from: A0, to: token.address, data }, 0]]]))).body.error).toBeUndefined();
      const now = (await anvilAnswer(call('eth_getBlockByNumber', [hex(top - 1), false]))).body.result.hash;
      expect(now).not.toBe(replaced);
      // The follower rolls back and takes the new branch.
      const taken = await until(
        async () => (await post(rpcUrl(s), call('eth_getBlockReceipts', [hex(top - 1)]))).body.result?.[0]?.blockHash === now,
        10_000,
      );
      expect(taken).toBe(true);
      // The receipts above may come from the node while the new branch is being committed (asynchronously):
      // wait until the store holds it up to its head, where `latest` is the store's to answer.
      const held = await until(async () => {
        const before = await counted(s);
        await post(rpcUrl(s), call('eth_getLogs', logs));
        return servedBetween(before, await counted(s), 'eth_getLogs')['store'] === 1;
      }, 10_000);
      expect(held).toBe(true);
      const after = await sameAsAnvil('eth_getLogs', logs, 'store');
      expect(after.map((l: { blockHash: string }) => l.blockHash)).toContain(now);
      await sameAsAnvil('eth_getBlockReceipts', [hex(top - 1)], 'store');
      // The replaced block is no longer canonical: its hash goes to the node.
      await sameAsAnvil('eth_getLogs', [{ blockHash: replaced }], 'node');
    });

    it('refuses a range over 10,000 blocks and more than 10,000 results, on either path', { timeout: 45_000 }, async () => {
      for (const srv of [s, p]) {
        const wide = await post(rpcUrl(srv), call('eth_getLogs', [{ fromBlock: '0x0', toBlock: hex(10_000) }], 3));
        expect(wide.status).toBe(200);
        expect(wide.body).toEqual({ jsonrpc: '2.0', id: 3, error: { code: -32005, message: 'query exceeds max block range 10000' } });
      }
      const many = await write(anvil.url, { address: emitter.address, abi: emitter.abi, functionName: 'emitMany', args: [10_001n] });
      const filter = { blockHash: many.blockHash };
      expect((await anvilAnswer(call('eth_getLogs', [filter]))).body.result).toHaveLength(10_001);
      await caughtUp(s);
      const before = await counted(s);
      const local = await post(rpcUrl(s), call('eth_getLogs', [filter], 4));
      expect(local.body).toEqual({ jsonrpc: '2.0', id: 4, error: { code: -32005, message: 'query returned more than 10000 results' } });
      expect(servedBetween(before, await counted(s), 'eth_getLogs')).toEqual({ store: 1 });
      // The same block once pruned: the node's 10,001 logs are refused alike.
      await mine(3);
      await caughtUp(p);
      await prunedPast(p, Number(many.blockNumber));
      const beforeP = await counted(p);
      const forwarded = await post(
        rpcUrl(p),
        call('eth_getLogs', [{ fromBlock: hex(many.blockNumber), toBlock: hex(many.blockNumber) }], 5),
      );
      expect(forwarded.body).toEqual({ jsonrpc: '2.0', id: 5, error: { code: -32005, message: 'query returned more than 10000 results' } });
      expect(servedBetween(beforeP, await counted(p), 'eth_getLogs')).toEqual({ node: 1 });
      // A filter that keeps it under the limit is answered.
      const some = await sameAsAnvil('eth_getLogs', [{ ...filter, topics: [null, [pad('0x1'), pad('0x2710')]] }], 'store');
      expect(some.map((l: { topics: string[] }) => BigInt(l.topics[1]!))).toEqual([1n, 10_000n]);
    });
  });

  describe('eth_getBlockReceipts', () => {
    it('answers held blocks from the store by number, tag and hash, as anvil does', async () => {
      // The test before mined blocks and waited for the other server only: "latest" is held once this one has them.
      await caughtUp(s);
      const rs = await sameAsAnvil('eth_getBlockReceipts', [hex(mixedBlock)], 'store');
      expect(rs).toHaveLength(4);
      expect(rs.flatMap((r: { logs: unknown[] }) => r.logs).length).toBeGreaterThan(1);
      await sameAsAnvil('eth_getBlockReceipts', [receipts[5]!.blockHash], 'store');
      await sameAsAnvil('eth_getBlockReceipts', ['latest'], 'store');
      await sameAsAnvil('eth_getBlockReceipts', ['earliest'], 'store');
    });

    it('goes to the node for pruned blocks, pending and blocks beyond the head', async () => {
      await sameAsAnvil('eth_getBlockReceipts', [hex(mixedBlock)], 'node', p);
      await sameAsAnvil('eth_getBlockReceipts', ['pending'], 'node');
      expect(await sameAsAnvil('eth_getBlockReceipts', [hex((await head()) + 5)], 'node')).toBeNull();
    });
  });

  describe('eth_feeHistory', () => {
    it('answers from the store with reward percentiles, as anvil does', async () => {
      const latest = await head();
      const h = await sameAsAnvil('eth_feeHistory', [hex(latest - mixedBlock + 1), 'latest', [0, 10, 25, 50, 75, 90, 100]], 'store');
      // The mixed block pays its producer; the empty blocks after it do not.
      expect(h.reward[0].every((r: string) => r !== '0x0')).toBe(true);
      expect(h.reward.at(-1).every((r: string) => r === '0x0')).toBe(true);
      await sameAsAnvil('eth_feeHistory', ['0x3', hex(mixedBlock), [12.5, 33.3, 50.5, 99.9]], 'store');
      // A percentile between the lowest tip's share of the gas and the nearest half: anvil reads it rounded.
      const block = (await anvilAnswer(call('eth_getBlockByNumber', [hex(mixedBlock), true]))).body.result;
      const used = (await anvilAnswer(call('eth_getBlockReceipts', [hex(mixedBlock)]))).body.result.map((r: { gasUsed: string }) =>
        Number(r.gasUsed),
      );
      const base = BigInt(block.baseFeePerGas);
      const tips = block.transactions.map((t: Record<string, string>) =>
        t['type'] === '0x0'
          ? BigInt(t['gasPrice']!) - base
          : [BigInt(t['maxPriorityFeePerGas']!), BigInt(t['maxFeePerGas']!) - base].sort((x, y) => (x < y ? -1 : 1))[0]!,
      );
      const lowest = tips.indexOf(tips.reduce((x: bigint, y: bigint) => (y < x ? y : x)));
      const share = (100 * used[lowest]) / Number(block.gasUsed);
      const between = (share + Math.floor(share) + 0.5) / 2;
      const [rounded] = (await sameAsAnvil('eth_feeHistory', ['0x1', hex(mixedBlock), [between]], 'store')).reward[0];
      // Read exactly, `between` would pick the other side of the lowest tip.
      expect(rounded === `0x${tips[lowest].toString(16)}`).toBe(Math.round(between) <= share);
      await sameAsAnvil('eth_feeHistory', [4, hex(mixedBlock)], 'store');
      await sameAsAnvil('eth_feeHistory', ['0x400', 'latest', [50]], 'store');
      await sameAsAnvil('eth_feeHistory', ['0x2', 'earliest', []], 'store');
    });

    it('goes to the node for pending, a zero count, and pruned blocks', async () => {
      await sameAsAnvil('eth_feeHistory', ['0x2', 'pending', [50]], 'node');
      await sameAsAnvil('eth_feeHistory', ['0x0', 'latest', [50]], 'node');
      // null percentiles: anvil's own error, passed on.
      await sameAsAnvil('eth_feeHistory', ['0x2', 'latest', null], 'node');
      expect((await anvilAnswer(call('eth_feeHistory', ['0x2', 'latest', null]))).body.error.code).toBe(-32602);
      await sameAsAnvil('eth_feeHistory', ['0x2', hex(mixedBlock), [25, 75]], 'node', p);
    });
  });

  describe('forwarded methods', () => {
    it("eth_getProof goes to the node, with the node's answer", async () => {
      const proof = await sameAsAnvil('eth_getProof', [token.address, [pad('0x0'), pad('0x3')], 'latest'], 'node');
      expect(proof.accountProof.length).toBeGreaterThan(0);
      expect(proof.storageProof).toHaveLength(2);
    });

    it("the other reads go to the node, with the node's answers", async () => {
      const balanceOf = encodeFunctionData({ abi: token.abi, functionName: 'balanceOf', args: [A1] });
      const r = receipts[1]!;
      await sameAsAnvil('eth_chainId', [], 'node');
      await sameAsAnvil('net_version', [], 'node');
      await sameAsAnvil('eth_blockNumber', [], 'node');
      await sameAsAnvil('eth_getBalance', [A1, 'latest'], 'node');
      await sameAsAnvil('eth_getCode', [token.address, 'latest'], 'node');
      await sameAsAnvil('eth_call', [{ to: token.address, data: balanceOf }, 'latest'], 'node');
      await sameAsAnvil(
        'eth_estimateGas',
        [{ from: A0, to: token.address, data: encodeFunctionData({ abi: token.abi, functionName: 'transfer', args: [A1, 1n] }) }],
        'node',
      );
      await sameAsAnvil('eth_getBlockByNumber', [hex(mixedBlock), true], 'node');
      await sameAsAnvil('eth_getTransactionReceipt', [r.transactionHash], 'node');
      await sameAsAnvil('eth_getTransactionByHash', [r.transactionHash], 'node');
    });

    it('gives a call at most the block gas limit, or CHAINPOST_RPC_GAS_CAP when lower; a gas within it goes as sent', async () => {
      // anvil's own estimate tells the gas it was given: the most it tries.
      const looping = (srv: Running) =>
        post(rpcUrl(srv), call('eth_estimateGas', [{ to: LOOPER, gas: HUGE_GAS }, 'latest', LOOP_OVERRIDE]));
      const limit = BigInt((await anvilAnswer(call('eth_getBlockByNumber', ['latest', false]))).body.result.gasLimit);
      expect((await looping(s)).body.error.message).toBe(`Out of gas: gas required exceeds allowance: ${limit}`);
      expect((await looping(p)).body.error.message).toBe('Out of gas: gas required exceeds allowance: 1000000');
      // Without a gas the call gets the cap too, which is anvil's own default here.
      await sameAsAnvil('eth_estimateGas', [{ to: LOOPER }, 'latest', LOOP_OVERRIDE], 'node');
      expect((await post(rpcUrl(p), call('eth_estimateGas', [{ to: LOOPER }, 'latest', LOOP_OVERRIDE]))).body.error.message).toBe(
        'Out of gas: gas required exceeds allowance: 1000000',
      );
      // A transfer's estimate, within either cap: anvil's answer for it.
      const transfer = {
        from: A0,
        to: token.address,
        data: encodeFunctionData({ abi: token.abi, functionName: 'transfer', args: [A1, 1n] }),
      };
      for (const srv of [s, p]) await sameAsAnvil('eth_estimateGas', [{ ...transfer, gas: '0x186a0' }], 'node', srv);
    });

    it('a JSON-RPC error of the node is passed on as it sent it, with status 200', async () => {
      // A transfer of more than A2 holds reverts with the token's reason (code 3 and the revert data).
      const data = encodeFunctionData({ abi: token.abi, functionName: 'transfer', args: [A1, parseEther('1000000')] });
      const before = await counted(s);
      const ours = await post(rpcUrl(s), call('eth_call', [{ from: A2, to: token.address, data }, 'latest'], 9));
      const theirs = await anvilAnswer(call('eth_call', [{ from: A2, to: token.address, data }, 'latest'], 9));
      expect(theirs.body.error.data).toMatch(/^0x08c379a0/);
      expect(ours.status).toBe(200);
      expect(ours.body).toEqual(theirs.body);
      expect(servedBetween(before, await counted(s), 'eth_call')).toEqual({ node: 1 });
    });

    it('eth_sendRawTransaction goes to the node', async () => {
      const wallet = await walletClient(anvil.url, DEV_ACCOUNTS[2]);
      const raw = await wallet.signTransaction(await wallet.prepareTransactionRequest({ to: A0, value: 3n }));
      const sent = await post(rpcUrl(s), call('eth_sendRawTransaction', [raw]));
      expect(sent.status).toBe(200);
      const receipt = await mined(anvil.url, sent.body.result);
      expect(receipt.from).toBe(A2);
    });

    it('node administration and accounts kept by the node do not exist: -32601, and nothing reaches the node', async () => {
      const before = await head();
      const refused = [
        'anvil_mine',
        'hardhat_mine',
        'evm_mine',
        'debug_traceTransaction',
        'admin_peers',
        'personal_sign',
        'miner_start',
        'txpool_status',
        'eth_sendTransaction',
        'eth_sign',
        'eth_signTypedData_v4',
        'eth_accounts',
        'eth_newFilter',
        'no_suchMethod',
      ];
      for (const method of refused) {
        const r = await post(rpcUrl(s), call(method, method === 'anvil_mine' ? ['0x5'] : [], 2));
        expect(r.status, method).toBe(200);
        expect(r.body, method).toEqual({
          jsonrpc: '2.0',
          id: 2,
          error: { code: -32601, message: `the method ${method} does not exist/is not available` },
        });
        expect(proxy.calls(method), method).toBe(0);
      }
      expect(await head()).toBe(before);
    });
  });

  describe("sharing the node's answers", () => {
    it('identical calls in flight reach the node once and share its answer', async () => {
      const params = [A1, 'latest'];
      const asked = proxy.calls('eth_getBalance');
      const before = await counted(s);
      const release = proxy.hold('eth_getBalance');
      const answers = Array.from({ length: 5 }, (_, i) => post(rpcUrl(s), call('eth_getBalance', params, i + 1)));
      // All five are at the server before the node answers the first.
      const joined = await until(async () => servedBetween(before, await counted(s), 'eth_getBalance')['shared'] === 4, 5_000);
      release();
      expect(joined).toBe(true);
      const replies = await Promise.all(answers);
      const theirs = (await anvilAnswer(call('eth_getBalance', params))).body.result;
      expect(replies.map((r) => r.body)).toEqual([1, 2, 3, 4, 5].map((id) => ({ jsonrpc: '2.0', id, result: theirs })));
      expect(proxy.calls('eth_getBalance') - asked).toBe(1);
      expect(servedBetween(before, await counted(s), 'eth_getBalance')).toEqual({ node: 1, shared: 4 });
    });

    it('answers about confirmed blocks are cached; about unconfirmed blocks and latest they are not', async () => {
      await caughtUp(s);
      const { confirmed } = (await s.call('/health')).body.chains[0];
      const latest = await head();
      expect(latest - confirmed).toBe(2);
      const twice = async (method: string, params: unknown[]): Promise<{ reached: number; served: Record<string, number> }> => {
        const asked = proxy.calls(method);
        const before = await counted(s);
        const theirs = (await anvilAnswer(call(method, params))).body;
        for (let i = 0; i < 2; i++) expect((await post(rpcUrl(s), call(method, params))).body).toEqual(theirs);
        return { reached: proxy.calls(method) - asked, served: servedBetween(before, await counted(s), method) };
      };
      expect(await twice('eth_getBalance', [A0, hex(confirmed)])).toEqual({ reached: 1, served: { node: 1, cache: 1 } });
      expect(await twice('eth_getTransactionReceipt', [receipts[2]!.transactionHash])).toEqual({
        reached: 1,
        served: { node: 1, cache: 1 },
      });
      expect(await twice('eth_getBalance', [A0, hex(latest)])).toEqual({ reached: 2, served: { node: 2 } });
      expect(await twice('eth_getBalance', [A0, 'latest'])).toEqual({ reached: 2, served: { node: 2 } });
      expect(await twice('eth_getCode', [token.address, hex(confirmed)])).toEqual({ reached: 1, served: { node: 1, cache: 1 } });
      // The store's log answers too: about confirmed blocks, kept; about the unconfirmed head, made again. (A block's receipts are kept per block.)
      expect(await twice('eth_getBlockReceipts', [hex(confirmed - 1)])).toEqual({ reached: 0, served: { store: 2 } });
      expect(await twice('eth_getLogs', [{ fromBlock: hex(confirmed - 3), toBlock: hex(confirmed), address: token.address }])).toEqual({
        reached: 0,
        served: { store: 1, cache: 1 },
      });
      expect(await twice('eth_getLogs', [{ fromBlock: hex(confirmed - 3), toBlock: hex(latest), address: token.address }])).toEqual({
        reached: 0,
        served: { store: 2 },
      });
    });
  });

  describe('batches', () => {
    it('answer each call in order, local and forwarded alike, a bad element with its own error', async () => {
      const good = [
        call('eth_getLogs', [{ fromBlock: '0x0', address: token.address }], 1),
        call('eth_chainId', [], 2),
        call('eth_getBlockReceipts', [hex(mixedBlock)], 'three'),
        call('eth_getProof', [token.address, [], 'latest'], 4),
        call('eth_feeHistory', ['0x2', 'latest', [50]], 5),
      ];
      const before = await counted(s);
      const r = await post(rpcUrl(s), [
        ...good.slice(0, 2),
        { jsonrpc: '2.0', id: 6, method: 7 },
        ...good.slice(2),
        call('anvil_mine', [], 8),
        { jsonrpc: '2.0', method: 'eth_chainId' },
      ]);
      const after = await counted(s);
      expect(r.status).toBe(200);
      const theirs = (await anvilAnswer(good)).body;
      expect(r.body).toEqual([
        ...theirs.slice(0, 2),
        { jsonrpc: '2.0', id: 6, error: { code: -32600, message: 'method: must be a string' } },
        ...theirs.slice(2),
        { jsonrpc: '2.0', id: 8, error: { code: -32601, message: 'the method anvil_mine does not exist/is not available' } },
      ]);
      expect(servedBetween(before, after, 'eth_getLogs')).toEqual(LOCAL);
      expect(servedBetween(before, after, 'eth_getBlockReceipts')).toEqual(LOCAL);
      expect(servedBetween(before, after, 'eth_feeHistory')).toEqual({ store: 1 });
      expect(servedBetween(before, after, 'eth_getProof')).toEqual({ node: 1 });
    });

    it('an empty batch, or one over 100 calls, is a 400', async () => {
      expect(await post(rpcUrl(s), [])).toMatchObject({
        status: 400,
        body: { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'request: an empty batch' } },
      });
      const big = await post(
        rpcUrl(s),
        Array.from({ length: 101 }, (_, i) => call('eth_chainId', [], i)),
      );
      expect(big).toMatchObject({
        status: 400,
        body: { error: { code: -32600, message: 'request: a batch of 101 calls is over the limit of 100 per batch' } },
      });
      expect(
        (
          await post(
            rpcUrl(s),
            Array.from({ length: 100 }, (_, i) => call('eth_chainId', [], i)),
          )
        ).body,
      ).toHaveLength(100);
    });
  });

  describe('statuses', () => {
    it('400 for malformed JSON (-32700) and for an invalid request (-32600 naming the field)', async () => {
      expect(await post(rpcUrl(s), '{"jsonrpc":')).toMatchObject({
        status: 400,
        body: { jsonrpc: '2.0', id: null, error: { code: -32700 } },
      });
      const invalid: Array<[unknown, string]> = [
        [{ jsonrpc: '1.0', id: 1, method: 'eth_chainId' }, 'jsonrpc: must be "2.0"'],
        [{ jsonrpc: '2.0', id: 1 }, 'method: must be a string'],
        [{ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: { a: 1 } }, 'params: must be an array'],
        [{ jsonrpc: '2.0', id: { a: 1 }, method: 'eth_chainId' }, 'id: must be a number, a string or null'],
        ['"eth_chainId"', 'request: must be a JSON-RPC request object'],
      ];
      for (const [body, message] of invalid) {
        const r = await post(rpcUrl(s), body);
        expect(r.status, message).toBe(400);
        expect(r.body.error, message).toEqual({ code: -32600, message });
      }
      // A notification (no id) is run and not answered, as nodes do.
      expect(await post(rpcUrl(s), { jsonrpc: '2.0', method: 'eth_chainId' })).toMatchObject({ status: 200, text: '' });
    });

    it('401 for an unknown key; 404 for an unknown chain and for a chain without a node here', async () => {
      // Refused before the body is read: no id to answer with.
      expect(await post(rpcUrl(s, 'devnet', 'cpk_not_a_key_0123456789'), call('eth_chainId'))).toMatchObject({
        status: 401,
        body: { jsonrpc: '2.0', id: null, error: { message: 'unknown API key' } },
      });
      expect(await post(rpcUrl(s, 'nochain'), call('eth_chainId'))).toMatchObject({
        status: 404,
        body: { id: 1, error: { message: 'unknown chain "nochain"' } },
      });
      expect(await post(rpcUrl(s, 'eth'), call('eth_chainId'))).toMatchObject({
        status: 404,
        body: { id: 1, error: { message: 'chain 0x1 (eth) has no upstream node on this server' } },
      });
      // The chain as a hex id, a decimal id and an alias: the same chain.
      for (const chain of ['0x539', '1337', 'local']) expect((await post(rpcUrl(s, chain), call('eth_chainId'))).body.result).toBe('0x539');
    });

    it('serves the same routes without the /rpc prefix on CHAINPOST_RPC_PORT', async () => {
      const direct = `http://127.0.0.1:${rpcPort}`;
      const before = await counted(s);
      const r = await post(`${direct}/devnet/${s.key}`, call('eth_getBlockReceipts', [hex(mixedBlock)]));
      expect(r.body).toEqual((await anvilAnswer(call('eth_getBlockReceipts', [hex(mixedBlock)]))).body);
      expect(servedBetween(before, await counted(s), 'eth_getBlockReceipts')).toEqual(LOCAL);
      expect((await post(`${direct}/devnet/nope_0123456789abcdef`, call('eth_chainId'))).status).toBe(401);
      expect((await post(`${direct}/rpc/devnet/${s.key}`, call('eth_chainId'))).status).toBe(404);
      expect((await fetch(`${direct}/health`)).status).toBe(404);
    });

    it('404 for a removed chain: moonbeam and moonriver from 2026-09-25, pointing to base', async () => {
      let r: Running | undefined;
      try {
        // A minute before the date: the service clock runs from its start, and a start under load takes seconds.
        r = await startChainpost({ CHAINPOST_TEST_CLOCK: '1', CHAINPOST_NOW: '2026-09-24T23:59:00Z', CHAINPOST_RATE_LIMIT: '0' });
        const before = await post(rpcUrl(r, 'moonbeam'), call('eth_chainId'));
        expect(before).toMatchObject({
          status: 404,
          body: { error: { message: 'chain 0x504 (moonbeam) has no upstream node on this server' } },
        });
        await advance(r, 60);
        for (const [chain, key] of [
          ['moonbeam', '0x504 (moonbeam)'],
          ['0x505', '0x505 (moonriver)'],
          ['1284', '0x504 (moonbeam)'],
        ] as const) {
          const after = await post(rpcUrl(r, chain), call('eth_chainId', [], 'x'));
          expect(after.status).toBe(404);
          expect(after.body).toEqual({
            jsonrpc: '2.0',
            id: 'x',
            error: {
              code: -32601,
              message: `chain ${key} was removed on 2026-09-25; migrate to base (0x2105) with the same API key, request shapes and response formats`,
            },
          });
        }
        expect((await post(rpcUrl(r, 'lisk'), call('eth_chainId'))).body.error.message).toBe(
          'chain 0x46f (lisk) was removed on 2026-09-25',
        );
      } finally {
        await stopAndClean(r);
      }
    });

    it("429 over the key's rate, with Retry-After and a JSON-RPC error", async () => {
      let r: Running | undefined;
      try {
        r = await startChainpost({ CHAINPOST_RATE_LIMIT: '2' });
        const replies = await Promise.all(Array.from({ length: 6 }, (_, i) => post(rpcUrl(r!), call('eth_chainId', [], i))));
        const limited = replies.filter((x) => x.status === 429);
        expect(limited.length).toBeGreaterThanOrEqual(2);
        expect(limited[0]!.headers.get('retry-after')).toMatch(/^\d+$/);
        expect(limited[0]!.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32005, message: 'too many requests for this API key' } });
      } finally {
        await stopAndClean(r);
      }
    });

    it('500 with a JSON-RPC error when the node is unreachable or answers with an HTTP error; 200 per call in a batch', async () => {
      let r: Running | undefined;
      const gateway = await nodeProxy(anvil.url);
      gateway.failWith(502);
      try {
        const dead = await freePort();
        r = await startChainpost({ ...ENV, CHAINPOST_CHAINS: `0x539=http://127.0.0.1:${dead},0x1=${gateway.url}` });
        const down = await post(rpcUrl(r, 'devnet'), call('eth_chainId', [], 1));
        expect(down.status).toBe(500);
        expect(down.body).toMatchObject({
          jsonrpc: '2.0',
          id: 1,
          error: { code: -32603, message: expect.stringMatching(/^the node of chain 0x539 failed: .*ECONNREFUSED/) },
        });
        const gatewayError = await post(rpcUrl(r, 'eth'), call('eth_getBalance', [A0, 'latest'], 2));
        expect(gatewayError.status).toBe(500);
        expect(gatewayError.body).toMatchObject({
          jsonrpc: '2.0',
          id: 2,
          error: { code: -32603, message: expect.stringContaining('HTTP 502') },
        });
        const batch = await post(rpcUrl(r, 'devnet'), [call('eth_chainId', [], 1), call('eth_blockNumber', [], 2)]);
        expect(batch.status).toBe(200);
        expect(batch.body.map((x: { error: { code: number } }) => x.error.code)).toEqual([-32603, -32603]);
      } finally {
        await stopAndClean(r);
        await gateway.close();
      }
    });
  });

  describe('viem as the client', () => {
    it('getBlockNumber, getLogs, getBlock, call, getTransactionReceipt, and a batch in one request', async () => {
      const url = rpcUrl(s);
      const ours = createPublicClient({ transport: http(url) });
      const theirs = publicClient(anvil.url);
      expect(await ours.getBlockNumber({ cacheTime: 0 })).toBe(await theirs.getBlockNumber({ cacheTime: 0 }));
      const before = await counted(s);
      const logs = await ours.getLogs({ address: token.address, event: ERC20[0], args: { from: A0 }, fromBlock: 0n });
      expect(servedBetween(before, await counted(s), 'eth_getLogs')).toEqual({ store: 1 });
      expect(logs.length).toBeGreaterThan(2);
      expect(logs).toEqual(await theirs.getLogs({ address: token.address, event: ERC20[0], args: { from: A0 }, fromBlock: 0n }));
      expect(await ours.getBlock({ blockNumber: BigInt(mixedBlock), includeTransactions: true })).toEqual(
        await theirs.getBlock({ blockNumber: BigInt(mixedBlock), includeTransactions: true }),
      );
      const balanceOf = { address: token.address, abi: token.abi, functionName: 'balanceOf', args: [A1] } as const;
      expect(await ours.readContract(balanceOf)).toBe(await theirs.readContract(balanceOf));
      expect(await ours.call({ to: token.address, data: encodeFunctionData(balanceOf) })).toEqual(
        await theirs.call({ to: token.address, data: encodeFunctionData(balanceOf) }),
      );
      const hash = receipts[4]!.transactionHash;
      expect(await ours.getTransactionReceipt({ hash })).toEqual(await theirs.getTransactionReceipt({ hash }));

      const batched = createPublicClient({ transport: http(url, { batch: true }) });
      const httpBefore = await rpcRequests(s);
      const [n, chainId, balance, feeHistory, blockReceipts] = await Promise.all([
        batched.getBlockNumber({ cacheTime: 0 }),
        batched.getChainId(),
        batched.getBalance({ address: A1 }),
        batched.getFeeHistory({ blockCount: 3, rewardPercentiles: [25, 75] }),
        batched.request({ method: 'eth_getBlockReceipts' as never, params: [hex(mixedBlock)] as never }),
      ]);
      expect((await rpcRequests(s)) - httpBefore).toBe(1);
      expect(n).toBe(await theirs.getBlockNumber({ cacheTime: 0 }));
      expect(chainId).toBe(1337);
      expect(balance).toBe(await theirs.getBalance({ address: A1 }));
      expect(feeHistory).toEqual(await theirs.getFeeHistory({ blockCount: 3, rewardPercentiles: [25, 75] }));
      expect(blockReceipts).toEqual((await anvilAnswer(call('eth_getBlockReceipts', [hex(mixedBlock)]))).body.result);
    });
  });
});

/** Node-access HTTP requests the server answered 200, from its metrics. */
async function rpcRequests(s: Running): Promise<number> {
  const text = (await s.call('/metrics')).body as string;
  return Number(/^chainpost_http_requests_total\{area="rpc",status="200"\} (\d+)$/m.exec(text)?.[1] ?? 0);
}

describe('node access on the embedded devnet: no call holds the chain', () => {
  let d: Running;
  /** The devnet's anvil, asked directly. */
  let devnet: string;
  const blockNumber = async (): Promise<number> => Number.parseInt((await post(devnet, call('eth_blockNumber'))).body.result, 16);

  beforeAll(async () => {
    // The devnet mines a block every quarter of a second: each check that it mines on after a call waits two blocks.
    d = await startChainpost({ ...ENV, CHAINPOST_CHAINS: '', CHAINPOST_DEVNET_PORT: '0', CHAINPOST_DEVNET_BLOCK_TIME: '0.25' });
    devnet = JSON.parse(
      d
        .output()
        .split('\n')
        .find((l) => l.includes('"msg":"devnet"'))!,
    ).rpc;
    // A second looping contract deployed for real, for the methods without a state override.
    expect((await post(devnet, call('anvil_setCode', [LOOPER_DEPLOYED, '0x5b600056']))).body.error).toBeUndefined();
  }, 60_000);
  afterAll(() => stopAndClean(d));

  it('a looping call with a huge gas answers within 5 s, by each method that executes code, and the devnet keeps mining', {
    timeout: 120_000,
  }, async () => {
    const calls: Array<[string, unknown[]]> = [
      ['eth_call', [{ to: LOOPER, gas: HUGE_GAS }, 'latest', LOOP_OVERRIDE]],
      ['eth_estimateGas', [{ to: LOOPER, gas: HUGE_GAS }, 'latest', LOOP_OVERRIDE]],
      ['eth_createAccessList', [{ to: LOOPER_DEPLOYED, gas: HUGE_GAS }, 'latest']],
      ['eth_simulateV1', [{ blockStateCalls: [{ stateOverrides: LOOP_OVERRIDE, calls: [{ to: LOOPER, gas: HUGE_GAS }] }] }, 'latest']],
      // Many calls of one simulation, each with a block's gas or none (the node's default, a block's): together they get one block's.
      [
        'eth_simulateV1',
        [{ blockStateCalls: [{ calls: Array.from({ length: 200 }, () => ({ to: LOOPER_DEPLOYED, gas: '0x1c9c380' })) }] }, 'latest'],
      ],
      [
        'eth_simulateV1',
        [
          {
            blockStateCalls: [
              { calls: Array.from({ length: 100 }, () => ({ to: LOOPER_DEPLOYED })) },
              { calls: Array.from({ length: 100 }, () => ({ to: LOOPER_DEPLOYED })) },
            ],
          },
          'latest',
        ],
      ],
    ];
    for (const [method, params] of calls) {
      const before = await blockNumber();
      const started = performance.now();
      // Bounded here too: before the cap, the node would answer after minutes.
      const answer = await fetch(`${d.url}/rpc/devnet/${d.key}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(call(method, params)),
        signal: AbortSignal.timeout(20_000),
      }).then(
        async (r) => (await r.json()) as { result?: unknown; error?: { message: string } },
        (err: Error) => ({ aborted: err.name, result: undefined }),
      );
      const ms = performance.now() - started;
      expect(ms, `${method}: ${JSON.stringify(answer).slice(0, 300)}`).toBeLessThan(5_000);
      if (Array.isArray(answer.result)) {
        // A simulation's calls each failed, having burned a block's gas together at most.
        const calls = (answer.result as Array<{ calls: Array<{ status: string; gasUsed: string }> }>).flatMap((b) => b.calls);
        expect(
          calls.every((c) => c.status === '0x0'),
          method,
        ).toBe(true);
        expect(
          calls.reduce((sum, c) => sum + BigInt(c.gasUsed), 0n),
          method,
        ).toBeLessThanOrEqual(BLOCK_GAS);
      } else {
        // The loop ran out of the gas it was given (or, for calls a simulation's share left without gas, was refused).
        expect(JSON.stringify(answer), method).toMatch(/OutOfGas|out of gas|gas required exceeds|intrinsic gas too high/i);
      }
      // The devnet mines on: two more blocks soon after the answer.
      expect(await until(async () => (await blockNumber()) >= before + 2, 10_000, 100), method).toBe(true);
    }
  });
});
