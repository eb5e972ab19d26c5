import { describe, expect, it } from 'vitest';
import { listOf, nextOffset, offsetPage, readCursor, readOffset, writeCursor } from '../../../../engine/crosschain/cursor.js';
import { refusal } from './refusal.js';

/** The one /v1 cursor: bound to its list, any position; a cursor not of this API or of another list is a 400 naming cursor. */

const anyPosition = () => true;
const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64url');

describe('cursor', () => {
  it('reads back the position it was written with, for the list it was made for', () => {
    const list = listOf('x', { a: 1 });
    const at = { p: 3, c: { '0x1': 'k', bitcoin: null } };
    expect(readCursor(writeCursor(list, at), list, anyPosition)).toEqual(at);
    // A position's own `l` cannot rebind it to another list.
    expect(readCursor(writeCursor(list, { l: 'other', o: 1 }), list, anyPosition)).toEqual({ o: 1 });
  });

  it('refuses a cursor of another list, and one that is no cursor, naming cursor', () => {
    const c = writeCursor(listOf('x', { wallet: 'a' }), { o: 2 });
    const other = refusal(() => readCursor(c, listOf('x', { wallet: 'b' }), anyPosition));
    expect(other).toEqual({ status: 400, details: { field: 'cursor' }, message: expect.stringContaining('another list') });
    for (const raw of ['nope', '', b64('[1]'), b64('null'), b64('{"o":2}'), b64('{"l":1,"o":2}'), b64('{"l":"x"')]) {
      expect(
        refusal(() => readCursor(raw, 'x', anyPosition)),
        raw,
      ).toEqual({ status: 400, details: { field: 'cursor' }, message: expect.stringContaining('not a cursor') });
    }
    // The list is right but the position is not one the caller wrote.
    expect(refusal(() => readCursor(writeCursor('x', { o: 'two' }), 'x', (at) => typeof at.o === 'number')).details).toEqual({
      field: 'cursor',
    });
  });

  it("keys a list by its parts; a query's cursor and limit are not part of it", () => {
    expect(listOf('t', { w: 'a', cursor: 'c1', limit: 1 }, ['0x1'])).toBe(listOf('t', { w: 'a', cursor: null, limit: 50 }, ['0x1']));
    expect(listOf('t', { w: 'a' })).not.toBe(listOf('t', { w: 'b' }));
    expect(listOf('t', { w: 'a' }, ['0x1'])).not.toBe(listOf('t', { w: 'a' }, ['0x1', '0x2']));
    expect(listOf('t', { w: 'a' })).not.toBe(listOf('u', { w: 'a' }));
  });

  it('pages a list computed whole by offset, each page once, and refuses the cursor on another list', () => {
    const all = Array.from({ length: 7 }, (_, i) => i);
    const seen: number[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const p: ReturnType<typeof offsetPage<number>> = offsetPage(all, { list: 'l', limit: 3, cursor });
      expect(p.start).toBe(pages * 3);
      seen.push(...p.page);
      cursor = p.cursor;
      pages++;
    } while (cursor !== null);
    expect([seen, pages]).toEqual([all, 3]);
    expect(nextOffset('l', 3, 3, 6)).toBeNull();
    expect(readOffset(null, 'l')).toBe(0);
    const second = offsetPage(all, { list: 'l', limit: 3, cursor: null }).cursor!;
    expect(readOffset(second, 'l')).toBe(3);
    expect(refusal(() => readOffset(second, 'm')).details).toEqual({ field: 'cursor' });
    for (const o of [-1, 1.5, '3', null])
      expect(refusal(() => readOffset(writeCursor('l', { o }), 'l')).details).toEqual({ field: 'cursor' });
  });
});
