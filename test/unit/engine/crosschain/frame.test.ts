import { describe, expect, it } from 'vitest';
import { findChain, type Chain } from '../../../../engine/chains/registry.js';
import { pathChain, resolveChains, type ChainScope } from '../../../../engine/crosschain/chains.js';
import { acrossChains, v1Meta } from '../../../../engine/crosschain/fan-out.js';
import { mergedPage, type ChainItem, type MergedPage } from '../../../../engine/crosschain/merged-page.js';
import { ApiError } from '../../../../engine/errors.js';
import { refusal } from './refusal.js';

const NOW = Date.parse('2026-11-25T00:00:00Z');
const scope = (followed: string[], families: ChainScope['families'] = ['evm', 'bitcoin', 'solana']): ChainScope => ({
  followed,
  families,
  now: NOW,
});
const keys = (cs: readonly Chain[]) => cs.map((c) => c.key);
describe('cross-chain chains parameter', () => {
  const followed = ['0x1', '0x89', '0x539', 'bitcoin', 'solana'];

  it('takes hex ids, registry names and the Universal aliases, once each, in the order asked', () => {
    const r = resolveChains(['polygon,ethereum', 'bitcoin-mainnet', '0x1', 'SOL'], scope(followed));
    expect(keys(r.chains)).toEqual(['0x89', '0x1', 'bitcoin', 'solana']);
    expect(r.unsupported).toEqual([]);
  });

  it('expands the groups to the followed chains of the families served; none given is all', () => {
    expect(keys(resolveChains([], scope(followed)).chains)).toEqual(followed);
    expect(keys(resolveChains(['mainnets'], scope(followed)).chains)).toEqual(['0x1', '0x89', 'bitcoin', 'solana']);
    expect(keys(resolveChains(['testnets'], scope(followed)).chains)).toEqual(['0x539']);
    expect(keys(resolveChains(['all'], scope(followed, ['evm'])).chains)).toEqual(['0x1', '0x89', '0x539']);
  });

  it('puts chains not followed, of a family not served, or only in the Universal list into unsupportedChains', () => {
    const r = resolveChains(['eth', 'base', 'sei', 'bitcoin', 'binance', 'base'], scope(['0x1', 'bitcoin'], ['evm']));
    expect(keys(r.chains)).toEqual(['0x1']);
    expect(r.unsupported).toEqual(['0x2105', '0x531', 'bitcoin', '0x38']);
  });

  it('refuses an unknown name, Aptos and a chain removed from the cross-chain surface, naming the field and the chain', () => {
    const unknown = refusal(() => resolveChains(['eth,ethereim'], scope(followed)));
    expect(unknown.status).toBe(400);
    expect(unknown.message).toContain('ethereim');
    expect(unknown.details).toMatchObject({ field: 'chains' });
    expect(refusal(() => resolveChains(['aptos'], scope(followed))).status).toBe(400);
    // 0x504 and 0x505 left the cross-chain API on 2026-09-25, with base as their migration target.
    const removed = refusal(() => resolveChains(['moon beam'], scope(followed)));
    expect(removed.status).toBe(400);
    expect(removed.details).toMatchObject({ field: 'chains', chain: '0x504', removedOn: '2026-09-25', migrateTo: '0x2105' });
    // Before that date the same alias is a chain like any other (not followed here).
    expect(resolveChains(['moon beam'], { ...scope(followed), now: Date.parse('2026-09-24T23:59:59Z') }).unsupported).toEqual(['0x504']);
  });

  it('leaves a chain removed from the cross-chain API out of a group, even while it is still followed', () => {
    // Lisk (0x46f) left data and cross-chain requests on 2026-09-25; a server may still follow it.
    expect(keys(resolveChains(['all'], scope(['0x1', '0x46f'])).chains)).toEqual(['0x1']);
    expect(keys(resolveChains(['mainnets'], { ...scope(['0x1', '0x46f']), now: Date.parse('2026-09-24T00:00:00Z') }).chains)).toEqual([
      '0x1',
      '0x46f',
    ]);
  });

  it('knows the Universal-only chains in any id form', () => {
    expect(resolveChains(['metis', 'sonic', '0x0531', '1329', '0X8F'], scope(followed)).unsupported).toEqual([
      '0x440',
      '0x92',
      '0x531',
      '0x8f',
    ]);
  });

  it('resolves a path alias to one followed chain of the families served', () => {
    expect(pathChain('ethereum', scope(followed)).key).toBe('0x1');
    expect(pathChain('bitcoin', scope(followed, ['bitcoin'])).key).toBe('bitcoin');
    for (const [alias, s] of [
      ['all', scope(followed)],
      ['base', scope(followed)],
      ['bitcoin', scope(followed, ['evm'])],
      [',', scope(followed)],
      [' ', scope(followed)],
      ['eth,bitcoin', scope(followed)],
    ] as const) {
      const r = refusal(() => pathChain(alias, s));
      expect(r.status, alias).toBe(400);
      expect(r.details, alias).toMatchObject({ field: 'chainAlias' });
    }
  });
});

