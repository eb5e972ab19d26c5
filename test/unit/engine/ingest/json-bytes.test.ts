import { describe, expect, it } from 'vitest';
import { FIXTURE_BLOCKS, bundle } from '../../../kit/fixtures.js';
import { PIECE_BYTES, parseJsonBytes } from '../../../../engine/ingest/json-bytes.js';

const bytes = (text: string): Uint8Array => Buffer.from(text, 'utf8');
/** Pads a JSON text past the piece size with a long member, so the cutting path runs. */
const big = (inner: string): string => `{"pad":"${'a'.repeat(PIECE_BYTES)}",${inner}}`;

describe('parseJsonBytes', () => {
  it('gives what JSON.parse gives for the 8 mainnet bundles as a node sends them', () => {
    let cut = 0;
    for (const b of FIXTURE_BLOCKS.map(bundle)) {
      for (const result of [b.block, b.receipts, b.traces]) {
        const text = JSON.stringify({ jsonrpc: '2.0', id: 1, result });
        if (text.length >= PIECE_BYTES) cut++;
        expect(parseJsonBytes(bytes(text))).toStrictEqual(JSON.parse(text));
      }
    }
    // Most answers are large enough to be cut into pieces.
    expect(cut).toBeGreaterThan(12);
  });

  it('cuts only at its own commas: strings with brackets, commas, quotes and backslashes, nesting, white space', () => {
    const members = [
      '"s":"a,b]}{[\\"x\\\\"',
      '"t":"\\\\"',
      '"e":"\\\\\\"],"',
      '"n":[1,[2,{"k":"v,]"}],{}]',
      '"o":{"a":{"b":[]}}',
      ' "w" : [ 1 , 2 ]\n',
      '"u":"\\u00e9\\ud83d\\ude00 é 😀"',
      '"nums":[-1.5e3,0,true,false,null]',
      `"long":[${Array.from({ length: 5000 }, (_, i) => `{"i":${i},"h":"0x${i.toString(16)}"}`).join(',')}]`,
    ];
    const text = big(members.join(','));
    expect(text.length).toBeGreaterThan(PIECE_BYTES);
    expect(parseJsonBytes(bytes(text))).toStrictEqual(JSON.parse(text));
    const array = `  [${Array.from({ length: 3000 }, (_, i) => `"${'x'.repeat(40)}${i}"`).join(' , ')}]  `;
    expect(parseJsonBytes(bytes(array))).toStrictEqual(JSON.parse(array));
  });

  it('keeps "__proto__" an own key, as JSON.parse does', () => {
    const text = big('"__proto__":{"polluted":true}');
    const parsed = parseJsonBytes(bytes(text)) as Record<string, unknown>;
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    expect(Object.keys(parsed)).toEqual(['pad', '__proto__']);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('refuses what is not JSON, small or large', () => {
    for (const text of [
      '{"a":',
      '[1,2',
      big('"a":[1,2'),
      big('"a":"open'),
      big('"a" 1'),
      big('1:2'),
      big('"a":[1,,2]'),
      `[${'1,'.repeat(PIECE_BYTES)}]`,
    ]) {
      expect(() => parseJsonBytes(bytes(text)), text.slice(-20)).toThrow(SyntaxError);
    }
  });

  it('reads a view into a larger buffer by its own bounds', () => {
    const text = big('"x":[1,2,3]');
    const outer = Buffer.from(`garbage${text}trailing`);
    expect(parseJsonBytes(outer.subarray(7, 7 + text.length))).toStrictEqual(JSON.parse(text));
  });
});
