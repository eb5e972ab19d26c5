import { QUOTE } from '../ingest/json-bytes.js';
import { isNumberByte, JsonScanner } from '../ingest/json-scan.js';
import { btcToSats } from './core-json.js';
import { COINBASE_VOUT, ZERO_HASH, type BtcBlock, type BtcHeader, type BtcInput, type BtcOutput, type BtcTransaction } from './block.js';

/**
 * Bitcoin Core's getblock answer (verbosity 2 or 3, a JSON-RPC response body)
 * read straight from its bytes into a BtcBlock: one pass that keeps the fields
 * a record holds and steps over the rest (asm, desc, address, type, each
 * transaction's raw hex) without making a string or an object of them. A
 * mainnet block's answer is 5–10 MB of JSON, most of it text the record does
 * not keep: parsed whole, it made the worker pool's time per block (and its
 * garbage collection) several times what the record needs. Amounts are read
 * from their decimal digits into satoshis, with no float between.
 */
export class CoreScanError extends Error {
  override name = 'CoreScanError';
}

/** Core's answer read with the shared scanner, plus the hex and BTC amounts only Core's answer has. */
class Scanner extends JsonScanner {
  /** Where decoded hex goes: one buffer for the whole block (its scripts are views into it), not one per script. */
  private readonly arena: Buffer;
  private used = 0;

  constructor(b: Buffer) {
    super(b, (message) => new CoreScanError(`getblock answer: ${message}`));
    // Hex is at most half the body.
    this.arena = Buffer.allocUnsafeSlow(b.length >> 1);
  }

  /** A hex string's bytes (a view into the block's arena), decoded from the answer's bytes: no string is made of it. */
  hex(): Buffer {
    const e = this.stringRange();
    const s = this.start;
    if ((e - s) & 1) this.fail('not hex');
    const b = this.b;
    const out = this.arena;
    const start = this.used;
    let o = start;
    let bad = 0;
    for (let i = s; i < e; i += 2) {
      const v = (HEX_VALUE[b[i]!]! << 4) | HEX_VALUE[b[i + 1]!]!;
      // A non-hex digit's value is 0x100: it sets a bit the byte cannot hold.
      bad |= v;
      out[o++] = v;
    }
    if (bad > 0xff) this.fail('not hex');
    this.used = o;
    return out.subarray(start, o);
  }

  /** BTC as Core writes it (digits, a point, up to 8 decimals) in satoshis, exactly, read from the digits. */
  sats(): number {
    const b = this.b;
    this.peek();
    const start = this.at;
    let whole = 0;
    for (let c = b[this.at]; c !== undefined && c >= 0x30 && c <= 0x39; c = b[++this.at]) whole = whole * 10 + c - 0x30;
    let fraction = 0;
    let places = 0;
    if (this.at > start && b[this.at] === 0x2e) {
      this.at++;
      for (let c = b[this.at]; c !== undefined && c >= 0x30 && c <= 0x39 && places < 9; c = b[++this.at], places++)
        fraction = fraction * 10 + c - 0x30;
    }
    // Anything else (an exponent, a sign, more than 8 decimals: not Core's output) through the double (exact for every valid amount).
    if (this.at === start || places > 8 || isNumberByte(b[this.at])) {
      this.at = start;
      return btcToSats(Number(this.numberText()));
    }
    return whole * 1e8 + fraction * 10 ** (8 - places);
  }
}

/** Each byte's value as a hex digit, 0x100 for any other byte (shifted left by 4 it still shows above 0xff). */
const HEX_VALUE = new Uint16Array(256).fill(0x100);
for (let d = 0; d < 16; d++) {
  HEX_VALUE['0123456789abcdef'.charCodeAt(d)] = d;
  HEX_VALUE['0123456789ABCDEF'.charCodeAt(d)] = d;
}

