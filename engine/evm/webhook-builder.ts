import { decodeEventLog, decodeFunctionResult, encodeFunctionData, formatUnits, toEventSelector } from 'viem/utils';
import type { Abi, AbiEvent, AbiFunction, Hex } from 'viem';
import type { StoredLog } from './record.js';
import { RecordView } from './record-view.js';
import { ProbeKind } from './probe.js';
import { TRANSFER, TRANSFER_BATCH, TRANSFER_SINGLE, logTransfers, topicAddress, word } from './store.js';
import type { StreamRecord, Trigger } from '../streams/model.js';
import { abiEvents, topic0Hash } from '../streams/schemas.js';
import { compileFilter, type CompiledFilter, type FilterContext, type FilterExpr } from './advanced-filter.js';
import type { BuildWebhook, CallBudget, MatchedBlock } from '../match/build.js';
import { OVER_BUDGET } from '../match/node-share.js';
import { TRIGGER_GAS } from '../streams/limits.js';
import type { ChainCall, TokenMetadata } from './token-metadata.js';

/**
 * A stream's webhook body for one block, in the hosted service's shape
 * (CONVENTIONS.md, streams-typings IWebhook), from the items the matcher found:
 *
 * - logs: emitted by a watched address, or naming one in an indexed address
 *   parameter, when includeContractLogs; every log with a listed topic0 for
 *   allAddresses streams. topic0 keeps only the listed events; advancedOptions
 *   filters their decoded parameters; includeAllTxLogs adds every log of a
 *   transaction that has one kept or is itself in txs (the hosted service:
 *   "all related logs if any log or transaction matches").
 * - txs (includeNativeTxs): sent from or to a watched address, or creating
 *   one; for allAddresses streams and advancedOptions entries with
 *   includeNativeTxs, the transactions of the logs kept.
 * - txsInternal (includeInternalTxs): calls moving value from or to a watched address.
 * - erc20Transfers, erc20Approvals, nftTransfers, nftTokenApprovals,
 *   nftApprovals: decoded from the logs kept.
 * - nativeBalances (getNativeBalances) and triggers: read from the node at the block; each trigger call
 *   with CHAINPOST_TRIGGER_GAS (at most the node's gas cap), within the stream's budget for the block and its
 *   tenant's share of the node's time.
 */
export interface BuilderDeps {
  tokens: TokenMetadata;
  call: ChainCall;
  /** The most gas a call on a tenant's behalf may burn on the chain's node (its block gas limit, or CHAINPOST_RPC_GAS_CAP); null: unknown. */
  gasCap(chain: string): Promise<bigint | null>;
  /** The gas a trigger call is given when under that cap (CHAINPOST_TRIGGER_GAS; default TRIGGER_GAS). */
  triggerGas?: bigint;
  /** eth_getBalance at a block (wei); null when the node cannot say. */
  balance(chain: string, address: string, block: number): Promise<bigint | null>;
  /** Whether the stream watches the address (lowercase): a keyed read of the store, for the items a block matched only. */
  watches(streamId: string, address: string): boolean;
}

const APPROVAL = toEventSelector('Approval(address,address,uint256)');
const APPROVAL_FOR_ALL = toEventSelector('ApprovalForAll(address,address,bool)');
/** Where token events keep addresses: the indexed topics that hold one, by topic0 and topic count. */
const ADDRESS_TOPICS: Record<string, Record<number, number[]>> = {
  [TRANSFER]: { 3: [1, 2], 4: [1, 2] },
  [APPROVAL]: { 3: [1, 2], 4: [1, 2] },
  [APPROVAL_FOR_ALL]: { 3: [1, 2] },
  [TRANSFER_SINGLE]: { 4: [1, 2, 3] },
  [TRANSFER_BATCH]: { 4: [1, 2, 3] },
};

type Item = Record<string, unknown>;

/** A stream's definition prepared once per version (its updatedAt). */
interface Prepared {
  topics: Set<string> | null;
  events: Map<string, AbiEvent>;
  advanced: Map<string, Advanced>;
}
interface Advanced {
  filter: CompiledFilter | null;
  includeNativeTxs: boolean;
  /** The filter names moralis_streams_possibleSpam, so the emitter's metadata must be read to evaluate it. */
  readsSpam: boolean;
}

