/**
 * Bitcoin Core's RPC methods over a BitcoinChain: parameters checked and errors raised with Core's codes and
 * texts (src/rpc/blockchain.cpp, rawtransaction.cpp, mempool.cpp, util.cpp), answers as Core's JSON text.
 */
import { type Transaction } from 'bitcoinjs-lib';
import { type BitcoinChain, type StoredBlock } from './chain.js';
import { btc, coreJson, double16 } from './json.js';
import { scriptPubKeyJson } from './script.js';
import { blockJson, difficulty, displayHex, headerJson, txJson, type TxDetail } from './shapes.js';

/** A JSON-RPC error object (Core's `JSONRPCError`). */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** How the stand-in behaves: `verbosity3` false is a node before v23 (no prevout, no fee), `txindex` as Core's -txindex. */
export interface NodeOptions {
  verbosity3: boolean;
  txindex: boolean;
}

/** What a method sees: the chain, the options, and a cache of rendered block transactions (`cacheSize` entries). */
export interface RpcContext {
  chain: BitcoinChain;
  options: NodeOptions;
  cache: Map<string, { revision: number; bytes: Buffer }>;
  cacheSize: number;
  /** Core 28+ (JSON-RPC 2.0 replies); also what getnetworkinfo reports. */
  jsonrpc2: boolean;
}

type Params = unknown[];
/** A method's result as JSON text, or for a large one its bytes in pieces (written out as they are, never joined). */
export type JsonText = string | Buffer[];
type Method = (ctx: RpcContext, params: Params) => JsonText;

const GENESIS_COINBASE = '4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b';

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v === 'boolean' ? 'bool' : typeof v;
}

/** UniValue's type error, as Core raises it for a parameter of the wrong JSON type. */
const typeError = (v: unknown, want: string): RpcError =>
  new RpcError(-3, `JSON value of type ${typeName(v)} is not of expected type ${want}`);

function intParam(v: unknown): number {
  if (typeof v !== 'number' || !Number.isInteger(v)) throw typeError(v, 'number');
  return v;
}

/** Core's `ParseHashV`. */
function hashParam(v: unknown, name: string): string {
  if (typeof v !== 'string') throw typeError(v, 'string');
  if (v.length !== 64) throw new RpcError(-8, `${name} must be of length 64 (not ${v.length}, for '${v}')`);
  if (!/^[0-9a-fA-F]{64}$/.test(v)) throw new RpcError(-8, `${name} must be hexadecimal string (not '${v}')`);
  return v.toLowerCase();
}

/** Core's `ParseVerbosity` with booleans allowed: true is 1, false is 0. */
function verbosityParam(v: unknown, fallback: number): number {
  if (v === undefined || v === null) return fallback;
  return typeof v === 'boolean' ? Number(v) : intParam(v);
}

function boolParam(v: unknown, fallback: boolean): boolean {
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'boolean') throw typeError(v, 'bool');
  return v;
}

/** A block the node knows: stored, or (a pruned node's) a header alone, by its height. */
function knownBlock(ctx: RpcContext, hash: string): StoredBlock | number {
  const b = ctx.chain.byId(hash) ?? ctx.chain.headerOnly(hash);
  if (b === undefined) throw new RpcError(-5, 'Block not found');
  return b;
}

/** Core's `GetBlockChecked`: a block whose data was pruned is refused. */
function withData(ctx: RpcContext, b: StoredBlock | number): StoredBlock {
  if (typeof b === 'number' || !ctx.chain.hasData(b)) throw new RpcError(-1, 'Block not available (pruned data)');
  return b;
}

function tipOf(ctx: RpcContext): StoredBlock {
  const tip = ctx.chain.tip;
  if (!tip) throw new RpcError(-28, 'Loading block index…');
  return tip;
}

/** Prevouts and fee come from undo data: blocks of the active chain, on a node new enough to show them. */
function detailFor(ctx: RpcContext, b: StoredBlock, tx: Transaction, showPrevout: boolean): TxDetail {
  if (!ctx.options.verbosity3 || !ctx.chain.isActive(b)) return { showPrevout: false };
  return { prevouts: ctx.chain.prevouts(tx), showPrevout };
}

/** A block's `tx` array as JSON text; big blocks take a while (about 1 s for 2 MB), so it is kept until the chain changes. */
export function renderedTxs(ctx: RpcContext, b: StoredBlock, verbosity: number): Buffer {
  const key = `${b.hash}/${verbosity}`;
  const hit = ctx.cache.get(key);
  if (hit && hit.revision === ctx.chain.revision) return hit.bytes;
  const txs = b.block.transactions ?? [];
  // Kept as bytes: a 7 MB answer is then copied, not encoded again, at each request.
  const bytes = Buffer.from(
    coreJson(verbosity === 1 ? txs.map((tx) => tx.getId()) : txs.map((tx) => txJson(tx, detailFor(ctx, b, tx, verbosity >= 3)))),
  );
  ctx.cache.set(key, { revision: ctx.chain.revision, bytes });
  if (ctx.cache.size > ctx.cacheSize) ctx.cache.delete(ctx.cache.keys().next().value!);
  return bytes;
}

