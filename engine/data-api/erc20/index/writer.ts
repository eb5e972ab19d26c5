import { inBatches } from '../../common/node-reads.js';
import { decodeFunctionResult, encodeFunctionData, parseAbi } from 'viem/utils';
import type { Hex } from 'viem';
import { topicAddress, word, type Transfer } from '../../../evm/store.js';
import type { BlockRecord } from '../../../evm/record.js';
import type { Kv } from '../../../ports.js';
import type { IndexDeps } from '../../common/deps.js';
import type { DataIndex, IndexedBlock, IndexWriter } from '../../common/indexer.js';
import {
  approvalKey,
  balanceKey,
  DAY,
  dayKey,
  deltaKey,
  hex,
  holderKey,
  searchKey,
  searchTerms,
  tokenKey,
  walletTransferKey,
  type ApprovalRow,
  type TokenState,
} from './keys.js';
import { ZERO_ADDRESS } from '../../common/values.js';

/**
 * The ERC-20 indexes, one DataIndex: balances by (wallet, token) and holders by
 * token ordered by balance, holder counts (a row per day and a delta per
 * block), token state (supply, creation), the latest approval per (owner,
 * token, spender), the ERC-20-only transfers of each wallet, and the search
 * terms of each token.
 *
 * A balance is right from any start block: the first time a pair appears its
 * balance is read with balanceOf at the block before (in `prepare`, off the
 * write transaction), then moved by each transfer; a token created in the
 * indexed range starts everyone at 0 without a call. The supply is read the
 * same way, once per token, and moved by mints and burns.
 */

export const APPROVAL = '0x8c5be1e5ebec7d5bd14f71427d1e84f3dd0314c0f7b2291e5b200ac8c7c3b925';
const ABI = parseAbi(['function balanceOf(address) view returns (uint256)', 'function totalSupply() view returns (uint256)']);

interface Prepared {
  /** `token/wallet` → balance at the block before the pair's first transfer. */
  balances: Map<string, bigint>;
  /** token → totalSupply at the block before its first transfer. */
  supplies: Map<string, bigint>;
  /** token → name and symbol for the search index. */
  names: Map<string, { name: string; symbol: string }>;
}

const lower = (a: string): string => a.toLowerCase();
const erc20Of = (b: IndexedBlock): Transfer[] => b.transfers.filter((t) => t.kind === 'erc20');

/** Contracts a block creates: receipts' contractAddress, and CREATE/CREATE2 frames of the call tracer when there is one. */
export function createdContracts(r: BlockRecord): string[] {
  const out: string[] = [];
  for (const t of r.txs)
    if (typeof t.receipt['contractAddress'] === 'string' && t.receipt['status'] !== '0x0') out.push(lower(t.receipt['contractAddress']));
  for (const c of r.internal ?? [])
    if ((c.type === 'CREATE' || c.type === 'CREATE2') && c.to !== null && c.error === undefined) out.push(lower(c.to));
  return out;
}

/** A uint256 view at a block; 0 when the contract reverts or the node keeps no state there (documented: such a pair starts at 0). */
async function readUint(
  deps: IndexDeps,
  chain: string,
  token: string,
  data: Hex,
  block: number,
  fn: 'balanceOf' | 'totalSupply',
): Promise<bigint> {
  const out = await deps.reads.call(chain, token, data, Math.max(block, 0));
  if (out === null || out === '0x') return 0n;
  try {
    return decodeFunctionResult({ abi: ABI, functionName: fn, data: out }) as bigint;
  } catch {
    return 0n;
  }
}

