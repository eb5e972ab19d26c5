import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { advance, startChainpost, stopAndClean, until, type Running } from './helpers.js';
import { startReceiver } from './receiver.js';

/**
 * /metrics as stock dashboards read it: Node's standard series (prom-client's default collectors, a registry per
 * server), the webhook delivery latency per family, ingest and Data API index lag per chain; and
 * docs/grafana/chainpost.json, whose every query names a series a real server (following anvil, one webhook
 * delivered) exports.
 */
describe('metrics for dashboards', () => {
  let anvil: Anvil;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  let s: Running;
  let other: Running;
  beforeAll(async () => {
    [anvil, rx] = await Promise.all([startAnvil({ chainId: 1337 }), startReceiver()]);
    const env = { CHAINPOST_TEST_CLOCK: '1', CHAINPOST_RATE_LIMIT: '0', CHAINPOST_CHAINS: `0x539=${anvil.url}`, CHAINPOST_POLL_MS: '100' };
    [s, other] = await Promise.all([startChainpost(env), startChainpost(env)]);
  }, 60_000);
  afterAll(async () => {
    await stopAndClean(s);
    await stopAndClean(other);
    await rx?.close();
    await anvil?.stop();
  });

  const scrape = async (n: Running): Promise<string> => (await n.call('/metrics')).body as string;
  /** The series with samples in a scrape (a histogram's as `_bucket`, `_sum`, `_count`). */
  const sampled = (text: string): Set<string> =>
    new Set(
      text
        .split('\n')
        .filter((l) => l !== '' && !l.startsWith('#'))
        .map((l) => /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(l)![0]),
    );

  it("exports Node's standard series on each server's own registry, the delivery latency per family and the lags per chain", async () => {
    // One webhook delivered: the latency histogram has a sample.
    const made = await s.call('/streams/evm', { method: 'PUT', json: { webhookUrl: `${rx.url}?metrics`, chainIds: ['0x539'] } });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const webhook = { chainId: '0x539', block: { number: '1', hash: '0x1', timestamp: '0' } };
    expect((await s.call(`/admin/streams/${made.body.id}/webhooks`, { method: 'POST', json: { webhooks: [webhook] } })).status).toBe(200);
    await advance(s, 0);
    expect(await until(async () => sampled(await scrape(s)).has('chainpost_webhook_delivery_seconds_count'), 5_000, 50)).toBe(true);
    // The indexes' first batch on the devnet: the index lag has its sample.
    expect(await until(async () => /^chainpost_data_index_lag_blocks\{chain="0x539"\} \d+$/m.test(await scrape(s)), 20_000, 100)).toBe(
      true,
    );
    const text = await scrape(s);
    expect(text).toMatch(/^chainpost_webhook_delivery_seconds_bucket\{family="evm",le="\+Inf"\} 1$/m);
    expect(text).toMatch(/^chainpost_chain_lag_blocks\{chain="0x539"\} \d+$/m);
    for (const name of [
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_heap_size_used_bytes',
      'nodejs_eventloop_lag_p99_seconds',
    ])
      expect(sampled(text), name).toContain(name);
    // Each server its own registry: the other server's scrape has the same series, once each.
    const theirs = await scrape(other);
    expect(theirs.match(/^# TYPE process_cpu_user_seconds_total /gm)).toHaveLength(1);
    expect(text.match(/^# TYPE process_cpu_user_seconds_total /gm)).toHaveLength(1);
  });

  it('has docs/grafana/chainpost.json query only series the server exports, each panel with its data source and a target a letter', async () => {
    const dashboard = JSON.parse(readFileSync(new URL('../docs/grafana/chainpost.json', import.meta.url), 'utf8'));
    expect(dashboard).toMatchObject({ uid: 'chainpost', title: 'chainpost' });
    expect(dashboard.templating.list.map((v: { name: string }) => v.name)).toContain('datasource');
    // Sampled, or declared (`# TYPE`): the event loop's delay has its samples from its first 10-s window on.
    const text = await scrape(s);
    const declared = [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].flatMap(([, name, type]) =>
      type === 'histogram' ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : [name!],
    );
    const exported = new Set([...sampled(text), ...declared]);
    const ids = new Set<number>();
    const queried: string[] = [];
    for (const p of dashboard.panels as Array<{
      id: number;
      datasource: { uid: string };
      targets: Array<{ refId: string; expr: string }>;
    }>) {
      expect(ids.has(p.id), `panel ${p.id}`).toBe(false);
      ids.add(p.id);
      expect(p.datasource.uid).toBe('${datasource}');
      expect(p.targets.length).toBeGreaterThan(0);
      p.targets.forEach((t, i) => {
        expect(t.refId).toBe(String.fromCharCode(65 + i));
        queried.push(...(t.expr.match(/\b(?:chainpost|process|nodejs)_[a-zA-Z0-9_]+/g) ?? []));
      });
    }
    expect(queried.length).toBeGreaterThan(10);
    expect(queried.filter((name) => !exported.has(name))).toEqual([]);
  });
});