describe('cross-chain fan-out', () => {
  const eth = findChain('0x1')!;
  const btc = findChain('bitcoin')!;
  const base = findChain('0x2105')!;

  it('answers with the chains that succeeded and names each failed one with its error', async () => {
    const { parts, failed } = await acrossChains([eth, btc, base], (c) => {
      if (c === btc) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8332'), { code: 'ECONNREFUSED' });
      if (c === base) throw new ApiError(502, 'node answered 503');
      return c.key;
    });
    expect(parts.map((p) => p.value)).toEqual(['0x1']);
    expect(failed).toEqual([
      { chainId: 'bitcoin', code: 'ECONNREFUSED', error: 'connect ECONNREFUSED 127.0.0.1:8332' },
      { chainId: '0x2105', code: 502, error: 'node answered 503' },
    ]);
  });

  it("fails the whole request on a bug's error: it is not hidden as a chain's outage", async () => {
    await expect(
      acrossChains([eth, btc], (c) => {
        if (c === btc) throw new TypeError('x is undefined');
        return 1;
      }),
    ).rejects.toThrow(TypeError);
  });

  it("fails the whole request on a part's 4xx: bad input is the request's, not a chain's", async () => {
    await expect(
      acrossChains([eth, btc], (c) => {
        if (c === btc) throw new ApiError(400, 'address: not a Bitcoin address', { field: 'address' });
        return 1;
      }),
    ).rejects.toMatchObject({ status: 400 });
  });

  it("writes meta with every asked chain's sync point, and the unsupported and failed only when there are some", () => {
    const resolved = { chains: [eth, btc], unsupported: [] };
    expect(v1Meta(resolved, [], (c) => (c === eth ? 120 : undefined))).toEqual({ syncedAt: { '0x1': 120, bitcoin: null } });
    expect(v1Meta({ chains: [eth], unsupported: ['0x38'] }, [{ chainId: '0x1', code: 502, error: 'x' }], () => 7)).toEqual({
      syncedAt: { '0x1': 7 },
      unsupportedChains: ['0x38'],
      failedChains: [{ chainId: '0x1', code: 502, error: 'x' }],
    });
  });
});

describe('pages merged over chains', () => {
  const eth = findChain('0x1')!;
  const btc = findChain('bitcoin')!;
  /** A chain's list as keys newest first: `${time}` zero-padded so key order is time order. */
  const lists = new Map<string, number[]>([
    ['0x1', [100, 90, 70, 40, 10]],
    ['bitcoin', [95, 70, 50]],
  ]);
  const key = (t: number) => String(t).padStart(6, '0');
  const read = (c: Chain, after: string | undefined, limit: number): ChainItem<string>[] =>
    lists
      .get(c.key)!
      .filter((t) => after === undefined || key(t) < after)
      .slice(0, limit)
      .map((t) => ({ time: t, at: key(t), item: `${c.key}@${t}` }));
  const all = async (limit: number, reader = read) => {
    const pages: string[][] = [];
    let cursor: string | null = null;
    do {
      const p: MergedPage<string> = await mergedPage([eth, btc], reader, { list: 'history', limit, cursor });
      pages.push(p.items.map((i) => i.item));
      cursor = p.cursor;
    } while (cursor !== null && pages.length < 20);
    return pages;
  };

  it('pages newest first over both chains, each item once, the last page without a cursor', async () => {
    expect(await all(3)).toEqual([
      ['0x1@100', 'bitcoin@95', '0x1@90'],
      ['0x1@70', 'bitcoin@70', 'bitcoin@50'],
      ['0x1@40', '0x1@10'],
    ]);
    expect(await all(8)).toEqual([['0x1@100', 'bitcoin@95', '0x1@90', '0x1@70', 'bitcoin@70', 'bitcoin@50', '0x1@40', '0x1@10']]);
  });

  it('stays valid while blocks arrive: newer items do not shift the pages after the first', async () => {
    const first = await mergedPage([eth, btc], read, { list: 'history', limit: 3, cursor: null });
    lists.get('0x1')!.unshift(120, 110);
    lists.get('bitcoin')!.unshift(115);
    try {
      const second = await mergedPage([eth, btc], read, { list: 'history', limit: 3, cursor: first.cursor });
      expect(second.items.map((i) => i.item)).toEqual(['0x1@70', 'bitcoin@70', 'bitcoin@50']);
      expect(second.page).toBe(1);
    } finally {
      lists.get('0x1')!.splice(0, 2);
      lists.get('bitcoin')!.splice(0, 1);
    }
  });

  it("keeps a failing chain's place: it is named in failed and resumes where it was on the next page", async () => {
    let btcDown = true;
    const flaky = (c: Chain, after: string | undefined, limit: number) => {
      if (c === btc && btcDown) throw new ApiError(502, 'node down');
      return read(c, after, limit);
    };
    const first = await mergedPage([eth, btc], flaky, { list: 'history', limit: 3, cursor: null });
    expect(first.items.map((i) => i.item)).toEqual(['0x1@100', '0x1@90', '0x1@70']);
    expect(first.failed.map((f) => f.chainId)).toEqual(['bitcoin']);
    btcDown = false;
    const second = await mergedPage([eth, btc], flaky, { list: 'history', limit: 3, cursor: first.cursor });
    expect(second.items.map((i) => i.item)).toEqual(['bitcoin@95', 'bitcoin@70', 'bitcoin@50']);
    const third = await mergedPage([eth, btc], flaky, { list: 'history', limit: 3, cursor: second.cursor });
    expect(third.items.map((i) => i.item)).toEqual(['0x1@40', '0x1@10']);
    expect(third.cursor).toBeNull();
  });

  it('refuses a cursor made for another list or other chains, or not a cursor at all', async () => {
    const first = await mergedPage([eth, btc], read, { list: 'history', limit: 2, cursor: null });
    for (const [chains, list, cursor] of [
      [[eth, btc], 'tokens', first.cursor],
      [[eth], 'history', first.cursor],
      [[eth, btc], 'history', 'not-a-cursor'],
      [[eth, btc], 'history', Buffer.from('null').toString('base64url')],
      [[eth, btc], 'history', Buffer.from(JSON.stringify({ l: 'history|0x1,bitcoin', p: 1, c: { '0x1': {} } })).toString('base64url')],
    ] as const) {
      await expect(mergedPage(chains, read, { list, limit: 2, cursor })).rejects.toMatchObject({
        status: 400,
        details: { field: 'cursor' },
      });
    }
  });
});