export function erc20Index(deps: IndexDeps): DataIndex<Prepared> {
  return {
    name: 'erc20',
    async prepare(blocks, kv) {
      const chain = blocks[0]!.chain;
      const created = new Set<string>();
      const jobs: Array<() => Promise<void>> = [];
      const p: Prepared = { balances: new Map(), supplies: new Map(), names: new Map() };
      // Each token's row read once per batch (a busy token has many transfers in it).
      const states = new Map<string, TokenState | undefined>();
      const stored = (token: string): TokenState | undefined => {
        if (!states.has(token)) states.set(token, kv.get<TokenState>('erc20Tokens', tokenKey(chain, token)));
        return states.get(token);
      };
      const isCreated = (token: string): boolean => created.has(token) || stored(token)?.created === true;
      const planned = new Set<string>();
      for (const b of blocks) {
        for (const c of createdContracts(b.record)) created.add(c);
        for (const t of erc20Of(b)) {
          const state = stored(t.contract);
          if (state?.named !== true && !planned.has(`name/${t.contract}`)) {
            planned.add(`name/${t.contract}`);
            jobs.push(async () => {
              const info = await deps.tokens.get(chain, t.contract);
              p.names.set(t.contract, { name: info.name, symbol: info.symbol });
            });
          }
          if (isCreated(t.contract)) continue;
          if (state === undefined && !planned.has(t.contract)) {
            planned.add(t.contract);
            const data = encodeFunctionData({ abi: ABI, functionName: 'totalSupply' });
            jobs.push(
              async () => void p.supplies.set(t.contract, await readUint(deps, chain, t.contract, data, b.number - 1, 'totalSupply')),
            );
          }
          for (const wallet of [t.from, t.to]) {
            const pair = `${t.contract}/${wallet}`;
            if (wallet === ZERO_ADDRESS || planned.has(pair) || kv.has('erc20Pairs', balanceKey(chain, wallet, t.contract))) continue;
            planned.add(pair);
            const data = encodeFunctionData({ abi: ABI, functionName: 'balanceOf', args: [wallet as Hex] });
            jobs.push(async () => void p.balances.set(pair, await readUint(deps, chain, t.contract, data, b.number - 1, 'balanceOf')));
          }
        }
      }
      await inBatches(jobs);
      return p;
    },
    apply(w, block, p) {
      const chain = block.chain;
      for (const c of createdContracts(block.record)) {
        if (w.get<TokenState>('erc20Tokens', tokenKey(chain, c)) === undefined) {
          w.put('erc20Tokens', tokenKey(chain, c), {
            supply: '0x0',
            holders: 0,
            created: true,
            createdBlock: block.number,
            createdAt: block.timestamp,
          } satisfies TokenState);
        }
      }
      const transfers = erc20Of(block);
      const holderDelta = new Map<string, number>();
      // Each token's row is read and written once per block.
      const states = new Map<string, TokenState>();
      for (const t of transfers) {
        const state = states.get(t.contract) ?? tokenState(w, chain, t.contract, p);
        states.set(t.contract, state);
        const value = BigInt(t.value);
        let change = 0;
        if (t.from === ZERO_ADDRESS) state.supply = hex(BigInt(state.supply) + value);
        else change += move(w, chain, t.contract, t.from, -value, state, p);
        if (t.to === ZERO_ADDRESS) state.supply = hex(BigInt(state.supply) > value ? BigInt(state.supply) - value : 0n);
        else change += move(w, chain, t.contract, t.to, value, state, p);
        state.holders += change;
        holderDelta.set(t.contract, (holderDelta.get(t.contract) ?? 0) + change);
        walletTransfers(w, block, t);
      }
      for (const [token, state] of states) w.put('erc20Tokens', tokenKey(chain, token), state);
      for (const [token, delta] of holderDelta) recordHolderCount(w, block, token, states.get(token)!.holders, delta);
      approvals(w, block);
    },
  };
}

/** The token's state, made on its first transfer (supply as read) and its search terms written once its name is known. */
function tokenState(w: IndexWriter, chain: string, token: string, p: Prepared): TokenState {
  const state = w.get<TokenState>('erc20Tokens', tokenKey(chain, token)) ?? {
    supply: hex(p.supplies.get(token) ?? 0n),
    holders: 0,
    created: false,
  };
  const named = p.names.get(token);
  if (state.named !== true && named !== undefined) {
    for (const term of searchTerms(named.name, named.symbol, token)) w.put('erc20Search', searchKey(chain, term, token), 0);
    state.named = true;
  }
  return state;
}

