import type { Kv } from '../ports.js';
import type { BtcTransaction } from './block.js';
import type { BtcRecordView } from './record.js';
import { classifyScript } from './script.js';

/**
 * Bitcoin's address indexes, which the cross-chain API's wallets read: each
 * address's transactions, its unspent outputs (hence its balance), and each
 * transaction's block. The rows are worked out in the worker that prepares a
 * block (an address is a hash and an encoding per output), written with the
 * block record in the follower's own unit, and taken back by its rollback.
 *
 *   btcAddressTxs  chain/address/height(8 hex)/txIndex(6 hex) → txid    (outputs paid to it, outputs it spent)
 *   btcUtxos       chain/address/txid:vout → [sats, height]
 *   btcTxs         chain/txid → height
 *
 * An input whose spent output is unknown (a node without getblock 3 or
 * -txindex, above where this server started) has no address: its output's
 * row cannot be found to remove, and /health counts such inputs.
 */

/** What a block adds to the indexes, as keys below the chain (worked out in the worker pool, which knows no chain). */
export interface AddressRows {
  /** btcAddressTxs keys → txid. */
  txs: Array<[key: string, txid: string]>;
  /** btcUtxos rows the block creates: key → sats. */
  created: Array<[key: string, sats: number]>;
  /** btcUtxos keys the block spends. */
  spent: string[];
  /** The block's txids, in order (btcTxs rows → its height). */
  txids: string[];
}

const hex = (n: number, width: number): string => n.toString(16).padStart(width, '0');
const addressTxKey = (address: string, height: number, txIndex: number): string => `${address}/${txPlace(height, txIndex)}`;
const utxoKey = (address: string, txid: string, vout: number): string => `${address}/${txid}:${vout}`;
const inChain = (chain: string, key: string): string => `${chain}/${key}`;

/** The address an input spends from, when its spent output is known and has one. */
const spentFrom = (input: BtcTransaction['vin'][number]): string | undefined =>
  input.prevout === undefined ? undefined : classifyScript(input.prevout.script).address;

/** The rows block `height` adds, from its transactions (spent outputs resolved); `first`: the index in the block of txs[0]. */
export function addressRows(height: number, txs: readonly BtcTransaction[], first = 0): AddressRows {
  const rows: AddressRows = { txs: [], created: [], spent: [], txids: [] };
  txs.forEach((t, i) => {
    rows.txids.push(t.txid);
    const touched = new Set<string>();
    for (const input of t.vin) {
      const address = spentFrom(input);
      if (address === undefined) continue;
      touched.add(address);
      rows.spent.push(utxoKey(address, input.txid, input.vout));
    }
    t.vout.forEach((o, vout) => {
      const { address } = classifyScript(o.script);
      if (address === undefined) return;
      touched.add(address);
      rows.created.push([utxoKey(address, t.txid, vout), o.value]);
    });
    for (const address of touched) rows.txs.push([addressTxKey(address, height, first + i), t.txid]);
  });
  return rows;
}

/**
 * Writes a block's rows (inside the unit that writes its record). No reads: an output created and spent
 * within one unit is put, then removed, in that order, which LMDB keeps.
 */
export function writeAddressRows(kv: Kv, chain: string, height: number, rows: AddressRows): void {
  for (const txid of rows.txids) kv.put('btcTxs', inChain(chain, txid), height);
  for (const [key, sats] of rows.created) kv.put('btcUtxos', inChain(chain, key), [sats, height]);
  for (const key of rows.spent) kv.remove('btcUtxos', inChain(chain, key));
  for (const [key, txid] of rows.txs) kv.put('btcAddressTxs', inChain(chain, key), txid);
}

/**
 * Takes block `view` out of the indexes (a reorg; inside its transaction, highest block first): its
 * transactions last first, each removing what it created and putting back what it spent, at the height
 * of the transaction that made it. An output made earlier in the same block is put back, then removed
 * with its maker, which comes later in this order.
 */