const dec = (v: unknown): string | null =>
  typeof v === 'string' && v.startsWith('0x') ? BigInt(v).toString() : typeof v === 'string' ? v : null;
const lower = (v: unknown): string | null => (typeof v === 'string' ? v.toLowerCase() : null);

export function webhookBuilder(deps: BuilderDeps): BuildWebhook<StreamRecord> {
  const prepared = new Map<string, { version: number; value: Prepared }>();

  const prepare = (s: StreamRecord): Prepared => {
    const cur = prepared.get(s.id);
    if (cur !== undefined && cur.version === s.updatedAt) return cur.value;
    const events = new Map<string, AbiEvent>();
    for (const [signature, event] of abiEvents(s.abi)) events.set(topic0Hash(signature), event);
    const advanced = new Map<string, Advanced>();
    for (const o of s.advancedOptions ?? []) {
      const topic = topic0Hash(String(o['topic0']));
      const event = events.get(topic);
      const filter = o['filter'] !== undefined && event !== undefined ? compileFilter(o['filter'] as FilterExpr, event.inputs) : null;
      advanced.set(topic, {
        filter,
        includeNativeTxs: o['includeNativeTxs'] === true,
        readsSpam: filter !== null && JSON.stringify(o['filter']).includes('"moralis_streams_possibleSpam"'),
      });
    }
    const value: Prepared = {
      topics: s.topic0 === null || s.topic0.length === 0 ? null : new Set(s.topic0.map(topic0Hash)),
      events,
      advanced,
    };
    prepared.set(s.id, { version: s.updatedAt, value });
    return value;
  };

  return async (block: MatchedBlock, s: StreamRecord, refs: readonly number[], budget?: CallBudget) => {
    const { chain } = block;
    const r = RecordView.shared(block.bytes);
    const p = prepare(s);
    const watched = (address: string): boolean => deps.watches(s.id, address);
    const number = Number(r.headerField('number'));
    const spam = async (contract: string | null): Promise<boolean> =>
      s.filterPossibleSpamAddresses && contract !== null && (await deps.tokens.get(chain, contract)).possibleSpam;

    // The items the probe column found, by kind.
    const txHits = new Set<number>();
    const internalHits = new Set<number>();
    const logHits = new Map<number, Set<ProbeKind>>();
    for (const ref of refs) {
      const kind = (ref >>> 24) as ProbeKind;
      const index = ref & 0xffffff;
      if (kind === ProbeKind.TxFrom || kind === ProbeKind.TxTo || kind === ProbeKind.ContractCreated) txHits.add(index);
      else if (kind === ProbeKind.InternalFrom || kind === ProbeKind.InternalTo) internalHits.add(index);
      else {
        let kinds = logHits.get(index);
        if (kinds === undefined) logHits.set(index, (kinds = new Set()));
        kinds.add(kind);
      }
    }

    // Logs.
    const keptLogs = new Map<number, { args: Record<string, unknown> | null }>();
    const txsOfLogs = new Set<number>();
    for (const ordinal of [...logHits.keys()].sort((a, b) => a - b)) {
      const kinds = logHits.get(ordinal)!;
      const log = r.log(ordinal);
      const txIndex = r.logTx(ordinal);
      const topic0 = log.topics[0]?.toLowerCase() ?? '';
      const event = p.events.get(topic0);
      const byAddress =
        s.includeContractLogs &&
        (kinds.has(ProbeKind.LogEmitter) || (kinds.has(ProbeKind.LogTopicAddress) && namesWatched(log, event, watched)));
      const byTopic = s.allAddresses && kinds.has(ProbeKind.Topic0);
      if (!byAddress && !byTopic) continue;
      if (p.topics !== null && !p.topics.has(topic0)) continue;
      const args = event === undefined ? null : decodeArgs(event, log);
      // A listed event must decode with the stream's ABI (its indexed layout included), or parsedLogs could not read it.
      if (p.topics !== null && args === null) continue;
      const advanced = p.advanced.get(topic0);
      if (
        advanced?.filter != null &&
        (args === null || !advanced.filter(args, await filterContext(deps.tokens, chain, log.address, advanced.readsSpam)))
      )
        continue;
      if (await spam(log.address)) continue;
      keptLogs.set(ordinal, { args });
      if (advanced?.includeNativeTxs === true || (s.allAddresses && s.includeNativeTxs)) txsOfLogs.add(txIndex);
    }

    // Transactions and internal transactions.
    const txIndices = new Set<number>();
    if (s.includeNativeTxs) for (const i of txHits) txIndices.add(i);
    for (const i of txsOfLogs) txIndices.add(i);
    const txs: Item[] = [];
    const keptTxs = new Set<number>();
    for (const i of [...txIndices].sort((a, b) => a - b)) {
      const tx = r.tx(i);
      if (await spam(lower(tx['to']))) continue;
      txs.push(txItem(tx, r.receipt(i), i));
      keptTxs.add(i);
    }
    const txsInternal: Item[] = [];
    if (s.includeInternalTxs && r.traced) {
      for (const i of [...internalHits].sort((a, b) => a - b)) {
        const c = r.internal(i);
        if (BigInt(c.value) === 0n || c.error !== undefined) continue;
        if ((await spam(c.from)) || (await spam(c.to))) continue;
        txsInternal.push({
          from: lower(c.from),
          to: lower(c.to),
          value: dec(c.value),
          transactionHash: String(r.txField(c.txIndex, 'hash')),
          gas: dec(c.gas),
        });
      }
    }
    // After txs: a transaction delivered for itself brings its logs too.
    if (s.includeAllTxLogs)
      await addRelatedLogs(keptLogs, r, new Set([...keptTxs, ...[...keptLogs.keys()].map((o) => r.logTx(o))]), p.events, spam);
    const ordinals = [...keptLogs.keys()].sort((a, b) => a - b);
    if (ordinals.length === 0 && txs.length === 0 && txsInternal.length === 0) return null;

    // Logs and the token items decoded from them.
    const body = {
      logs: [] as Item[],
      erc20Transfers: [] as Item[],
      erc20Approvals: [] as Item[],
      nftTransfers: [] as Item[],
      nftTokenApprovals: [] as Item[],
      nftApprovals: { ERC721: [] as Item[], ERC1155: [] as Item[] },
    };
    const logItems: Array<{ item: Item; args: Record<string, unknown> | null; topic0: string }> = [];
    for (const o of ordinals) {
      const log = r.log(o);
      const transactionHash = String(r.txField(r.logTx(o), 'hash'));
      const item: Item = {
        logIndex: dec(log.logIndex),
        transactionHash,
        address: log.address.toLowerCase(),
        data: log.data,
        topic0: log.topics[0] ?? null,
        topic1: log.topics[1] ?? null,
        topic2: log.topics[2] ?? null,
        topic3: log.topics[3] ?? null,
      };
      body.logs.push(item);
      logItems.push({ item, args: keptLogs.get(o)!.args, topic0: (log.topics[0] ?? '').toLowerCase() });
      await tokenItems(deps.tokens, chain, log, transactionHash, body);
    }

    const out: Item = {
      confirmed: block.confirmed,
      chainId: chain,
      abi: s.abi ?? [],
      retries: 0,
      block: { number: String(number), hash: r.headerField('hash'), timestamp: dec(r.headerField('timestamp')) },
      logs: body.logs,
      txs,
      txsInternal,
      erc20Transfers: body.erc20Transfers,
      erc20Approvals: body.erc20Approvals,
      nftTokenApprovals: body.nftTokenApprovals,
      nftApprovals: body.nftApprovals,
      nftTransfers: body.nftTransfers,
      nativeBalances: [],
    };
    const byType: Record<string, Array<{ item: Item; args: Record<string, unknown> | null; topic0?: string }>> = {
      tx: txs.map((item) => ({ item, args: null })),
      log: logItems,
      erc20transfer: body.erc20Transfers.map((item) => ({ item, args: null })),
      erc20approval: body.erc20Approvals.map((item) => ({ item, args: null })),
      nfttransfer: body.nftTransfers.map((item) => ({ item, args: null })),
      internalTx: txsInternal.map((item) => ({ item, args: null })),
    };
    if (s.triggers !== null && s.triggers.length > 0) await runTriggers(deps, chain, number, s.triggers, byType, budget);
    if (s.getNativeBalances.length > 0) out['nativeBalances'] = await nativeBalances(deps, chain, number, s.getNativeBalances, byType);
    return out;
  };
}

