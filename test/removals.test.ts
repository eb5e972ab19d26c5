import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_KEY, advance, startChainpost, stopAndClean, type Running } from './helpers.js';
import { startReceiver } from './receiver.js';

/**
 * The Versioning table over real HTTP: the service clock starts just before the
 * first date and is moved across each one; every rule is checked on both sides.
 */
describe('removals on the service clock', () => {
  let s: Running;
  beforeAll(async () => {
    s = await startChainpost({ CHAINPOST_TEST_CLOCK: '1', CHAINPOST_NOW: '2026-05-28T23:59:00Z', CHAINPOST_RATE_LIMIT: '0' });
  });
  afterAll(() => stopAndClean(s));

  // A data endpoint that is built. This server follows no chain: a chain the lifecycle accepts gets the 400 of a
  // chain not followed, a removed one its own answer.
  const data = (chain: string) =>
    s.call(`/api/v2.2/nft/0x60e4d786628fea6478f785a6d7e704777c86a7c6/1/transfers?chain=${encodeURIComponent(chain)}`);
  const accepted = async (chain: string): Promise<boolean> => {
    const r = await data(chain);
    return r.status === 400 && /is not followed by this server/.test(String(r.body.message));
  };
  const rpc = (chain: string) =>
    s.call(`/rpc/${chain}/${TEST_KEY}`, { method: 'POST', json: { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] } });
  /** The node-access path resolves the chain (this server follows none, so it answers that it has no node for it). */
  const rpcResolves = async (chain: string): Promise<void> => {
    const r = await rpc(chain);
    expect(r.status, chain).toBe(404);
    expect(r.body.error.message, chain).toMatch(/ has no upstream node on this server$/);
  };
  const cross = (query: string) => s.call(`/v1/defi/protocols?${query}`);
  /** Moves the clock to `iso` (forward only). */
  const to = async (iso: string) => {
    const now = Date.parse((await s.call('/admin/clock')).body.now);
    return advance(s, Math.max(0, (Date.parse(iso) - now) / 1000));
  };

  it('the test clock needs a key and a valid body', async () => {
    expect((await s.call('/admin/clock/advance', { method: 'POST', json: { seconds: 1 }, headers: { 'x-no-key': '1' } })).status).toBe(401);
    const bad = await s.call('/admin/clock/advance', { method: 'POST', json: { seconds: -1 } });
    expect(bad.status).toBe(400);
    expect(bad.body.details.field).toBe('seconds');
    expect((await s.call('/admin/clock/advance', { method: 'POST', json: {} })).body.details.field).toBe('seconds');
  });

  it('2026-05-29: chain 0xfa leaves data, node access and cross-chain', async () => {
    for (const v of ['0xfa', '250', 'fantom']) expect(await accepted(v), v).toBe(true);
    await rpcResolves('fantom');
    expect((await cross('chains[]=0xfa')).body.meta.unsupportedChains).toEqual(['0xfa']);
    // The clock runs at real speed between calls: it lands on the date, give or take the call's own milliseconds.
    const landed = Date.parse(await to('2026-05-29T00:00:00Z')) - Date.parse('2026-05-29T00:00:00Z');
    expect(landed).toBeGreaterThanOrEqual(0);
    expect(landed).toBeLessThan(1000);
    for (const v of ['0xfa', '250', 'fantom', '0xFA']) {
      const r = await data(v);
      expect(r.status).toBe(400);
      expect(r.body.message).toBe('chain: chain 0xfa (fantom) was removed on 2026-05-29');
      expect(r.body.details).toMatchObject({ field: 'chain', chain: '0xfa', removedOn: '2026-05-29' });
    }
    const n = await rpc('0xfa');
    expect(n.status).toBe(404);
    expect(n.body.error.message).toMatch(/removed on 2026-05-29/);
    const c = await cross('chains[]=0x1&chains[]=fantom');
    expect(c.status).toBe(400);
    expect(c.body.details.field).toBe('chains');
    expect(await accepted('0x1')).toBe(true);
  });

  it('2026-06-04: AI chat, discovery, volume, sniper, market-data and legacy token endpoints answer 410', async () => {
    const june: Array<[string, string, string?]> = [
      ['POST', '/chat'],
      ['POST', '/discovery/tokens'],
      ['GET', '/discovery/token'],
      ['GET', '/discovery/tokens/trending'],
      ['GET', '/volume/timeseries/defi'],
      ['GET', '/pairs/0xabc/snipers'],
      ['GET', '/token/mainnet/pairs/abc/snipers'],
      ['GET', '/erc20/exchange/pumpfun/graduated'],
      ['GET', '/erc20/0xabc/bondingStatus'],
      ['GET', '/erc20/0xabc/stats'],
      ['GET', '/erc20/0xabc/pairs/stats', 'GET /tokens/{tokenAddress}/analytics'],
      ['GET', '/erc20/metadata/symbols', 'GET /tokens/search'],
      ['GET', '/market-data/global/market-cap'],
    ];
    await to('2026-06-03T23:59:59Z');
    for (const [method, path] of june) {
      const r = await s.call(`/api/v2.2${path}`, method === 'GET' ? {} : { method, json: {} });
      expect(r.status, `${method} ${path} before`).toBe(501);
    }
    await to('2026-06-04T00:00:00Z');
    for (const [method, path, replacement] of june) {
      const r = await s.call(`/api/v2.2${path}`, method === 'GET' ? {} : { method, json: {} });
      expect(r.status, `${method} ${path} after`).toBe(410);
      expect(r.body.message).toMatch(/was removed on 2026-06-04/);
      if (replacement) expect(r.body.message).toContain(`use ${replacement} instead`);
      else expect(r.body.details.replacement).toBeUndefined();
    }
    // Endpoints that stay, such as the replacements themselves, are routed as before (built: 400, this server follows no chain).
    expect((await s.call('/api/v2.2/tokens/search')).status).toBe(400);
    expect((await s.call('/api/v2.2/erc20/metadata')).status).toBe(400);
  });

  it('2026-06-15: the five testnets leave every surface', async () => {
    const testnets = ['0x15b32', '0x27d8', '0xe705', '0x507', '0x106a'];
    await to('2026-06-14T23:59:59Z');
    for (const id of testnets) expect(await accepted(id), id).toBe(true);
    await rpcResolves('moonbase');
    await to('2026-06-15T00:00:00Z');
    for (const id of testnets) {
      const r = await data(id);
      expect(r.status, id).toBe(400);
      expect(r.body.details.removedOn).toBe('2026-06-15');
      const n = await rpc(id);
      expect(n.status).toBe(404);
      expect(n.body.error.message).toMatch(/was removed on 2026-06-15$/);
    }
    expect((await data(String(88882))).status).toBe(400);
    expect((await data('gnosis testnet')).status).toBe(400);
  });

  it('2026-07-31: token holder, top-holder, exchange and bonding-status endpoints answer 404', async () => {
    const july = [
      '/token/mainnet/holders/So11111111111111111111111111111111111111112',
      '/token/mainnet/So11111111111111111111111111111111111111112/top-holders',
      '/token/mainnet/holders/So11111111111111111111111111111111111111112/historical',
      '/erc20/0xabc/holders/historical',
      '/token/mainnet/exchange/pumpfun/new',
      '/token/mainnet/exchange/pumpfun/bonding',
      '/token/mainnet/exchange/pumpfun/graduated',
      '/token/mainnet/So11111111111111111111111111111111111111112/bonding-status',
    ];
    await to('2026-07-30T23:59:59Z');
    // Built ones answer 400 here (this server follows no chain), the others 501.
    for (const p of july) expect((await s.call(`/api/v2.2${p}`)).status, p).toBe(p.startsWith('/erc20/') ? 400 : 501);
    await to('2026-07-31T00:00:00Z');
    for (const p of july) {
      const r = await s.call(`/api/v2.2${p}`);
      expect(r.status, p).toBe(404);
      expect(r.body.message).toMatch(/was removed on 2026-07-31$/);
    }
    // Still supported: the holders and owners endpoints (400: this server follows no chain).
    expect((await s.call('/api/v2.2/erc20/0xabc/holders')).status).toBe(400);
    expect((await s.call('/api/v2.2/erc20/0xabc/owners')).status).toBe(400);
  });

  it('2026-08-01 keeps moonbeam and moonriver queryable; 2026-09-25 rejects them and lisk, pointing to base', async () => {
    await to('2026-08-01T00:00:00Z');
    const rx = await startReceiver();
    const made = await s.call('/streams/evm', {
      method: 'PUT',
      json: { webhookUrl: rx.url, description: 'd', tag: 't', chainIds: ['0x1', 'moonbeam'], includeNativeTxs: true },
    });
    expect(made.status).toBe(200);
    const onLisk = await s.call('/streams/evm', {
      method: 'PUT',
      json: { webhookUrl: rx.url, description: 'd', tag: 't', chainIds: ['0x46f'], includeNativeTxs: true },
    });
    const stream = (id: string) => s.call(`/streams/evm/${id}`);
    // This server follows no chain: 0x1 is said; moonbeam, which no longer produces blocks, is left to its removal.
    const on0x1 =
      'Stream cannot fire on chain 0x1 (eth): this server does not follow it. Add it to CHAINPOST_CHAINS and restart the server.';
    expect((await stream(made.body.id)).body.statusMessage).toBe(on0x1);
    for (const v of ['moonbeam', 'moonriver', 'lisk', '0x504']) expect(await accepted(v), v).toBe(true);
    await to('2026-09-24T23:59:59Z');
    await rpcResolves('moonbeam');
    expect((await cross('chains=moonriver,lisk')).body.meta.unsupportedChains).toEqual(['0x505', '0x46f']);
    await to('2026-09-25T00:00:00Z');
    const mb = await data('moonbeam');
    expect(mb.status).toBe(400);
    expect(mb.body.message).toBe(
      'chain: chain 0x504 (moonbeam) was removed on 2026-09-25; migrate to base (0x2105) with the same API key, request shapes and response formats',
    );
    expect(mb.body.details.migrateTo).toBe('0x2105');
    expect((await data('1285')).body.details.migrateTo).toBe('0x2105');
    const lisk = await data('lisk');
    expect(lisk.status).toBe(400);
    expect(lisk.body.details.migrateTo).toBeUndefined();
    for (const v of ['moonbeam', 'moonriver', 'lisk']) {
      const n = await rpc(v);
      expect(n.status, v).toBe(404);
      expect(n.body.error.message, v).toMatch(/was removed on 2026-09-25/);
    }
    expect((await rpc('moonriver')).body.error.message).toMatch(/migrate to base \(0x2105\)/);
    expect((await cross('chains[]=base&chains[]=0x46f')).status).toBe(400);
    // The migration target works with the same key and request shape.
    expect(await accepted('0x2105')).toBe(true);
    await rpcResolves('base');

    // Streams listing them are invalid until updated or deleted; an update keeping the chain is refused.
    const invalid = (await stream(made.body.id)).body;
    expect(invalid.status).toBe('active');
    expect(invalid.statusMessage).toBe(
      'Stream invalid: chain 0x504 (moonbeam) was removed on 2026-09-25; migrate to base (0x2105) with the same API key, request shapes and response formats. It emits nothing for that chain; update its chainIds or delete it. ' +
        on0x1,
    );
    expect((await stream(onLisk.body.id)).body.statusMessage).toMatch(/^Stream invalid: chain 0x46f \(lisk\) was removed on 2026-09-25\. /);
    const listed = (await s.call('/streams/evm')).body.result as Array<{ id: string; statusMessage: string }>;
    expect(listed.find((x) => x.id === onLisk.body.id)!.statusMessage).toMatch(/^Stream invalid/);
    const kept = await s.call(`/streams/evm/${made.body.id}`, { method: 'POST', json: { description: 'still on moonbeam' } });
    expect(kept.status).toBe(400);
    expect(kept.body.details.field).toBe('chainIds.1');
    const fixed = await s.call(`/streams/evm/${made.body.id}`, { method: 'POST', json: { chainIds: ['0x1', 'base'] } });
    expect(fixed.status).toBe(200);
    expect(fixed.body).toMatchObject({
      chainIds: ['0x1', '0x2105'],
      statusMessage:
        'Stream cannot fire on chains 0x1 (eth) and 0x2105 (base): this server does not follow them. Add them to CHAINPOST_CHAINS and restart the server.',
    });
    expect((await s.call(`/streams/evm/${onLisk.body.id}`, { method: 'DELETE' })).status).toBe(200);
    await rx.close();
  });

  it('rejects an unknown chain 400 naming the parameter', async () => {
    const r = await data('notachain');
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ message: 'chain: unknown chain "notachain"', details: { field: 'chain' } });
    expect((await data('bitcoin')).status).toBe(400);
    expect((await cross('chains[]=bitcoin&chains[]=solana')).body.meta.unsupportedChains).toEqual(['bitcoin', 'solana']);
  });
});
