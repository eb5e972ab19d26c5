import { ExtData, ExtensionCodec, decode, encode } from '@msgpack/msgpack';

/**
 * Compact storage of JSON-RPC values (blocks, receipts, logs, traces) that
 * comes back exactly: even-length hex strings ("0x" data and most quantities)
 * are stored as their bytes; odd-length quantities as integers when exact, else
 * as their nibbles; known field names as one-byte numbers. Decoding writes the
 * very same strings back (node output is lower-case hex), so a round trip is
 * exact; anything else is kept as it is.
 */
const KEYS = [
  'hash', 'parentHash', 'number', 'timestamp', 'miner', 'gasUsed', 'gasLimit', 'baseFeePerGas', 'difficulty', 'totalDifficulty',
  'extraData', 'logsBloom', 'mixHash', 'nonce', 'receiptsRoot', 'sha3Uncles', 'size', 'stateRoot', 'transactionsRoot', 'uncles',
  'withdrawals', 'withdrawalsRoot', 'blobGasUsed', 'excessBlobGas', 'parentBeaconBlockRoot', 'requestsHash', 'from', 'to', 'gas',
  'gasPrice', 'maxFeePerGas', 'maxPriorityFeePerGas', 'input', 'value', 'type', 'v', 'r', 's', 'yParity', 'chainId', 'accessList',
  'address', 'storageKeys', 'contractAddress', 'cumulativeGasUsed', 'effectiveGasPrice', 'status', 'root', 'logs', 'topics', 'data',
  'removed', 'calls', 'output', 'error', 'revertReason', 'index', 'validatorIndex', 'amount', 'blobVersionedHashes', 'maxFeePerBlobGas',
  'blobGasPrice', 'authorizationList', 'receipt', 'traceAddress', 'txIndex', 'transactions', 'internal',
] as const;

const KEY_INDEX = new Map<string, number>(KEYS.map((k, i) => [k, i]));
const EXT_ODD_HEX = 1;
const EXT_NUMBER = 2;

const extensions = new ExtensionCodec();
// An odd-length quantity too large for a double: its nibbles, with the leading zero nibble implied.
// (Encoding writes ExtData directly; these only decode.)
extensions.register({ type: EXT_ODD_HEX, encode: () => null, decode: (data: Uint8Array) => new OddHex(`0x${Buffer.from(data).toString('hex').slice(1)}`) });
// A JSON number that really is a number (a plain integer on the wire means a hex quantity).
extensions.register({ type: EXT_NUMBER, encode: () => null, decode: (data: Uint8Array) => new JsonNumber(Buffer.from(data).readDoubleBE(0)) });

class OddHex {
  constructor(readonly text: string) {}
}
class JsonNumber {
  constructor(readonly value: number) {}
}

const EVEN_HEX = /^0x(?:[0-9a-f]{2})*$/;
const ODD_QUANTITY = /^0x[1-9a-f][0-9a-f]*$/;

// On the wire an object is an array: a marker, then key, value, key, value…; a plain
// array that happens to start with a marker is escaped by another marker.
const OBJ = '\u0000o';
const ARR = '\u0000a';

/** One pass from a JSON-RPC value to what msgpack writes. */
function toWire(v: unknown): unknown {
  if (typeof v === 'string') {
    if (v.length >= 2 && EVEN_HEX.test(v)) return Buffer.from(v.slice(2), 'hex');
    if (ODD_QUANTITY.test(v)) {
      const n = parseInt(v, 16);
      return Number.isSafeInteger(n) ? n : new ExtData(EXT_ODD_HEX, Buffer.from(`0${v.slice(2)}`, 'hex'));
    }
    return v;
  }
  if (typeof v === 'number') {
    const b = Buffer.alloc(8);
    b.writeDoubleBE(v, 0);
    return new ExtData(EXT_NUMBER, b);
  }
  if (Array.isArray(v)) {
    const mapped = v.map(toWire);
    return mapped[0] === OBJ || mapped[0] === ARR ? [ARR, ...mapped] : mapped;
  }
  if (v !== null && typeof v === 'object') {
    const out: unknown[] = [OBJ];
    for (const [k, val] of Object.entries(v)) out.push(KEY_INDEX.get(k) ?? k, toWire(val));
    return out;
  }
  return v;
}

/** Values → msgpack bytes. */
export function encodeRpc(value: unknown): Uint8Array {
  return encode(toWire(value), { extensionCodec: extensions });
}

/** msgpack bytes → the values, with every hex string as it was. */
export function decodeRpc<T>(bytes: Uint8Array): T {
  return fromWire(decode(bytes, { extensionCodec: extensions })) as T;
}

function fromWire(v: unknown): unknown {
  if (v instanceof Uint8Array) return `0x${Buffer.from(v).toString('hex')}`;
  if (v instanceof OddHex) return v.text;
  if (v instanceof JsonNumber) return v.value;
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return `0x${v.toString(16)}`;
  if (Array.isArray(v)) {
    if (v[0] === OBJ) {
      const o: Record<string, unknown> = {};
      for (let i = 1; i < v.length; i += 2) {
        const k = v[i];
        o[typeof k === 'number' ? KEYS[k]! : String(k)] = fromWire(v[i + 1]);
      }
      return o;
    }
    return (v[0] === ARR ? v.slice(1) : v).map(fromWire);
  }
  return v;
}