/** Whether an indexed address parameter of the log holds a watched address (a topic with 12 zero bytes may be a number). */
function namesWatched(log: StoredLog, event: AbiEvent | undefined, watched: (address: string) => boolean): boolean {
  let positions: number[];
  if (event !== undefined) {
    positions = event.inputs.filter((i) => i.indexed === true).flatMap((i, k) => (i.type === 'address' ? [k + 1] : []));
  } else {
    positions = ADDRESS_TOPICS[log.topics[0]?.toLowerCase() ?? '']?.[log.topics.length] ?? log.topics.map((_, k) => k).slice(1);
  }
  return positions.some((k) => {
    const t = log.topics[k];
    return t !== undefined && t.length === 66 && watched(topicAddress(t).toLowerCase());
  });
}

/** includeAllTxLogs: the other logs of the related transactions, decoded where the stream's ABI knows them; spam emitters stay out as everywhere else. */
async function addRelatedLogs(
  kept: Map<number, { args: Record<string, unknown> | null }>,
  r: RecordView,
  related: ReadonlySet<number>,
  events: ReadonlyMap<string, AbiEvent>,
  spam: (contract: string) => Promise<boolean>,
): Promise<void> {
  for (const txIndex of related) {
    const [first, end] = r.logsOf(txIndex);
    for (let ordinal = first; ordinal < end; ordinal++) {
      if (kept.has(ordinal)) continue;
      const log = r.log(ordinal);
      if (await spam(log.address)) continue;
      const event = events.get(log.topics[0]?.toLowerCase() ?? '');
      kept.set(ordinal, { args: event === undefined ? null : decodeArgs(event, log) });
    }
  }
}

