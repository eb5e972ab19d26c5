import { BACKSLASH, CLOSE_ARRAY, CLOSE_OBJECT, COLON, COMMA, OPEN_ARRAY, OPEN_OBJECT, QUOTE } from './json-bytes.js';

/** Buffer's own latin1 slice, without toString's argument handling (an answer has ~100,000 keys). */
export const latin1 = (b: Buffer, start: number, end: number): string =>
  (b as unknown as { latin1Slice(s: number, e: number): string }).latin1Slice(start, end);

/**
 * A JSON reader straight over a response body's bytes, for answers of several
 * MB of which a record keeps a small part (Bitcoin Core's getblock, Solana's
 * getBlock): one pass that reads the fields a caller asks for and steps over
 * the rest without making a string or an object of them (long strings by
 * memchr). Parsed whole, such an answer cost several times what its record
 * needs, in the parse and in garbage collection.
 */

export class JsonScanner {
  at = 0;
  constructor(
    readonly b: Buffer,
    /** The error a malformed answer is reported with (the message says what and at which byte). */
    private readonly error: (message: string) => Error,
  ) {}

  fail(what: string): never {
    throw this.error(`${what} at byte ${this.at}`);
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

  /** Where the characters of the string stringRange last stepped over start. */
  start = 0;

  /**
   * Steps over a string: answers where its characters end (the closing quote) and sets `start` to where they
   * start (no pair made for each of an answer's ~200,000 strings). Escapes are left as they are.
   */
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

  /**
   * An object's key: the string made once and found again by a hash of its bytes (an answer has ~100,000 keys,
   * a few dozen distinct; making each with a call into the runtime cost more than reading the rest of a
   * transaction). The same string as string() gives.
   */
  key(): string {
    return this.interned(KEYS, 4096);
  }

  /**
   * A short string that answers repeat (Solana's program ids, sysvars, fee payers across slots): made once and
   * found again by a hash of its bytes, as keys are, among up to `max` kept in `cache` (emptied when full).
   */
  interned(cache: Map<number, string>, max: number): string {
    this.expect(QUOTE);
    const b = this.b;
    const start = this.at;
    let h = 0;
    let i = start;
    for (let c = b[i]; c !== QUOTE && c !== BACKSLASH && c !== undefined; c = b[++i]) h = (Math.imul(h, 31) + c) | 0;
    if (b[i] !== QUOTE || i - start > 64) {
      this.at = start - 1;
      return this.string();
    }
    const len = i - start;
    h = (h ^ Math.imul(len, 0x9e3779b1)) | 0;
    let text = cache.get(h);
    if (text === undefined || !sameText(text, b, start, len)) {
      text = latin1(b, start, i);
      if (cache.size >= max) cache.clear();
      cache.set(h, text);
    }
    this.at = i + 1;
    return text;
  }

  string(): string {
    const end = this.stringRange();
    return latin1(this.b, this.start, end);
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

  /** A number: plain digits (nearly every number in an answer) summed here, anything else through Number() of its text. */
  int(): number {
    const b = this.b;
    let c = this.peek();
    const start = this.at;
    let v = 0;
    for (; c >= 0x30 && c <= 0x39; c = b[++this.at]!) v = v * 10 + (c - 0x30);
    // A sign, a fraction, an exponent, or past 2^53: the text, as JSON.parse reads it.
    if (c === 0x2d || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || this.at - start > 15 || this.at === start) {
      this.at = start;
      return Number(this.numberText());
    }
    return v;
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
    if (c === 0x6e || c === 0x74)
      this.at += 4; // null, true
    else if (c === 0x66)
      this.at += 5; // false
    else this.numberText();
  }

  /** Any JSON value's text, as it stands in the answer (UTF-8). */
  raw(): string {
    this.peek();
    const from = this.at;
    this.skip();
    return this.b.toString('utf8', from, this.at);
  }

  isNull(): boolean {
    if (this.peek() !== 0x6e) return false;
    this.at += 4;
    return true;
  }

  /** Calls `field` with each key of an object (it must consume the value: read or skip it). */
  object(field: (key: string) => void): void {
    for (let key = this.firstKey(); key !== null; key = this.nextKey()) field(key);
  }

  /**
   * object() without a closure per object, for the hottest loops:
   * `for (let k = s.firstKey(); k !== null; k = s.nextKey())`, each value read or skipped in the body.
   */
  firstKey(): string | null {
    this.expect(OPEN_OBJECT);
    if (this.peek() === CLOSE_OBJECT) {
      this.at++;
      return null;
    }
    const key = this.key();
    this.expect(COLON);
    return key;
  }

  nextKey(): string | null {
    const c = this.peek();
    this.at++;
    if (c === CLOSE_OBJECT) return null;
    if (c !== COMMA) this.fail('expected , or }');
    const key = this.key();
    this.expect(COLON);
    return key;
  }

  /** array() without a closure: `for (let more = s.firstItem(); more; more = s.nextItem())`, each item read in the body. */
  firstItem(): boolean {
    this.expect(OPEN_ARRAY);
    if (this.peek() !== CLOSE_ARRAY) return true;
    this.at++;
    return false;
  }

  nextItem(): boolean {
    const c = this.peek();
    this.at++;
    if (c === CLOSE_ARRAY) return false;
    if (c !== COMMA) this.fail('expected , or ]');
    return true;
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

/** A byte a JSON number may hold. */
export const isNumberByte = (c: number | undefined): boolean =>
  c !== undefined && ((c >= 0x30 && c <= 0x39) || c === 0x2d || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45);

/** Keys seen, by hash of their bytes (shared by every scan: answers of one kind name the same keys). */
const KEYS = new Map<number, string>();

function sameText(text: string, b: Buffer, start: number, len: number): boolean {
  if (text.length !== len) return false;
  for (let k = 0; k < len; k++) if (text.charCodeAt(k) !== b[start + k]) return false;
  return true;
}
