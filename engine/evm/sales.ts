import type { BlockRecord } from './record.js';
import type { Transfer } from './transfer.js';

/**
 * NFT sales, decided at ingest from one transaction alone (no price feed, no
 * marketplace ABIs), so that a token's last sale is one index read. An NFT
 * transfer is a sale when it moves between two real accounts (neither a mint
 * nor a burn nor to itself) and its receiver, the buyer, pays in the same
 * transaction:
 *   - native: the buyer sent the transaction and it carries value; the price
 *     is the transaction's value;
 *   - otherwise ERC-20: the transaction's ERC-20 Transfers from the buyer, all
 *     of one token contract; the price is their sum (fees the buyer pays
 *     included). Payments in two or more tokens are not read as a price.
 * The seller is the NFT's sender. When a transaction moves several NFTs to
 * the buyer (a bundle), each is given the whole payment: one transaction
 * cannot say how its price splits.
 */
export interface Sale {
  transactionHash: string;
  /** The block's timestamp, unix seconds. */
  timestamp: number;
  buyer: string;
  seller: string;
  /** In the payment token's smallest unit, hex. */
  price: string;
  /** The ERC-20 contract paid in; null for the chain's native currency. */
  paymentToken: string | null;
}

const ZERO = '0x0000000000000000000000000000000000000000';
const lower = (v: unknown): string => String(v ?? '').toLowerCase();

/** The sales among a block's transfers (as transfersOf gives them), each with its NFT transfer. */
export function salesOf(r: BlockRecord, transfers: readonly Transfer[]): Array<{ transfer: Transfer; sale: Sale }> {
  const timestamp = Number(r.header['timestamp']);
  // Each transaction's ERC-20 transfers, so a block of many NFT transfers is read once.
  const erc20 = new Map<number, Transfer[]>();
  for (const x of transfers) {
    if (x.kind !== 'erc20') continue;
    const list = erc20.get(x.transactionIndex);
    if (list === undefined) erc20.set(x.transactionIndex, [x]);
    else list.push(x);
  }
  const out: Array<{ transfer: Transfer; sale: Sale }> = [];
  // One payment per (transaction, buyer): a TransferBatch of many ids to one buyer is priced once.
  const paidBy = new Map<string, Pick<Sale, 'price' | 'paymentToken'> | undefined>();
  for (const t of transfers) {
    if (t.kind === 'erc20') continue;
    const [buyer, seller] = [lower(t.to), lower(t.from)];
    if (seller === ZERO || buyer === ZERO || buyer === seller) continue;
    const at = `${t.transactionIndex}/${buyer}`;
    if (!paidBy.has(at)) {
      const tx = r.txs[t.transactionIndex]!.tx;
      paidBy.set(at, payment(erc20.get(t.transactionIndex) ?? [], buyer, lower(tx['from']), BigInt(String(tx['value'] ?? '0x0'))));
    }
    const paid = paidBy.get(at);
    if (paid !== undefined) out.push({ transfer: t, sale: { transactionHash: t.transactionHash, timestamp, buyer, seller, ...paid } });
  }
  return out;
}

/** What the buyer paid in the transaction (`erc20`: its ERC-20 transfers), by the rule above. */
function payment(
  erc20: readonly Transfer[],
  buyer: string,
  sender: string,
  value: bigint,
): Pick<Sale, 'price' | 'paymentToken'> | undefined {
  if (sender === buyer && value > 0n) return { price: `0x${value.toString(16)}`, paymentToken: null };
  const paid = erc20.filter((x) => lower(x.from) === buyer && BigInt(x.value) > 0n);
  const tokens = new Set(paid.map((x) => lower(x.contract)));
  if (tokens.size !== 1) return undefined;
  const price = paid.reduce((sum, x) => sum + BigInt(x.value), 0n);
  return { price: `0x${price.toString(16)}`, paymentToken: [...tokens][0]! };
}