const getblock: Method = (ctx, [hashArg, verbosityArg]) => {
  const known = knownBlock(ctx, hashParam(hashArg, 'blockhash'));
  const verbosity = Math.min(verbosityParam(verbosityArg, 1), 3);
  const b = withData(ctx, known);
  if (verbosity <= 0) return JSON.stringify(b.bytes.toString('hex'));
  const head = coreJson(blockJson(b.block, ctx.chain.place(b), []));
  // blockJson puts `tx` last: swap its empty array for the rendered one.
  return [Buffer.from(head.slice(0, -'[]}'.length)), renderedTxs(ctx, b, verbosity), Buffer.from('}')];
};

const getblockheader: Method = (ctx, [hashArg, verboseArg]) => {
  const b = knownBlock(ctx, hashParam(hashArg, 'hash'));
  const verbose = boolParam(verboseArg, true);
  if (typeof b === 'number') {
    const below = ctx.chain.below!;
    if (!verbose) return JSON.stringify(below.raw(b));
    return coreJson(headerJson(below.entry(b), below.place(b, ctx.chain.height, ctx.chain.at(ctx.chain.start)?.hash)));
  }
  if (!verbose) return JSON.stringify(b.block.toHex(true));
  return coreJson(headerJson(b.block, ctx.chain.place(b)));
};

const getblockhash: Method = (ctx, [heightArg]) => {
  const hash = ctx.chain.hashAt(intParam(heightArg));
  if (hash === undefined) throw new RpcError(-8, 'Block height out of range');
  return JSON.stringify(hash);
};

const getblockchaininfo: Method = (ctx) => {
  const tip = tipOf(ctx);
  return coreJson({
    chain: 'main',
    blocks: tip.height,
    headers: tip.height,
    bestblockhash: tip.hash,
    difficulty: double16(difficulty(tip.block.bits)),
    time: tip.block.timestamp,
    mediantime: tip.mediantime,
    verificationprogress: 1,
    initialblockdownload: false,
    chainwork: tip.chainwork.toString(16).padStart(64, '0'),
    size_on_disk: 0,
    pruned: ctx.chain.prunedBelow > 0,
    ...(ctx.chain.prunedBelow > 0 ? { pruneheight: ctx.chain.prunedBelow, automatic_pruning: false } : {}),
    warnings: '',
  });
};

/** Service bits and their names as Core lists them (`serviceFlagsToStr`, lowest bit first). */
const SERVICES: Array<[bit: number, name: string]> = [
  [0x1, 'NETWORK'],
  [0x8, 'WITNESS'],
  [0x400, 'NETWORK_LIMITED'],
  [0x800, 'P2P_V2'],
];

/**
 * Core's `getnetworkinfo` with its defaults: a pruned node does not offer NODE_NETWORK (only the recent
 * blocks), and v2 transport (BIP-324) is on by default from 27. `warnings` became an array in 28.
 */
const getnetworkinfo: Method = (ctx) => {
  // 27 and 28 show getblock 3 and getrawtransaction 2 (28 also JSON-RPC 2.0); 22 is a node from before both.
  const version = !ctx.options.verbosity3 ? 220000 : ctx.jsonrpc2 ? 280000 : 270000;
  const services = (ctx.chain.prunedBelow > 0 ? 0 : 0x1) | 0x8 | 0x400 | (version >= 270000 ? 0x800 : 0);
  const reachable = (name: string): boolean => name === 'ipv4' || name === 'ipv6';
  return coreJson({
    version,
    subversion: `/Satoshi:${version / 10000}.0.0/`,
    protocolversion: 70016,
    localservices: services.toString(16).padStart(16, '0'),
    localservicesnames: SERVICES.filter(([bit]) => (services & bit) !== 0).map(([, name]) => name),
    localrelay: true,
    timeoffset: 0,
    networkactive: true,
    connections: 0,
    connections_in: 0,
    connections_out: 0,
    networks: ['ipv4', 'ipv6', 'onion', 'i2p', 'cjdns']
      .filter((n) => version >= 230000 || n !== 'cjdns')
      .map((name) => ({ name, limited: !reachable(name), reachable: reachable(name), proxy: '', proxy_randomize_credentials: false })),
    relayfee: btc(1000),
    incrementalfee: btc(1000),
    localaddresses: [],
    warnings: version >= 280000 ? [] : '',
  });
};

