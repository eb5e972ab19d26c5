import fc from 'fast-check';

/**
 * Any code point but a surrogate, as one-character strings: fast-check's `unit: 'binary'`, the same values for the same
 * seed, but its reverse mapping (what fc.string tokenizes its odd strings with) computed from the value, not a map of
 * all 1,112,064 built when fast-check's binary unit is first used. `fc.string({ unit: codePoint })` for binary strings.
 */
const SURROGATES = 0xe000 - 0xd800;
export const codePoint = fc.nat({ max: 0x10ffff - SURROGATES }).map(
  (n) => String.fromCodePoint(n < 0xd800 ? n : n + SURROGATES),
  (v) => {
    const c = typeof v === 'string' ? v.codePointAt(0) : undefined;
    if (c === undefined || String.fromCodePoint(c) !== v || (c >= 0xd800 && c < 0xe000)) throw new Error('not one code point');
    return c < 0xd800 ? c : c - SURROGATES;
  },
);
