import { BACKSLASH, CLOSE_ARRAY, CLOSE_OBJECT, COLON, COMMA, OPEN_ARRAY, OPEN_OBJECT, QUOTE } from '../ingest/json-bytes.js';
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

/** Buffer's own latin1 slice, without toString's argument handling (an answer has ~100,000 keys). */
const latin1 = (b: Buffer, start: number, end: number): string => (b as unknown as { latin1Slice(s: number, e: number): string }).latin1Slice(start, end);

/** A byte a JSON number may hold. */
const isNumberByte = (c: number | undefined): boolean => c !== undefined && ((c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45);

/** The keys the scan reads (any other is OTHER_KEY and stepped over), by length and first byte. */
const KEYS = new Map<number, string[]>();
for (const k of ['result', 'error', 'tx', 'hash', 'previousblockhash', 'merkleroot', 'bits', 'height', 'time', 'version', 'nonce', 'nTx', 'size', 'strippedsize', 'weight', 'txid', 'vsize', 'locktime', 'vin', 'vout', 'coinbase', 'scriptSig', 'txinwitness', 'sequence', 'prevout', 'value', 'scriptPubKey', 'hex']) {
  const at = (k.length << 8) | k.charCodeAt(0);
  KEYS.set(at, [...(KEYS.get(at) ?? []), k]);
}
const OTHER_KEY = '';

/** Each byte's value as a hex digit, 0x100 for any other byte (shifted left by 4 it still shows above 0xff). */
const HEX_VALUE = new Uint16Array(256).fill(0x100);
for (let d = 0; d < 16; d++) {
  HEX_VALUE['0123456789abcdef'.charCodeAt(d)] = d;
  HEX_VALUE['0123456789ABCDEF'.charCodeAt(d)] = d;
}

class Scanner {
  at = 0;
  /** Where decoded hex goes: one buffer for the whole block (its scripts are views into it), not one per script. */
  private readonly arena: Buffer;
  private used = 0;

  constructor(readonly b: Buffer) {
    // Hex is at most half the body.
    this.arena = Buffer.allocUnsafeSlow(b.length >> 1);
  }

  fail(what: string): never {
    throw new CoreScanError(`getblock answer: ${what} at byte ${this.at}`);
  }

  /** The next byte that is not white space (not consumed). */
  peek(): number {
    const b = this.b;
    let c = b[this.at];
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = b[++this.at];
    if (c === undefined) this.fail('unexpected end');
    return c;
  }

  expect(c: number): void {
    if (this.peek() !== c) this.fail(`expected ${String.fromCharCode(c)}`);
    this.at++;
  }

  /** Where the last string read by stringRange starts (its end is what stringRange answered). */
  private start = 0;

  /** Steps over a string; answers where its characters end (the closing quote), `start` where they start. Escapes are left as they are. */
  stringRange(): number {
    this.expect(QUOTE);
    const start = (this.start = this.at);
    const b = this.b;
    // indexOf is memchr: most of the answer is long strings (asm, desc, hex) stepped over here.
    for (let end = b.indexOf(QUOTE, start); ; end = b.indexOf(QUOTE, end + 1)) {
      if (end < 0) this.fail('unterminated string');
      let slashes = 0;
      while (b[end - 1 - slashes] === BACKSLASH) slashes++;
      if (slashes % 2 === 0) {
        this.at = end + 1;
        return end;
      }
    }
  }

  string(): string {
    const e = this.stringRange();
    const s = this.start;
    return latin1(this.b, s, e);
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

  /**
   * An object's key as one of KEYS (the same string each time, so comparing it is comparing pointers), or
   * OTHER_KEY: an answer has ~100,000 keys, and a string made of each was a good part of the scan's garbage.
   */
  key(): string {
    const e = this.stringRange();
    const s = this.start;
    const b = this.b;
    const known = KEYS.get(((e - s) << 8) | b[s]!);
    if (known !== undefined) {
      next: for (const k of known) {
        for (let i = 1; i < k.length; i++) if (b[s + i] !== k.charCodeAt(i)) continue next;
        return k;
      }
    }
    return OTHER_KEY;
  }

  /** A number's text. */
  numberText(): string {
    this.peek();
    const start = this.at;
    const b = this.b;
    while (isNumberByte(b[this.at])) this.at++;
    if (this.at === start) this.fail('expected a number');
    return latin1(b, start, this.at);
  }

  /** An integer read from its digits (no string made); other number forms through their text. */
  int(): number {
    const start = this.at;
    const n = this.digits();
    if (isNumberByte(this.b[this.at])) {
      this.at = start;
      return Number(this.numberText());
    }
    return n;
  }

  /** BTC as Core writes it (digits, a point, up to 8 decimals) in satoshis, exactly, read from the digits. */
  sats(): number {
    const start = this.at;
    const whole = this.digits();
    let fraction = 0;
    let places = 0;
    if (this.b[this.at] === 0x2e) {
      this.at++;
      for (let c = this.b[this.at]; c !== undefined && c >= 0x30 && c <= 0x39 && places < 9; c = this.b[++this.at], places++) fraction = fraction * 10 + c - 0x30;
    }
    // Anything else (an exponent, a sign, more than 8 decimals: not Core's output) through the double (exact for every valid amount).
    if (places > 8 || isNumberByte(this.b[this.at])) {
      this.at = start;
      return btcToSats(Number(this.numberText()));
    }
    return whole * 1e8 + fraction * 10 ** (8 - places);
  }

  /** The value of the digits at `at` (at least one), stepped over. */
  private digits(): number {
    this.peek();
    const b = this.b;
    const start = this.at;
    let n = 0;
    for (let c = b[this.at]; c !== undefined && c >= 0x30 && c <= 0x39; c = b[++this.at]) n = n * 10 + c - 0x30;
    if (this.at === start && !isNumberByte(b[this.at])) this.fail('expected a number');
    return n;
  }

  /** Skips any JSON value. */
  skip(): void {
    const c = this.peek();
    if (c === QUOTE) {
      this.stringRange();
      return;
    }
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      // Strings may hold brackets: they are stepped over as strings.
      let depth = 0;
      const b = this.b;
      do {
        const d = b[this.at];
        if (d === undefined) this.fail('unterminated value');
        if (d === QUOTE) {
          this.stringRange();
          continue;
        }
        if (d === OPEN_OBJECT || d === OPEN_ARRAY) depth++;
        else if (d === CLOSE_OBJECT || d === CLOSE_ARRAY) depth--;
        this.at++;
      } while (depth > 0);
      return;
    }
    if (c === 0x6e || c === 0x74) this.at += 4; // null, true
    else if (c === 0x66) this.at += 5; // false
    else this.numberText();
  }

  isNull(): boolean {
    if (this.peek() !== 0x6e) return false;
    this.at += 4;
    return true;
  }

  /** Calls `field` with each key of an object (it must consume the value: read or skip it). */
  object(field: (key: string) => void): void {
    this.expect(OPEN_OBJECT);
    if (this.peek() === CLOSE_OBJECT) {
      this.at++;
      return;
    }
    for (;;) {
      const key = this.key();
      this.expect(COLON);
      field(key);
      const c = this.peek();
      this.at++;
      if (c === CLOSE_OBJECT) return;
      if (c !== COMMA) this.fail('expected , or }');
    }
  }

  array<T>(item: () => T): T[] {
    const out: T[] = [];
    this.expect(OPEN_ARRAY);
    if (this.peek() === CLOSE_ARRAY) {
      this.at++;
      return out;
    }
    for (;;) {
      out.push(item());
      const c = this.peek();
      this.at++;
      if (c === CLOSE_ARRAY) return out;
      if (c !== COMMA) this.fail('expected , or ]');
    }
  }
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