/** Where getrawtransaction finds a transaction: a given block, else the mempool, else (with -txindex) the chain. */
function findTx(ctx: RpcContext, txid: string, blockhash: string | undefined): { tx: Transaction; block?: StoredBlock } {
  const wallet = 'Use gettransaction for wallet transactions.';
  if (blockhash !== undefined) {
    const b = ctx.chain.byId(blockhash);
    if (!b && ctx.chain.headerOnly(blockhash) !== undefined) throw new RpcError(-1, 'Block not available');
    if (!b) throw new RpcError(-5, 'Block hash not found');
    if (!ctx.chain.hasData(b)) throw new RpcError(-1, 'Block not available');
    const tx = b.block.transactions?.find((t) => t.getId() === txid);
    if (!tx) throw new RpcError(-5, `No such transaction found in the provided block. ${wallet}`);
    return { tx, block: b };
  }
  const pooled = ctx.chain.mempool().get(txid);
  if (pooled) return { tx: pooled.tx };
  const mined = ctx.options.txindex ? ctx.chain.minedTx(txid) : undefined;
  if (mined) return { tx: mined.tx, block: mined.block };
  throw new RpcError(
    -5,
    ctx.options.txindex
      ? `No such mempool or blockchain transaction. ${wallet}`
      : `No such mempool transaction. Use -txindex or provide a block hash to enable blockchain transaction queries. ${wallet}`,
  );
}

/** Core's `TxToJSON`: the transaction, then where it was mined (time and confirmations only on the active chain). */
function placedTx(ctx: RpcContext, tx: Transaction, b: StoredBlock | undefined, detail: TxDetail): Record<string, unknown> {
  const json = txJson(tx, detail);
  if (!b) return json;
  if (!ctx.chain.isActive(b)) return { ...json, blockhash: b.hash, confirmations: 0 };
  return {
    ...json,
    blockhash: b.hash,
    confirmations: ctx.chain.height - b.height + 1,
    time: b.block.timestamp,
    blocktime: b.block.timestamp,
  };
}

const getrawtransaction: Method = (ctx, [txidArg, verbosityArg, blockArg]) => {
  const txid = hashParam(txidArg, 'parameter 1');
  if (txid === GENESIS_COINBASE)
    throw new RpcError(-5, 'The genesis block coinbase is not considered an ordinary transaction and cannot be retrieved');
  const verbosity = verbosityParam(verbosityArg, 0);
  const blockhash = blockArg === undefined || blockArg === null ? undefined : hashParam(blockArg, 'parameter 3');
  const { tx, block } = findTx(ctx, txid, blockhash);
  if (verbosity <= 0) return JSON.stringify(tx.toHex());
  const head = block && blockhash !== undefined ? { in_active_chain: ctx.chain.isActive(block) } : {};
  // Verbosity 2 adds prevouts and fee from the block's undo data: never for mempool txs or a coinbase.
  const detail = verbosity >= 2 && block ? detailFor(ctx, block, tx, true) : { showPrevout: false };
  return coreJson({ ...head, ...placedTx(ctx, tx, block, detail) });
};

/** Core's mempool entry (getrawmempool true, getmempoolentry); fees from prevouts in the chain or the mempool. */
function mempoolEntry(ctx: RpcContext, txid: string): Record<string, unknown> {
  const { tx, time } = ctx.chain.mempool().get(txid)!;
  const pool = ctx.chain.mempool();
  const parents = [...new Set(tx.ins.map((i) => displayHex(i.hash)).filter((id) => pool.has(id)))];
  const spentby = [...pool.values()].filter((p) => p.tx.ins.some((i) => displayHex(i.hash) === txid)).map((p) => p.tx.getId());
  const inValue = tx.ins.reduce((sum, input) => {
    const from = pool.get(displayHex(input.hash))?.tx ?? ctx.chain.minedTx(displayHex(input.hash))?.tx;
    return sum + (from?.outs[input.index]?.value ?? 0n);
  }, 0n);
  const fee = btc(inValue - tx.outs.reduce((sum, o) => sum + o.value, 0n));
  const vsize = tx.virtualSize();
  return {
    vsize,
    weight: tx.weight(),
    time,
    height: ctx.chain.height,
    descendantcount: 1,
    descendantsize: vsize,
    ancestorcount: 1,
    ancestorsize: vsize,
    wtxid: txJson(tx).hash,
    fees: { base: fee, modified: fee, ancestor: fee, descendant: fee },
    depends: parents,
    spentby,
    'bip125-replaceable': tx.ins.some((i) => i.sequence < 0xfffffffe),
    unbroadcast: false,
  };
}

const getrawmempool: Method = (ctx, [verboseArg]) => {
  const txids = [...ctx.chain.mempool().keys()];
  if (!boolParam(verboseArg, false)) return JSON.stringify(txids);
  return coreJson(Object.fromEntries(txids.map((id) => [id, mempoolEntry(ctx, id)])));
};

