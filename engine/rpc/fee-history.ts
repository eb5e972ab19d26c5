import type { Json } from '../evm/record.js';
import type { RecordView } from '../evm/record-view.js';
import type { Held } from './held.js';
import { quantity } from './methods.js';

/**
 * eth_feeHistory from stored headers, transactions and receipts, by anvil's
 * rules (its fee-history cache): the only node whose rules chainpost knows for
 * this method, so other nodes answer it themselves. Those rules, kept as they
 * are because the answer must be the node's own:
 * - at most 1024 blocks, none older than 2048 below the latest;
 * - a block's reward at percentile p is read at round(p), walking the
 *   transactions by rising tip and summing the gas each used until
 *   floor(round(p) · gasUsed / 100) is reached; 0 for an empty block;
 * - the base fee appended after the range is the one for the block after the
 *   node's latest, whatever the range (so the latest block must be held).
 * Blob fees are read only where no blob gas was used or in excess (they are
 * then 1, or 0 before Cancun); anything else goes to the node.
 */
const MAX_BLOCKS = 1024;
const WINDOW = 2048;

export function feeHistoryFromStore(held: Held, params: readonly unknown[]): Json | undefined {
  const [countParam, newestParam, percentilesParam, ...more] = params;
  const count = typeof countParam === 'number' ? countParam : quantity(countParam);
  // Absent is none; null is not (anvil refuses it).
  const percentiles = percentilesParam === undefined ? [] : percentilesParam;
  if (more.length > 0 || count === undefined || !Number.isSafeInteger(count) || count < 1) return undefined;
  if (!Array.isArray(percentiles) || !percentiles.every((p): p is number => typeof p === 'number')) return undefined;
  const latest = held.latest;
  const newest = held.number(newestParam);
  if (latest === undefined || newest === undefined || newest > latest) return undefined;
  const oldest = Math.max(0, newest - (Math.min(count, MAX_BLOCKS) - 1));
  if (oldest < latest - WINDOW || !held.holds(oldest, newest) || !held.holds(latest, latest)) return undefined;

  const out = {
    baseFeePerGas: [] as string[],
    gasUsedRatio: [] as number[],
    baseFeePerBlobGas: [] as string[],
    blobGasUsedRatio: [] as number[],
    oldestBlock: hex(BigInt(oldest)),
    reward: [] as string[][],
  };
  for (let n = oldest; n <= newest; n++) {
    const view = held.record(n);
    const fees = view === undefined ? undefined : blockFees(view);
    if (fees === undefined) return undefined;
    out.baseFeePerGas.push(hex(fees.baseFee));
    out.gasUsedRatio.push(fees.gasUsed / fees.gasLimit);
    out.baseFeePerBlobGas.push(fees.blobFee);
    out.blobGasUsedRatio.push(0);
    if (percentiles.length > 0) {
      const rewards = blockRewards(view!, fees.baseFee, fees.gasUsed, percentiles);
      if (rewards === undefined) return undefined;
      out.reward.push(rewards);
    }
  }
  const last = held.record(latest);
  const next = last === undefined ? undefined : blockFees(last);
  if (next === undefined) return undefined;
  out.baseFeePerGas.push(hex(nextBaseFee(next.gasUsed, next.gasLimit, next.baseFee)));
  out.baseFeePerBlobGas.push(next.blobFee);
  return out;
}

interface BlockFees {
  baseFee: bigint;
  gasUsed: number;
  gasLimit: number;
  /** The blob base fee: 1 from Cancun on (the header has excessBlobGas), 0 before. */
  blobFee: string;
}

/** A block's fee figures; undefined before London, or where blob gas was used or in excess (see above). */
function blockFees(view: RecordView): BlockFees | undefined {
  const h = view.header;
  const { baseFeePerGas, gasUsed, gasLimit, blobGasUsed, excessBlobGas } = h as Record<string, unknown>;
  if (typeof baseFeePerGas !== 'string' || typeof gasUsed !== 'string' || typeof gasLimit !== 'string') return undefined;
  if ((blobGasUsed !== undefined && Number(blobGasUsed) !== 0) || (excessBlobGas !== undefined && Number(excessBlobGas) !== 0))
    return undefined;
  return {
    baseFee: BigInt(baseFeePerGas),
    gasUsed: Number(gasUsed),
    gasLimit: Number(gasLimit),
    blobFee: excessBlobGas === undefined ? '0x0' : '0x1',
  };
}

function blockRewards(view: RecordView, baseFee: bigint, gasUsed: number, percentiles: readonly number[]): string[] | undefined {
  const txs: Array<{ gas: bigint; tip: bigint }> = [];
  for (let i = 0; i < view.txCount; i++) {
    const tip = effectiveTip(view.tx(i), baseFee);
    if (tip === undefined) return undefined;
    txs.push({ gas: BigInt(view.receipt(i)['gasUsed'] as string), tip });
  }
  // A stable sort, as Rust's sort_by: equal tips keep their order in the block.
  txs.sort((a, b) => (a.tip < b.tip ? -1 : a.tip > b.tip ? 1 : 0));
  return percentiles.map((p) => {
    const target = BigInt(Math.floor((Math.round(Math.min(100, Math.max(0, p))) * gasUsed) / 100));
    let sum = 0n;
    for (const t of txs) {
      sum += t.gas;
      if (target <= sum) return hex(t.tip);
    }
    return '0x0';
  });
}

/** What the block's producer earned per gas of a transaction, by type; undefined for a type not known here. */
function effectiveTip(tx: Json, baseFee: bigint): bigint | undefined {
  const big = (k: string): bigint => BigInt(tx[k] as string);
  const less = (a: bigint, b: bigint): bigint => (a > b ? a - b : 0n);
  switch (tx['type']) {
    case '0x0':
    case '0x1':
      return less(big('gasPrice'), baseFee);
    case '0x2':
    case '0x3':
    case '0x4': {
      const cap = less(big('maxFeePerGas'), baseFee);
      const tip = big('maxPriorityFeePerGas');
      return tip < cap ? tip : cap;
    }
    case '0x7e':
      return 0n;
    default:
      return undefined;
  }
}

/** EIP-1559's base fee for the next block (elasticity 2, change denominator 8), in integers as nodes compute it. */
export function nextBaseFee(gasUsed: number, gasLimit: number, baseFee: bigint): bigint {
  if (baseFee === 0n) return 0n;
  const target = BigInt(Math.floor(gasLimit / 2));
  const used = BigInt(gasUsed);
  if (target === 0n || used === target) return baseFee;
  if (used > target) {
    const delta = (baseFee * (used - target)) / (target * 8n);
    return baseFee + (delta > 1n ? delta : 1n);
  }
  const delta = (baseFee * (target - used)) / (target * 8n);
  return delta > baseFee ? 0n : baseFee - delta;
}

const hex = (v: bigint): string => `0x${v.toString(16)}`;