/** The block of a getblock response body; null when its result is null. A JSON-RPC error in it is thrown. */
export function scanCoreBlock(body: Uint8Array): BtcBlock | null {
  const s = new Scanner(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
  let block: BtcBlock | null = null;
  let error: string | undefined;
  s.object((key) => {
    if (key === 'result') block = s.isNull() ? null : scanBlock(s);
    else if (key === 'error') {
      if (s.isNull()) return;
      const from = s.at;
      s.skip();
      error = s.b.toString('utf8', from, s.at);
    } else s.skip();
  });
  if (error !== undefined) throw new Error(`the node answered with an error: ${error}`);
  return block;
}

const HEADER_NUMBERS = new Set(['height', 'time', 'version', 'nonce', 'nTx', 'size', 'strippedsize', 'weight']);

function scanBlock(s: Scanner): BtcBlock {
  const h: Record<string, string | number> = { previousblockhash: ZERO_HASH };
  let txs: BtcTransaction[] = [];
  s.object((key) => {
    if (key === 'tx') txs = s.array(() => scanTx(s));
    else if (key === 'hash' || key === 'previousblockhash' || key === 'merkleroot') h[key] = s.string();
    else if (key === 'bits') h['bits'] = Number.parseInt(s.string(), 16);
    else if (HEADER_NUMBERS.has(key)) h[key] = s.int();
    else s.skip();
  });
  for (const k of ['hash', 'height', 'time', 'merkleroot', 'bits', 'version', 'nonce', 'nTx', 'size', 'strippedsize', 'weight']) {
    if (h[k] === undefined) s.fail(`the block has no ${k}`);
  }
  return { header: h as unknown as BtcHeader, txs };
}

function scanTx(s: Scanner): BtcTransaction {
  if (s.peek() === QUOTE) s.fail('transactions are ids only (verbosity 1): ask for verbosity 2 or 3');
  const t: Partial<BtcTransaction> = {};
  s.object((key) => {
    switch (key) {
      case 'txid':
      case 'hash':
        t[key] = s.string();
        break;
      case 'version':
      case 'size':
      case 'vsize':
      case 'weight':
      case 'locktime':
        t[key] = s.int();
        break;
      case 'vin':
        t.vin = s.array(() => scanInput(s));
        break;
      case 'vout':
        t.vout = s.array(() => scanOutput(s));
        break;
      default:
        s.skip();
    }
  });
  if (t.txid === undefined || t.vin === undefined || t.vout === undefined) s.fail('a transaction without txid, vin or vout');
  t.hash ??= t.txid;
  // A coinbase input has no txid and vout: it kept the placeholders.
  t.isCoinbase = t.vin.length === 1 && t.vin[0]!.vout === COINBASE_VOUT && t.vin[0]!.txid === ZERO_HASH;
  return t as BtcTransaction;
}

const EMPTY = Buffer.alloc(0);

function scanInput(s: Scanner): BtcInput {
  const i: BtcInput = { txid: ZERO_HASH, vout: COINBASE_VOUT, scriptSig: EMPTY, sequence: 0, witness: [], prevout: undefined };
  s.object((key) => {
    switch (key) {
      case 'txid':
        i.txid = s.string();
        break;
      case 'vout':
        i.vout = s.int();
        break;
      case 'coinbase':
        i.scriptSig = s.hex();
        break;
      case 'scriptSig':
        i.scriptSig = scanScript(s);
        break;
      case 'txinwitness':
        i.witness = s.array(() => s.hex());
        break;
      case 'sequence':
        i.sequence = s.int();
        break;
      case 'prevout':
        i.prevout = scanOutput(s);
        break;
      default:
        s.skip();
    }
  });
  return i;
}

/** An output (`vout`) or a spent one (`prevout`): its value and its script. */
function scanOutput(s: Scanner): BtcOutput {
  let value = 0;
  let script: Uint8Array = EMPTY;
  s.object((key) => {
    if (key === 'value') value = s.sats();
    else if (key === 'scriptPubKey') script = scanScript(s);
    else s.skip();
  });
  return { value, script };
}

/** A script object's `hex` (the rest, asm, desc, address and type, stepped over). */
function scanScript(s: Scanner): Uint8Array {
  let script: Uint8Array = EMPTY;
  s.object((k) => (k === 'hex' ? (script = s.hex()) : s.skip()));
  return script;
}