/** What a filter may read besides the event's parameters; the token metadata only when the filter asks for possibleSpam. */
async function filterContext(tokens: TokenMetadata, chain: string, contract: string, readsSpam: boolean): Promise<FilterContext> {
  const ctx: FilterContext = { contractAddress: contract, chainId: chain };
  if (readsSpam) ctx.possibleSpam = (await tokens.get(chain, contract)).possibleSpam;
  return ctx;
}

function decodeArgs(event: AbiEvent, log: StoredLog): Record<string, unknown> | null {
  try {
    const { args } = decodeEventLog({ abi: [event], data: log.data as Hex, topics: log.topics as [Hex, ...Hex[]], strict: true });
    return Array.isArray(args) ? null : (args as Record<string, unknown>);
  } catch {
    return null;
  }
}

function txItem(tx: Record<string, unknown>, receipt: Record<string, unknown>, index: number): Item {
  return {
    hash: tx['hash'],
    gas: dec(tx['gas']),
    gasPrice: dec(tx['gasPrice'] ?? receipt['effectiveGasPrice']),
    nonce: dec(tx['nonce']),
    input: tx['input'] ?? null,
    transactionIndex: String(index),
    fromAddress: lower(tx['from']),
    toAddress: lower(tx['to']),
    value: dec(tx['value']),
    type: dec(tx['type']),
    v: dec(tx['v'] ?? tx['yParity']),
    r: dec(tx['r']),
    s: dec(tx['s']),
    receiptCumulativeGasUsed: dec(receipt['cumulativeGasUsed']),
    receiptGasUsed: dec(receipt['gasUsed']),
    receiptContractAddress: lower(receipt['contractAddress']),
    receiptRoot: (receipt['root'] as string | undefined) ?? null,
    receiptStatus: dec(receipt['status']),
  };
}

