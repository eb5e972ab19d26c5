import { describe, expect, it } from 'vitest';
import { InFlight, Lru, type CachedAnswer } from '../../../../engine/rpc/share.js';

describe('InFlight', () => {
  it('runs one start per key while it is pending, then starts anew', async () => {
    const f = new InFlight<number>();
    let starts = 0;
    let release!: (v: number) => void;
    const start = () => {
      starts++;
      return new Promise<number>((r) => (release = r));
    };
    const a = f.run('k', start);
    const b = f.run('k', start);
    const other = f.run('other', () => Promise.resolve(9));
    expect([a.shared, b.shared, other.shared]).toEqual([false, true, false]);
    expect(b.promise).toBe(a.promise);
    release(5);
    expect(await Promise.all([a.promise, b.promise, other.promise])).toEqual([5, 5, 9]);
    expect(f.size).toBe(0);
    expect(f.run('k', start).shared).toBe(false);
    expect(starts).toBe(2);
  });

  it('forgets a key whose promise rejected', async () => {
    const f = new InFlight<number>();
    const a = f.run('k', () => Promise.reject(new Error('no')));
    await expect(a.promise).rejects.toThrow('no');
    expect(f.run('k', () => Promise.resolve(1)).shared).toBe(false);
  });
});

describe('Lru', () => {
  const answer = (json: string, block = 1): CachedAnswer => ({ json, block, hash: '0xh' });
  const cache = (entries: number, chars: number) => new Lru<CachedAnswer>(entries, chars, (a) => a.json.length);

  it('drops the least recently used entry beyond its entry count', () => {
    const c = cache(2, 1_000);
    c.set('a', answer('1'));
    c.set('b', answer('2'));
    expect(c.get('a')?.json).toBe('1'); // a is now the most recent
    c.set('c', answer('3'));
    expect([c.get('a')?.json, c.get('b'), c.get('c')?.json]).toEqual(['1', undefined, '3']);
    expect(c.count).toBe(2);
  });

  it('keeps the serialized answers under its size, and never one larger than all of it', () => {
    const c = cache(100, 10);
    c.set('a', answer('12345'));
    c.set('b', answer('1234'));
    c.set('c', answer('123'));
    expect([c.get('a'), c.get('b')?.json, c.get('c')?.json]).toEqual([undefined, '1234', '123']);
    expect(c.size).toBe(7);
    c.set('huge', answer('x'.repeat(11)));
    expect(c.get('huge')).toBeUndefined();
    c.set('b', answer('12'));
    expect(c.size).toBe(5);
    c.delete('c');
    expect([c.count, c.size]).toEqual([1, 2]);
  });
});