const getmempoolentry: Method = (ctx, [txidArg]) => {
  const txid = hashParam(txidArg, 'parameter 1');
  if (!ctx.chain.mempool().has(txid)) throw new RpcError(-5, 'Transaction not in mempool');
  return coreJson(mempoolEntry(ctx, txid));
};

/** Whether an input of the active chain (or, with `mempool`, of the mempool) spends txid:n. */
function isSpent(ctx: RpcContext, txid: string, n: number, mempool: boolean): boolean {
  const spends = (tx: Transaction): boolean => tx.ins.some((i) => i.index === n && displayHex(i.hash) === txid);
  for (let h = ctx.chain.start; h <= ctx.chain.height; h++) if (ctx.chain.at(h)?.block.transactions?.some(spends)) return true;
  return mempool && [...ctx.chain.mempool().values()].some((p) => spends(p.tx));
}

/**
 * Core's `gettxout`: an unspent output from the UTXO set (no -txindex needed), with the mempool's view when
 * include_mempool (default true): its outputs count, what it spends does not. null when spent or unknown.
 */
const gettxout: Method = (ctx, [txidArg, nArg, mempoolArg]) => {
  const txid = hashParam(txidArg, 'txid');
  // UniValue's getInt<uint32_t>: a number out of its range is a plain exception, which the RPC server answers as -1.
  const n = intParam(nArg);
  if (n < 0 || n > 0xffffffff) throw new RpcError(-1, 'JSON integer out of range');
  const mempool = boolParam(mempoolArg, true);
  const mined = ctx.chain.minedTx(txid);
  const pooled = mempool ? ctx.chain.mempool().get(txid) : undefined;
  const tx = mined?.tx ?? pooled?.tx;
  const out = tx?.outs[n];
  if (out === undefined || isSpent(ctx, txid, n, mempool)) return 'null';
  const tip = tipOf(ctx);
  return coreJson({
    bestblock: tip.hash,
    confirmations: mined ? tip.height - mined.block.height + 1 : 0,
    value: btc(out.value),
    scriptPubKey: scriptPubKeyJson(out.script),
    coinbase: mined?.index === 0,
  });
};

/** Core's `getindexinfo`: how a client learns whether -txindex is on (an empty object when it is not). */
const getindexinfo: Method = (ctx, [nameArg]) => {
  if (nameArg !== undefined && nameArg !== null && typeof nameArg !== 'string') throw typeError(nameArg, 'string');
  const shown = ctx.options.txindex && (nameArg === undefined || nameArg === null || nameArg === 'txindex');
  return coreJson(shown ? { txindex: { synced: true, best_block_height: ctx.chain.height } } : {});
};

/** The methods served, with their parameter names for named-parameter requests (`a|b`: Core's aliases). */
export const METHODS: Record<string, { run: Method; args: string[] }> = {
  getbestblockhash: { run: (ctx) => JSON.stringify(tipOf(ctx).hash), args: [] },
  getblock: { run: getblock, args: ['blockhash', 'verbosity|verbose'] },
  getblockchaininfo: { run: getblockchaininfo, args: [] },
  getblockcount: { run: (ctx) => String(tipOf(ctx).height), args: [] },
  getblockhash: { run: getblockhash, args: ['height'] },
  getblockheader: { run: getblockheader, args: ['blockhash', 'verbose'] },
  getindexinfo: { run: getindexinfo, args: ['index_name'] },
  getmempoolentry: { run: getmempoolentry, args: ['txid'] },
  getnetworkinfo: { run: getnetworkinfo, args: [] },
  getrawmempool: { run: getrawmempool, args: ['verbose', 'mempool_sequence'] },
  getrawtransaction: { run: getrawtransaction, args: ['txid', 'verbosity|verbose', 'blockhash'] },
  gettxout: { run: gettxout, args: ['txid', 'n', 'include_mempool'] },
};

/** Runs one call; params are positional (array) or named (object). */
export function runMethod(ctx: RpcContext, method: string, params: unknown): JsonText {
  const m = Object.hasOwn(METHODS, method) ? METHODS[method] : undefined;
  if (!m) throw new RpcError(-32601, 'Method not found');
  if (params === undefined || params === null) return m.run(ctx, []);
  if (Array.isArray(params)) return m.run(ctx, params);
  const named = params as Record<string, unknown>;
  const names = m.args.map((a) => a.split('|'));
  const unknown = Object.keys(named).find((k) => !names.some((n) => n.includes(k)));
  if (unknown !== undefined) throw new RpcError(-8, `Unknown named parameter ${unknown}`);
  return m.run(
    ctx,
    names.map((n) => named[n.find((k) => k in named) ?? n[0]!]),
  );
}