type TokenBody = {
  erc20Transfers: Item[];
  erc20Approvals: Item[];
  nftTransfers: Item[];
  nftTokenApprovals: Item[];
  nftApprovals: { ERC721: Item[]; ERC1155: Item[] };
};

/** ERC-20 and NFT items of one log (transfers as the store's index decodes them), with the token's metadata. */
async function tokenItems(tokens: TokenMetadata, chain: string, log: StoredLog, transactionHash: string, body: TokenBody): Promise<void> {
  const topic0 = (log.topics[0] ?? '').toLowerCase();
  const n = log.topics.length;
  if (ADDRESS_TOPICS[topic0]?.[n] === undefined) return;
  const contract = log.address.toLowerCase();
  const info = await tokens.get(chain, contract);
  const base = { transactionHash, logIndex: dec(log.logIndex)!, contract };
  const nft = (type: 'ERC721' | 'ERC1155'): Item => ({
    tokenContractType: type,
    tokenName: info.name,
    tokenSymbol: info.symbol,
    possibleSpam: info.possibleSpam,
  });
  const erc20 = (value: bigint): Item => ({
    value: value.toString(),
    tokenName: info.name,
    tokenSymbol: info.symbol,
    tokenDecimals: info.decimals === null ? '' : String(info.decimals),
    valueWithDecimals: info.decimals === null ? null : formatUnits(value, info.decimals),
    possibleSpam: info.possibleSpam,
  });
  for (const t of logTransfers(log)) {
    const [from, to] = [t.from.toLowerCase(), t.to.toLowerCase()];
    if (t.kind === 'erc20') body.erc20Transfers.push({ ...base, from, to, ...erc20(BigInt(t.value)) });
    else
      body.nftTransfers.push({
        ...base,
        ...nft(t.kind === 'erc721' ? 'ERC721' : 'ERC1155'),
        operator: t.operator?.toLowerCase() ?? null,
        from,
        to,
        tokenId: BigInt(t.tokenId!).toString(),
        amount: BigInt(t.value).toString(),
      });
  }
  const party = (k: number): string => topicAddress(log.topics[k]).toLowerCase();
  if (topic0 === APPROVAL && n === 3 && log.data.length >= 66) {
    body.erc20Approvals.push({ ...base, owner: party(1), spender: party(2), ...erc20(BigInt(word(log.data, 0))) });
  } else if (topic0 === APPROVAL && n === 4) {
    const tokenId = BigInt(log.topics[3]!).toString();
    body.nftTokenApprovals.push({ ...base, ...nft('ERC721'), account: party(1), operator: party(2), approvedAll: false, tokenId });
    body.nftApprovals.ERC721.push({ ...base, ...nft('ERC721'), owner: party(1), approved: party(2), tokenId });
  } else if (topic0 === APPROVAL_FOR_ALL) {
    const type = info.nftStandard === 'ERC1155' ? 'ERC1155' : 'ERC721';
    const approved = /[1-9a-f]/i.test(log.data.slice(2, 66));
    body.nftTokenApprovals.push({ ...base, ...nft(type), account: party(1), operator: party(2), approvedAll: approved, tokenId: null });
    if (type === 'ERC1155') body.nftApprovals.ERC1155.push({ ...base, ...nft(type), account: party(1), operator: party(2), approved });
  }
}

type Typed = Record<string, Array<{ item: Item; args: Record<string, unknown> | null; topic0?: string }>>;

/** `$name`: the item's field (or decoded parameter) of that name, `$contract` the token or emitter; anything else is literal. */
function select(selector: string, item: Item, args: Record<string, unknown> | null): unknown {
  if (!selector.startsWith('$')) return selector;
  const name = selector.slice(1);
  if (name === 'contract') return item['contract'] ?? item['address'];
  return item[name] ?? args?.[name];
}

/** A trigger's result on its item (streams-typings TriggerOutput), with `error` when its call was not answered within the budget. */
interface TriggerOutput {
  name: string;
  value: unknown;
  error?: string;
}