/** Moves a wallet's balance (its first appearance starts from the balance read, or 0 in a created token); returns the holder count's change. */
function move(w: IndexWriter, chain: string, token: string, wallet: string, delta: bigint, state: TokenState, p: Prepared): number {
  const key = balanceKey(chain, wallet, token);
  const known = w.has('erc20Pairs', key);
  const stored = w.get<string>('erc20Balances', key);
  const before = known ? BigInt(stored ?? '0x0') : state.created ? 0n : (p.balances.get(`${token}/${wallet}`) ?? 0n);
  // A balance the node could not tell (no state at that block) started at 0: never below it.
  const after = before + delta < 0n ? 0n : before + delta;
  if (!known) w.put('erc20Pairs', key, 0);
  if (after > 0n) w.put('erc20Balances', key, hex(after));
  else w.remove('erc20Balances', key);
  // A pair seen the first time with a balance is a holder the list and the count did not have yet.
  const wasHolder = known && before > 0n;
  if (wasHolder) w.remove('erc20Holders', holderKey(chain, token, before, wallet));
  if (after > 0n) w.put('erc20Holders', holderKey(chain, token, after, wallet), 0);
  return (after > 0n ? 1 : 0) - (wasHolder ? 1 : 0);
}

/** The transfer under its from and its to: the token's address, which with the key's position finds its log row (`contractLogs`). */
function walletTransfers(w: IndexWriter, block: IndexedBlock, t: Transfer): void {
  for (const wallet of new Set([t.from, t.to]))
    w.put('erc20Wallet', walletTransferKey(block.chain, wallet, block.number, t.logIndex), t.contract);
}

/** The day's holder count (the count after this block) and the block's delta, for the holder series and changes. */
function recordHolderCount(w: IndexWriter, block: IndexedBlock, token: string, holders: number, delta: number): void {
  if (delta === 0) return;
  w.put('erc20HolderDays', dayKey(block.chain, token, Math.floor(block.timestamp / DAY)), holders);
  const key = deltaKey(block.chain, token, block.timestamp, block.number);
  w.put('erc20HolderDeltas', key, (w.get<number>('erc20HolderDeltas', key) ?? 0) + delta);
}

/** Approval(owner, spender, value) with 3 topics (ERC-721's has 4): the latest per (owner, token, spender). */
function approvals(w: IndexWriter, block: IndexedBlock): void {
  block.record.txs.forEach((tx) => {
    for (const l of tx.logs) {
      if (l.topics[0] !== APPROVAL || l.topics.length !== 3 || l.data.length < 66) continue;
      const key = approvalKey(block.chain, topicAddress(l.topics[1]), lower(l.address), topicAddress(l.topics[2]));
      const value = BigInt(word(l.data, 0));
      if (value === 0n) {
        w.remove('erc20Approvals', key);
        continue;
      }
      const row: ApprovalRow = {
        value: hex(value),
        blockNumber: block.number,
        blockHash: block.hash,
        timestamp: block.timestamp,
        transactionHash: String(tx.tx['hash']),
        logIndex: Number(l.logIndex),
      };
      w.put('erc20Approvals', key, row);
    }
  });
}

/** Holders of a token at `at` (unix seconds): the count at the end of the day before, plus that day's block deltas up to `at`. */
export function holdersAt(kv: Kv, chain: string, token: string, at: number): number {
  const day = Math.floor(at / DAY);
  const dayRow = (d: number): number =>
    kv.range<number>('erc20HolderDays', { start: dayKey(chain, token, d), end: `${chain}/${token}/`, reverse: true, limit: 1 })[0]?.value ??
    0;
  // The end of a day is its row: no deltas to read.
  if ((at + 1) % DAY === 0) return dayRow(day);
  let count = dayRow(day - 1);
  const from = deltaKey(chain, token, day * DAY, 0);
  const to = deltaKey(chain, token, at + 1, 0);
  for (const { value } of kv.range<number>('erc20HolderDeltas', { start: from, end: to })) count += value;
  return count;
}