export function removeAddressRows(kv: Kv, chain: string, view: BtcRecordView): void {
  const height = view.header.height;
  for (let i = view.txCount - 1; i >= 0; i--) {
    const t = view.tx(i);
    const rows = addressRows(height, [t], i);
    for (const [key] of rows.created) kv.remove('btcUtxos', inChain(chain, key));
    for (const [key] of rows.txs) kv.remove('btcAddressTxs', inChain(chain, key));
    for (const input of t.vin) {
      const address = spentFrom(input);
      const madeAt = address === undefined ? undefined : kv.get<number>('btcTxs', inChain(chain, input.txid));
      if (madeAt !== undefined)
        kv.put('btcUtxos', inChain(chain, utxoKey(address!, input.txid, input.vout)), [input.prevout!.value, madeAt]);
    }
    kv.remove('btcTxs', inChain(chain, t.txid));
  }
}

export interface Utxo {
  txid: string;
  vout: number;
  sats: number;
  height: number;
}

/** An address's unspent outputs, in key order, at most `limit`. */
export function utxosOf(kv: Kv, chain: string, address: string, limit = Number.MAX_SAFE_INTEGER): Utxo[] {
  const prefix = inChain(chain, `${address}/`);
  return kv.range<[number, number]>('btcUtxos', { start: prefix, end: `${prefix}\uffff`, limit }).map(({ key, value }) => {
    const [txid, vout] = key.slice(prefix.length).split(':') as [string, string];
    return { txid, vout: Number(vout), sats: value[0], height: value[1] };
  });
}

/** An address's balance in satoshis: the sum of its unspent outputs. */
export const balanceOf = (kv: Kv, chain: string, address: string): number => utxosOf(kv, chain, address).reduce((s, u) => s + u.sats, 0);

/** How many transactions touched the address. */
export function transferCount(kv: Kv, chain: string, address: string): number {
  const prefix = inChain(chain, `${address}/`);
  return kv.count('btcAddressTxs', { start: prefix, end: `${prefix}\uffff` });
}

/** A transaction's place in an address's list (height/index in the block): the same for every address it touched. */
export const txPlace = (height: number, txIndex: number): string => `${hex(height, 8)}/${hex(txIndex, 6)}`;

/**
 * An address's transactions, newest first: txid, block height and index in the block; with `before` (a txPlace),
 * only those strictly before that place, and with `low`/`high` (txPlaces), those from low up to, not with, high.
 */
export function addressTxs(
  kv: Kv,
  chain: string,
  address: string,
  limit: number,
  bounds: { before?: string | undefined; low?: string | undefined; high?: string | undefined } = {},
): Array<{ txid: string; height: number; index: number }> {
  const prefix = inChain(chain, `${address}/`);
  const high = [bounds.before, bounds.high].filter((b) => b !== undefined).sort()[0];
  // The range's start is inclusive in reverse: an upper bound is read from just below it.
  const start = high === undefined ? `${prefix}\uffff` : `${prefix}${high}`;
  const rows = kv.range<string>('btcAddressTxs', { start, end: `${prefix}${bounds.low ?? ''}`, reverse: true, limit: limit + 1 });
  return rows
    .filter((r) => r.key !== start && r.key >= `${prefix}${bounds.low ?? ''}`)
    .slice(0, limit)
    .map(({ key, value }) => {
      const [height, index] = key.slice(prefix.length).split('/') as [string, string];
      return { txid: value, height: parseInt(height, 16), index: parseInt(index, 16) };
    });
}

/** The block height of a transaction this server indexed (undefined: not in a block it followed). */
export const txHeight = (kv: Kv, chain: string, txid: string): number | undefined => kv.get<number>('btcTxs', inChain(chain, txid));

/** Whether output `vout` of `txid`, paid to `address`, is still unspent (its btcUtxos row stands). */
export const isUnspent = (kv: Kv, chain: string, address: string, txid: string, vout: number): boolean =>
  kv.get<[number, number]>('btcUtxos', inChain(chain, utxoKey(address, txid, vout))) !== undefined;
