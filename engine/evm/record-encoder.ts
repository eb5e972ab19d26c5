import { encodeWire, type WireWriter } from './codec.js';
import { HEADER_DROP, LOG_DROP, RECEIPT_DROP, TX_DROP, receiptLogs, type BlockRecord, type Json } from './record.js';

/**
 * The stored record written straight from the node's answers: the very bytes
 * encodeRecord(normalizeBlock(…)) gives, without building the normalized
 * objects first (a copy of every transaction, receipt and log). The record's
 * shape is fixed here: {header, txs: [{tx, receipt, logs}], internal}.
 * The caller has checked the answers (checkedTxs): `txs` are the block's
 * transactions, `receipts` theirs in order.
 */
export function encodeNodeRecord(
  block: Json,
  txs: readonly Json[],
  receipts: readonly Json[],
  internal: BlockRecord['internal'],
): Uint8Array {
  return encodeWire((w) => {
    w.objectHeader(3);
    w.key('header');
    w.object(block, HEADER_DROP);
    w.key('txs');
    w.arrayHeader(txs.length);
    for (let i = 0; i < txs.length; i++) writeTx(w, txs[i]!, receipts[i]!);
    w.key('internal');
    w.value(internal);
  });
}

function writeTx(w: WireWriter, tx: Json, receipt: Json): void {
  w.objectHeader(3);
  w.key('tx');
  w.object(tx, TX_DROP);
  w.key('receipt');
  w.object(receipt, RECEIPT_DROP);
  w.key('logs');
  const logs = receiptLogs(receipt);
  w.arrayHeader(logs.length);
  for (const l of logs) w.object(l, LOG_DROP);
}
