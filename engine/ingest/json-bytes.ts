import { isAscii } from 'node:buffer';

/**
 * JSON.parse of a response body given as bytes, without ever making one
 * string of the whole body. V8 puts a string of more than ~128 KB in its
 * large-object space, fresh pages each time: decoding a 0.2–1 MB body that way
 * ran at ~0.2 GB/s here against ~10 GB/s below that size, and cost more than
 * the parse itself (per block of answers 2.6 ms to decode, 1.6 ms to parse).
 * So a large array or object is cut at its own commas into members, each
 * decoded and parsed alone (large members cut again). The value is the one
 * JSON.parse gives for the same text.
 */
export function parseJsonBytes(body: Uint8Array): unknown {
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  // Cuts fall on structural characters (ASCII), so each piece of UTF-8 text decodes on its own.
  const encoding = isAscii(bytes) ? 'latin1' : 'utf8';
  return value(bytes, encoding, 0, bytes.length);
}

/** Below this many bytes a piece is decoded and parsed whole (V8's large-object limit is 128 KB of one-byte string). */
export const PIECE_BYTES = 64 * 1024;

/** JSON's structural bytes (engine/bitcoin/core-scan.ts reads them too). */
export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
export const COLON = 0x3a;
export const OPEN_OBJECT = 0x7b;
export const CLOSE_OBJECT = 0x7d;
export const OPEN_ARRAY = 0x5b;
export const CLOSE_ARRAY = 0x5d;

type Encoding = 'latin1' | 'utf8';

function value(b: Buffer, encoding: Encoding, from: number, to: number): unknown {
  if (to - from < PIECE_BYTES) return JSON.parse(b.toString(encoding, from, to));
  const start = skipSpace(b, from, to);
  const end = skipSpaceBack(b, start, to);
  const open = b[start];
  if ((open !== OPEN_OBJECT && open !== OPEN_ARRAY) || b[end - 1] !== (open === OPEN_OBJECT ? CLOSE_OBJECT : CLOSE_ARRAY)) {
    // A long string or number: one piece (and JSON.parse's own error if it is not JSON).
    return JSON.parse(b.toString(encoding, from, to));
  }
  const parts = members(b, start + 1, end - 1);
  if (open === OPEN_ARRAY) {
    const out: unknown[] = [];
    for (let i = 0; i + 1 < parts.length; i += 2) out.push(value(b, encoding, parts[i]!, parts[i + 1]!));
    return out;
  }
  const out: Record<string, unknown> = {};
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const colon = memberColon(b, parts[i]!, parts[i + 1]!);
    const key = JSON.parse(b.toString(encoding, parts[i]!, colon)) as unknown;
    if (typeof key !== 'string') throw new SyntaxError(`JSON: an object key at byte ${parts[i]} is not a string`);
    const v = value(b, encoding, colon + 1, parts[i + 1]!);
    // As JSON.parse does, "__proto__" is an own property, not the prototype.
    if (key === '__proto__') Object.defineProperty(out, key, { value: v, writable: true, enumerable: true, configurable: true });
    else out[key] = v;
  }
  return out;
}

/**
 * The members of a container's inside [from, to), as start/end offsets, cut at the commas at its own depth
 * (strings skipped with indexOf, which is native). An empty inside has no members.
 */
function members(b: Buffer, from: number, to: number): number[] {
  const cuts: number[] = [];
  if (skipSpace(b, from, to) === to) return cuts;
  let depth = 0;
  let start = from;
  for (let i = from; i < to; i++) {
    const c = b[i]!;
    if (c === QUOTE) i = stringEnd(b, i, to);
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) depth++;
    else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) depth--;
    else if (c === COMMA && depth === 0) {
      cuts.push(start, i);
      start = i + 1;
    }
  }
  if (depth !== 0) throw new SyntaxError(`JSON: unbalanced brackets between bytes ${from} and ${to}`);
  cuts.push(start, to);
  return cuts;
}

/** The offset of the closing quote of the string opening at `at`. */
function stringEnd(b: Buffer, at: number, to: number): number {
  let i = at;
  for (;;) {
    i = b.indexOf(QUOTE, i + 1);
    if (i < 0 || i >= to) throw new SyntaxError(`JSON: a string opened at byte ${at} does not end`);
    // Escaped when preceded by an odd run of backslashes.
    let k = i - 1;
    while (b[k] === BACKSLASH) k--;
    if ((i - 1 - k) % 2 === 0) return i;
  }
}

/** The colon after an object member's key. */
function memberColon(b: Buffer, from: number, to: number): number {
  const key = skipSpace(b, from, to);
  if (b[key] !== QUOTE) throw new SyntaxError(`JSON: expected a key at byte ${key}`);
  const colon = skipSpace(b, stringEnd(b, key, to) + 1, to);
  if (b[colon] !== COLON) throw new SyntaxError(`JSON: expected ':' at byte ${colon}`);
  return colon;
}

const isSpace = (c: number | undefined): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

function skipSpace(b: Buffer, from: number, to: number): number {
  let i = from;
  while (i < to && isSpace(b[i])) i++;
  return i;
}

function skipSpaceBack(b: Buffer, from: number, to: number): number {
  let i = to;
  while (i > from && isSpace(b[i - 1])) i--;
  return i;
}

/** The `result` of a JSON-RPC response body (an error one is refused: the node answered with an error). */
export function resultOf<T>(body: Uint8Array): T {
  const envelope = parseJsonBytes(body) as { result?: T; error?: { message?: string } | null };
  // Bitcoin Core writes `"error": null` beside a result.
  if (envelope.error !== undefined && envelope.error !== null)
    throw new Error(`the node answered with an error: ${String(envelope.error.message)}`);
  return envelope.result as T;
}