/**
 * Each trigger's eth_call at the block, on every item of its type, one after another; results on the item as
 * triggers[] ({name, value}). Calls not answered within the budget (none is started after it, the one under way
 * is given up) get value null and an `error` saying so: the webhook goes with what was read.
 */
async function runTriggers(
  deps: BuilderDeps,
  chain: string,
  block: number,
  triggers: readonly Trigger[],
  byType: Typed,
  budget: CallBudget | undefined,
): Promise<void> {
  // A view function needs far less than a block's gas: a call that loops until its gas is gone is over sooner.
  const cap = await deps.gasCap(chain);
  const own = deps.triggerGas ?? BigInt(TRIGGER_GAS);
  const gas = cap !== null && cap < own ? cap : own;
  const overBudget =
    budget === undefined
      ? ''
      : `over budget: not answered within the ${budget.ms} ms this stream's trigger calls have per block (CHAINPOST_TRIGGER_BUDGET_MS)`;
  for (const trigger of triggers) {
    const fn = trigger.functionAbi as unknown as AbiFunction;
    const topic = trigger.topic0 === undefined ? undefined : topic0Hash(trigger.topic0);
    for (const { item, args, topic0 } of byType[trigger.type] ?? []) {
      if (topic !== undefined && topic0 !== topic) continue;
      const to = select(trigger.contractAddress, item, args);
      const output: TriggerOutput = { name: fn.outputs?.[0]?.name || fn.name, value: null };
      const data =
        typeof to === 'string' && /^0x[0-9a-fA-F]{40}$/.test(to)
          ? encodeCall(
              fn,
              (trigger.inputs ?? []).map((i) => select(i, item, args)),
            )
          : null;
      if (data !== null) {
        const from = trigger.callFrom === undefined ? undefined : select(trigger.callFrom, item, args);
        // A node that cannot be reached throws (the block is tried again); a reverted call yields null.
        const call = (): Promise<Hex | null> =>
          deps.call(chain, to as string, data, block, typeof from === 'string' ? from : undefined, gas);
        const out = budget === undefined ? await call() : await budget.call(call);
        if (out === OVER_BUDGET) output.error = overBudget;
        else if (out !== null && out !== '0x') output.value = decodeResult(fn, out);
      }
      const triggersOf = (item['triggers'] ??= []) as TriggerOutput[];
      triggersOf.push(output);
    }
  }
}

/** The call's data, or null when the inputs do not fit the function (a selector naming nothing). */
function encodeCall(fn: AbiFunction, args: unknown[]): Hex | null {
  try {
    return encodeFunctionData({ abi: [fn] as Abi, functionName: fn.name, args });
  } catch {
    return null;
  }
}

function decodeResult(fn: AbiFunction, out: Hex): unknown {
  try {
    return plain(decodeFunctionResult({ abi: [fn] as Abi, functionName: fn.name, data: out }));
  } catch {
    return null;
  }
}

/** JSON-safe: bigints as decimal strings, arrays and structs kept. */
function plain(v: unknown): unknown {
  if (typeof v === 'bigint') return v.toString();
  if (Array.isArray(v)) return v.map(plain);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

/** getNativeBalances: the addresses its selectors pick from items of its type, each once, with eth_getBalance at the block. */
async function nativeBalances(
  deps: BuilderDeps,
  chain: string,
  block: number,
  specs: StreamRecord['getNativeBalances'],
  byType: Typed,
): Promise<Item[]> {
  const addresses: string[] = [];
  for (const spec of specs) {
    for (const { item, args } of byType[spec.type] ?? []) {
      for (const sel of spec.selectors) {
        const a = select(sel, item, args);
        if (typeof a === 'string' && /^0x[0-9a-fA-F]{40}$/.test(a) && !addresses.includes(a.toLowerCase())) addresses.push(a.toLowerCase());
      }
    }
  }
  const balances = await Promise.all(addresses.map((address) => deps.balance(chain, address, block)));
  // An address whose balance the node cannot give is left out rather than sent without one.
  return addresses.flatMap((address, i) => (balances[i] == null ? [] : [{ address, balance: balances[i]!.toString() }]));
}
