import { decodeEventLog, parseAbi, zeroAddress as ZERO, type Hex } from 'viem';
import { ERC20_ABI } from './contracts.js';

/**
 * What the chain itself says an NFT's transfers are: a plain scan of a node's
 * block and receipts JSON, decoded with viem's ABI decoder (not the ingest
 * decoder), shaped as the NFT transfer record; and the sale rule of
 * engine/evm/sales.ts written again over the same JSON. The unit tests run
 * it on the mainnet fixtures, the end-to-end tests on anvil's blocks.
 */
export const NFT_ABI = parseAbi([
  'event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)',
  'event TransferSingle(address indexed operator, address indexed from, address indexed to, uint256 id, uint256 value)',
  'event TransferBatch(address indexed operator, address indexed from, address indexed to, uint256[] ids, uint256[] values)',
]);
export { ERC20_ABI, ZERO };

export type Json = Record<string, any>;
export interface Scanned {
  contract: string;
  tokenId: bigint;
  /** block, log index, batch position: the order of a token's history. */
  at: [number, number, number];
  record: Json;
  txFrom: string;
  txValue: bigint;
}

/** The NFT transfers of a node's block and receipts, as the NFT transfer record should show them. */
export function scan(block: Json, receipts: Json[]): Scanned[] {
  const out: Scanned[] = [];
  receipts.forEach((receipt, txIndex) => {
    const tx = block['transactions'][txIndex];
    for (const log of receipt['logs'] as Json[]) {
      let decoded: { eventName: string; args: Json };
      try {
        decoded = decodeEventLog({ abi: NFT_ABI, topics: log['topics'] as [Hex], data: log['data'] as Hex }) as never;
      } catch {
        continue; // not an NFT event (or an ERC-20 Transfer: three topics)
      }
      const a = decoded.args;
      const moves: Array<[bigint, bigint, boolean]> =
        decoded.eventName === 'Transfer'
          ? [[a['tokenId'], 1n, false]]
          : decoded.eventName === 'TransferSingle'
            ? [[a['id'], a['value'], false]]
            : (a['ids'] as bigint[]).map((id, i) => [id, (a['values'] as bigint[])[i]!, true]);
      moves.forEach(([tokenId, amount, batch], position) => {
        const contract = String(log['address']).toLowerCase();
        const logIndex = Number(log['logIndex']);
        out.push({
          contract,
          tokenId,
          at: [Number(block['number']), logIndex, batch ? position : 0],
          txFrom: String(tx['from']).toLowerCase(),
          txValue: BigInt(tx['value']),
          record: {
            token_address: contract,
            token_id: tokenId.toString(),
            from_address_entity: null,
            from_address_entity_logo: null,
            from_address: String(a['from']).toLowerCase(),
            from_address_label: null,
            to_address_entity: null,
            to_address_entity_logo: null,
            to_address: String(a['to']).toLowerCase(),
            to_address_label: null,
            value: BigInt(tx['value']).toString(),
            amount: amount.toString(),
            contract_type: decoded.eventName === 'Transfer' ? 'ERC721' : 'ERC1155',
            block_number: String(Number(block['number'])),
            block_timestamp: new Date(Number(block['timestamp']) * 1000).toISOString(),
            block_hash: block['hash'],
            transaction_hash: tx['hash'],
            transaction_type: batch ? 'Batch' : 'Single',
            transaction_index: String(txIndex),
            log_index: String(logIndex),
            operator: decoded.eventName === 'Transfer' ? null : String(a['operator']).toLowerCase(),
            possible_spam: 'false',
            verified_collection: 'false',
          },
        });
      });
    }
  });
  return out;
}

/** The sale rule of engine/evm/sales.ts, written again over the node's JSON: what each NFT transfer was paid, if anything. */
export function paid(s: Scanned, receipts: Json[]): { price: bigint; token: string | null } | undefined {
  const buyer = s.record['to_address'];
  const seller = s.record['from_address'];
  if (buyer === ZERO || seller === ZERO || buyer === seller) return undefined;
  if (s.txFrom === buyer && s.txValue > 0n) return { price: s.txValue, token: null };
  const payments = (receipts[Number(s.record['transaction_index'])]!['logs'] as Json[]).flatMap((log) => {
    try {
      const { args } = decodeEventLog({
        abi: ERC20_ABI,
        eventName: 'Transfer',
        topics: log['topics'] as [Hex],
        data: log['data'] as Hex,
        strict: true,
      }) as { args: { from: string; value: bigint } };
      return args.from.toLowerCase() === buyer && args.value > 0n
        ? [{ token: String(log['address']).toLowerCase(), value: args.value }]
        : [];
    } catch {
      return [];
    }
  });
  const tokens = new Set(payments.map((p) => p.token));
  return tokens.size === 1 ? { price: payments.reduce((sum, p) => sum + p.value, 0n), token: [...tokens][0]! } : undefined;
}

export const byPosition = (a: Scanned, b: Scanned): number => a.at[0] - b.at[0] || a.at[1] - b.at[1] || a.at[2] - b.at[2];
