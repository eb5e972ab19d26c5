/**
 * bench:data's floor for GET /erc20/:address/transfers: the same answer, byte for byte, from the same store and
 * layout, at the least cost JavaScript can write it here. Bare uWebSockets.js, no key, no validation, no rate
 * limit, no metrics; a page is one lmdb-js range over the token's Transfer rows (`contractLogs` `t/` keys, read
 * as bytes), each row's value bytes written straight into the answer's text: no objects, no JSON.stringify. Block
 * and token fields are read once and kept. What it reaches is the most the real server could, on this machine,
 * with this layout (bench/data.ts checks the answers are the same, then measures both).
 */
import type { RootDatabase } from 'lmdb';
import uWS from 'uWebSockets.js';
import { TRANSFER } from '../engine/evm/store.js';
import { IndexedBlocks } from '../engine/data-api/common/indexed-blocks.js';
import { formatted } from '../engine/data-api/common/values.js';
import { hexKeyBytes } from '../storage/hex-keys.js';
import { openStore } from '../storage/env.js';

const CHAIN = '0x1';
const LIMIT = 25;
const store = openStore(process.env['CHAINPOST_DATA']!);
const blocks = new IndexedBlocks();
const hexSlice = (Buffer.prototype as unknown as { hexSlice: (this: Uint8Array, start: number, end: number) => string }).hexSlice;

/**
 * A `t/` value, [tx, ti, [topic0, topic1, topic2], data], as storage/codec.ts writes it: each hex string a msgpack
 * ext 8 (0xc7, length, type, bytes). Written as the transaction's hash (the first 66 characters of the text before
 * the value) then the item's parties, the value, and the text after it (its index): the value apart, as its
 * value_decimal depends on the token's decimals; undefined for a Transfer log that is no ERC-20 one (an NFT's: four
 * topics).
 */
function transferText(b: Uint8Array): [before: string, value: bigint, after: string] | undefined {
  let p = 1;
  const tx = hexSlice.call(b, p + 3, p + 3 + b[p + 1]!);
  p += 3 + b[p + 1]!;
  let ti: number;
  const m = b[p]!;
  if (m < 0x80) (ti = m), (p += 1);
  else if (m === 0xcc) (ti = b[p + 1]!), (p += 2);
  else if (m === 0xcd) (ti = (b[p + 1]! << 8) | b[p + 2]!), (p += 3);
  else throw new Error(`data-floor: transaction index ${m} not read`);
  if (b[p] !== 0x93) return undefined;
  p += 1;
  p += 3 + b[p + 1]!;
  const from = hexSlice.call(b, p + 15, p + 35);
  p += 3 + b[p + 1]!;
  const to = hexSlice.call(b, p + 15, p + 35);
  p += 3 + b[p + 1]!;
  const value = BigInt(`0x${hexSlice.call(b, p + 3, p + 3 + b[p + 1]!)}`);
  return [
    `0x${tx}"to_address_entity":null,"to_address_entity_logo":null,"to_address":"0x${to}","to_address_label":null,"from_address_entity":null,"from_address_entity_logo":null,"from_address":"0x${from}","from_address_label":null`,
    value,
    `,"transaction_index":${ti}`,
  ];
}

// Decoded in place by lmdb-js (the bytes are its shared buffer): the text is all that is kept. A table's handle opens
// another on the same environment.
const rows = (store.db('contractLogs') as unknown as RootDatabase).openDB<ReturnType<typeof transferText>, Buffer>({
  name: 'contractLogs',
  keyEncoding: 'binary',
  encoder: {
    encode: () => {
      throw new Error('read only');
    },
    decode: (b: Uint8Array, size?: number) => transferText(b.subarray(0, size ?? b.length)),
  },
} as never);

const tokens = new Map<string, { head: string; spam: boolean; decimals: number | null }>();
function token(address: string): { head: string; spam: boolean; decimals: number | null } {
  let t = tokens.get(address);
  if (t === undefined) {
    const info = store.get<{ name: string | null; symbol: string | null; decimals: number | null; possibleSpam: boolean }>(
      'tokens',
      `${CHAIN}/${address}`,
    );
    t = {
      head: `"token_name":${JSON.stringify(info?.name ?? null)},"token_symbol":${JSON.stringify(info?.symbol ?? null)},"token_logo":null,"token_decimals":"${info?.decimals ?? 0}"`,
      spam: info?.possibleSpam ?? false,
      decimals: info?.decimals ?? null,
    };
    tokens.set(address, t);
  }
  return t;
}

const app = uWS.App().get('/api/v2.2/erc20/:address/transfers', (res, req) => {
  const address = req.getParameter(0)!;
  const prefix = hexKeyBytes(`${CHAIN}/t/${address}/${TRANSFER}/`);
  const { head, spam, decimals } = token(address);
  let out = '';
  let n = 0;
  let last: Buffer | undefined;
  for (const { key, value } of rows.getRange({
    start: Buffer.concat([prefix, Buffer.from([0xff])]),
    end: prefix,
    reverse: true,
    limit: LIMIT + 1,
  })) {
    if (n === LIMIT) break;
    if (value === undefined) continue;
    // The key's tail, pos() as storage/hex-keys.ts writes it: the block number (marker, length, 6 bytes), `/`, then
    // the log index (marker, length, 3 bytes).
    const number = key.readUIntBE(key.length - 12, 6);
    const logIndex = key.readUIntBE(key.length - 3, 3);
    const block = blocks.get(store, CHAIN, number)!;
    const [before, raw, after] = value;
    const valueDecimal = decimals === null ? 'null' : `"${formatted(raw, decimals)}"`;
    out += `${n++ === 0 ? '' : ','}{${head},"transaction_hash":"${before.slice(0, 66)}","address":"${address}","block_timestamp":"${block.iso}","block_number":"${number}","block_hash":"${block.hash}",${before.slice(66)},"value":"${raw}","value_decimal":${valueDecimal}${after},"log_index":${logIndex},"possible_spam":${spam},"verified_contract":false}`;
    last = key;
  }
  const cursor = n === LIMIT && last !== undefined ? `"${last.toString('base64url')}"` : 'null';
  res.writeStatus('200 OK');
  res.writeHeader('content-type', 'application/json');
  res.end(`{"page":0,"page_size":${LIMIT},"cursor":${cursor},"result":[${out}]}`);
});
app.listen('127.0.0.1', 0, (socket) => {
  if (socket === false) {
    process.stderr.write('data-floor: cannot listen\n');
    process.exit(1);
  }
  process.stdout.write(`${JSON.stringify({ msg: 'listening', port: uWS.us_socket_local_port(socket as unknown as uWS.us_socket) })}\n`);
});
process.on('SIGTERM', () => process.exit(0));
