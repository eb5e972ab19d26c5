import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { describe, expect, it, onTestFinished } from 'vitest';
import { DELIVERY_TIMEOUT_MS } from '../engine/delivery/limits.js';
import { advance, cliInProcess, manualTicker, until, type Running } from './helpers.js';
import { deliveryEnv, NOT_FOLLOWED, type Receiver, type Smtp } from './delivery-env.js';

const block = (n: number) => ({ number: String(n), hash: `0x${n.toString(16).padStart(64, '0')}`, timestamp: String(1_795_000_000 + n) });
const webhook = (n: number) => ({
  confirmed: false,
  chainId: '0x1',
  abi: [],
  block: block(n),
  logs: [
    {
      logIndex: '0',
      transactionHash: `0x${'ab'.repeat(32)}`,
      address: '0x'.padEnd(42, '1'),
      data: '0x',
      topic0: null,
      topic1: null,
      topic2: null,
      topic3: null,
    },
  ],
  txs: [],
  txsInternal: [],
  erc20Transfers: [],
  erc20Approvals: [],
  nftTransfers: [],
  nftTokenApprovals: [],
  nftApprovals: { ERC721: [], ERC1155: [] },
  nativeBalances: [],
});

describe('Streams API and delivery engine', () => {
  let s: Running;
  let rx: Receiver;
  let smtp: Smtp;
  const put = (json: unknown) => s.call('/streams/evm', { method: 'PUT', json });
  const post = (path: string, json?: unknown) => s.call(path, { method: 'POST', ...(json === undefined ? {} : { json }) });
  const now = async () => Date.parse((await s.call('/admin/clock')).body.now);
  const enqueue = (id: string, webhooks: unknown[]) => post(`/admin/streams/${id}/webhooks`, { webhooks });
  const stream = async (id: string) => (await s.call(`/streams/evm/${id}`)).body;
  /** The server's `webhook delivery failed` lines about a stream, as logged since `from` (a length of its output). */
  const failedLines = (id: string, from = 0) =>
    s
      .output()
      .slice(from)
      .split('\n')
      .filter((l) => l.includes('"msg":"webhook delivery failed"'))
      .map((l) => JSON.parse(l))
      .filter((l) => l.streamId === id);
  /**
   * Those lines, once the server's stdout has caught up (it arrives through a pipe, maybe after the
   * answers): up to the access-log line of a request made now.
   */
  let flushes = 0;
  const failedLinesNow = async (id: string, from = 0) => {
    const rid = `flush-${++flushes}`;
    await s.call('/health', { headers: { 'x-request-id': rid } });
    expect(await until(() => s.output().includes(rid), 5_000)).toBe(true);
    return failedLines(id, from);
  };
  /** A sample of /metrics: the total, or the stream's series. */
  const metric = async (name: string, streamId?: string): Promise<number> => {
    const text = (await s.call('/metrics')).body as string;
    const line = text.split('\n').find((l) => l.startsWith(streamId === undefined ? `${name} ` : `${name}{stream="${streamId}"} `));
    return line === undefined ? NaN : Number(line.slice(line.lastIndexOf(' ') + 1));
  };
  const make = async (extra: Record<string, unknown> = {}) => {
    // includeNativeTxs: a stream that can match something (one that cannot says so in its statusMessage).
    const r = await put({ webhookUrl: rx.url, chainIds: ['0x1'], tag: 'mine', description: 'd', includeNativeTxs: true, ...extra });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.id as string;
  };

  // Real time moves only when a test says: a POST left hanging times out then, not 10 s later in another test.
  const time = manualTicker();
  deliveryEnv((e) => ({ s, rx, smtp } = e), { ticker: time.ticker });

  describe('stream resources', () => {
    it('creates a stream after a test webhook, and answers every field', async () => {
      const before = rx.received.length;
      const r = await put({
        webhookUrl: rx.url,
        description: 'transfers',
        tag: 'tag-1',
        chainIds: ['0x1', '56', 'base'],
        topic0: ['Transfer(address,address,uint256)'],
        allAddresses: false,
        includeNativeTxs: true,
        abi: [
          {
            type: 'event',
            name: 'Transfer',
            anonymous: false,
            inputs: [
              { name: 'from', type: 'address', indexed: true },
              { name: 'to', type: 'address', indexed: true },
              { name: 'value', type: 'uint256', indexed: false },
            ],
          },
        ],
        getNativeBalances: [{ selectors: ['$fromAddress'], type: 'tx' }],
      });
      expect(r.status).toBe(200);
      expect(r.body.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(r.body).toMatchObject({
        webhookUrl: rx.url,
        description: 'transfers',
        tag: 'tag-1',
        chainIds: ['0x1', '0x38', '0x2105'],
        topic0: ['Transfer(address,address,uint256)'],
        includeNativeTxs: true,
        includeContractLogs: false,
        includeInternalTxs: false,
        includeAllTxLogs: false,
        allAddresses: false,
        filterPossibleSpamAddresses: false,
        demo: false,
        triggers: null,
        advancedOptions: null,
        getNativeBalances: [{ selectors: ['$fromAddress'], type: 'tx' }],
        status: 'active',
        // This server follows no chain: accepted, and said.
        statusMessage:
          'Stream cannot fire on chains 0x1 (eth), 0x38 (bsc) and 0x2105 (base): this server does not follow them. Add them to CHAINPOST_CHAINS and restart the server.',
        amountOfAddresses: 0,
      });
      // Stamped by the service clock, just now.
      const now = Date.parse((await s.call('/admin/clock')).body.now);
      expect(now - Date.parse(r.body.updatedAt)).toBeGreaterThanOrEqual(0);
      expect(now - Date.parse(r.body.updatedAt)).toBeLessThan(60_000);
      const testHook = rx.received.slice(before).find((x) => x.test)!;
      expect(testHook.body).toMatchObject({
        chainId: '',
        streamId: r.body.id,
        tag: 'tag-1',
        block: { number: '', hash: '', timestamp: '' },
        logs: [],
        txs: [],
      });
      const { secretKey } = (await s.call('/settings')).body;
      expect(testHook.headers['x-signature']).toBe(`0x${bytesToHex(keccak_256(utf8ToBytes(testHook.raw + secretKey)))}`);
      expect((await stream(r.body.id)).id).toBe(r.body.id);
    });

    it('accepts a stream that can match nothing, and says why in its statusMessage until an update lets it match', async () => {
      const r = await put({ webhookUrl: rx.url, chainIds: ['0x1'] });
      expect(r.status).toBe(200);
      const id = r.body.id as string;
      const none =
        /^Stream matches nothing: no include option is set\. Set includeNativeTxs, includeInternalTxs or includeContractLogs \(for the stream's addresses\), or allAddresses with abi and topic0/;
      expect(r.body).toMatchObject({ status: 'active', statusMessage: expect.stringMatching(none) });
      expect((await stream(id)).statusMessage).toMatch(none);
      const listed = (await s.call('/streams/evm?limit=100')).body.result.find((x: { id: string }) => x.id === id);
      expect(listed.statusMessage).toMatch(none);
      // Paused, it still says so.
      expect((await post(`/streams/evm/${id}/status`, { status: 'paused' })).body.statusMessage).toMatch(none);
      expect((await post(`/streams/evm/${id}/status`, { status: 'active' })).body.statusMessage).toMatch(none);
      // Logs of its addresses, but only Transfer events, and no abi to decode them with: still nothing.
      const noAbi = await post(`/streams/evm/${id}`, { includeContractLogs: true, topic0: ['Transfer(address,address,uint256)'] });
      expect(noAbi.status).toBe(200);
      expect(noAbi.body.statusMessage).toMatch(
        /^Stream matches nothing: topic0 keeps only the logs that decode with the stream's abi, and the stream has no abi\. Set abi/,
      );
      const abi = [
        {
          type: 'event',
          name: 'Transfer',
          inputs: [
            { name: 'from', type: 'address', indexed: true },
            { name: 'to', type: 'address', indexed: true },
            { name: 'value', type: 'uint256', indexed: false },
          ],
        },
      ];
      const fixed = await post(`/streams/evm/${id}`, { abi });
      // Left: the chain this server does not follow.
      expect(fixed.body).toMatchObject({ status: 'active', statusMessage: NOT_FOLLOWED.evm });
      expect((await stream(id)).statusMessage).toBe(NOT_FOLLOWED.evm);
      // Back to matching nothing.
      expect((await post(`/streams/evm/${id}`, { includeContractLogs: false })).body.statusMessage).toMatch(
        /^Stream matches nothing: topic0 is set but no log is included/,
      );
      expect((await s.call(`/streams/evm/${id}`, { method: 'DELETE' })).status).toBe(200);
    });

    it('refuses bad fields with 400 naming them, and stores nothing', async () => {
      const TRANSFER_EVENT = [
        {
          type: 'event',
          name: 'Transfer',
          inputs: [
            { name: 'from', type: 'address', indexed: true },
            { name: 'to', type: 'address', indexed: true },
            { name: 'value', type: 'uint256', indexed: false },
          ],
        },
      ];
      const count = (await s.call('/streams/evm?limit=100')).body.total;
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ chainIds: ['0x1'] }, 'webhookUrl'],
        [{ webhookUrl: 'ftp://x', chainIds: ['0x1'] }, 'webhookUrl'],
        [{ webhookUrl: rx.url }, 'chainIds'],
        [{ webhookUrl: rx.url, chainIds: [] }, 'chainIds'],
        [{ webhookUrl: rx.url, chainIds: ['0x999999'] }, 'chainIds.0'],
        [{ webhookUrl: rx.url, chainIds: ['0x1', 'fantom'] }, 'chainIds.1'],
        [{ webhookUrl: rx.url, chainIds: ['0x1'], topic0: ['Transfer(adress,uint256)'] }, 'topic0.0'],
        [{ webhookUrl: rx.url, chainIds: ['0x1'], topic0: ['not a signature'] }, 'topic0.0'],
        [{ webhookUrl: rx.url, chainIds: ['0x1'], abi: [{ type: 'event', name: 'X', inputs: [{ type: 'uint7' }] }] }, 'abi.0'],
        [
          {
            webhookUrl: rx.url,
            chainIds: ['0x1'],
            abi: [{ type: 'event', name: 'Approval', inputs: [] }],
            topic0: ['Transfer(address,address,uint256)'],
          },
          'topic0.0',
        ],
        [{ webhookUrl: rx.url, chainIds: ['0x1'], allAddresses: true }, 'allAddresses'],
        [{ webhookUrl: rx.url, chainIds: ['0x1'], includeNativeTxs: 'yes' }, 'includeNativeTxs'],
        [
          {
            webhookUrl: rx.url,
            chainIds: ['0x1'],
            triggers: [{ type: 'tx', contractAddress: 'nope', functionAbi: { type: 'function', name: 'f' } }],
          },
          'triggers.0.contractAddress',
        ],
        [{ webhookUrl: rx.url, chainIds: ['0x1'], getNativeBalances: [{ selectors: [] }] }, 'getNativeBalances.0.selectors'],
        [
          { webhookUrl: rx.url, chainIds: ['0x1'], getNativeBalances: [{ selectors: ['$from'], type: 'internaltx' }] },
          'getNativeBalances.0.type',
        ],
        [
          {
            webhookUrl: rx.url,
            chainIds: ['0x1'],
            abi: TRANSFER_EVENT,
            advancedOptions: [{ topic0: 'Approval(address,address,uint256)' }],
          },
          'advancedOptions.0.topic0',
        ],
        [
          {
            webhookUrl: rx.url,
            chainIds: ['0x1'],
            abi: TRANSFER_EVENT,
            advancedOptions: [{ topic0: 'Transfer(address,address,uint256)', filter: { gt: ['value', 'lots'] } }],
          },
          'advancedOptions.0.filter.gt.1',
        ],
        [
          {
            webhookUrl: rx.url,
            chainIds: ['0x1'],
            abi: TRANSFER_EVENT,
            advancedOptions: [
              {
                topic0: 'Transfer(address,address,uint256)',
                filter: { and: [{ eq: ['to', '0x0000000000000000000000000000000000000001'] }, { eq: ['amount', '1'] }] },
              },
            ],
          },
          'advancedOptions.0.filter.and.1.eq.0',
        ],
      ];
      for (const [body, field] of cases) {
        const r = await put(body);
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.body.details.field, JSON.stringify(body)).toBe(field);
      }
      const removed = await put({ webhookUrl: rx.url, chainIds: ['0xfa'] });
      expect(removed.body.message).toBe('chainIds.0: chain 0xfa (fantom) was removed on 2026-05-29');
      // The receiver refuses the test webhook: no stream.
      rx.state.answerTests = () => 503;
      const refused = await put({ webhookUrl: rx.url, chainIds: ['0x1'] });
      expect(refused.status).toBe(400);
      expect(refused.body.message).toMatch(/^webhookUrl: the test webhook .* was not accepted \(the receiver answered HTTP 503\)/);
      expect((await s.call('/streams/evm?limit=100')).body.total).toBe(count);
    });

    it('lists by cursor, updates, pauses, deletes; another tenant sees none of it', async () => {
      const ids = [await make(), await make(), await make()];
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const p = await s.call(`/streams/evm?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        expect(p.body).toMatchObject({ page: 0, page_size: 2 });
        seen.push(...p.body.result.map((x: { id: string }) => x.id));
        cursor = p.body.cursor;
        pages++;
      } while (cursor);
      expect(seen.length).toBe((await s.call('/streams/evm?limit=100')).body.total);
      for (const id of ids) expect(seen).toContain(id);
      expect(pages).toBeGreaterThan(1);

      const up = await post(`/streams/evm/${ids[0]}`, { description: 'changed', includeContractLogs: true });
      expect(up.body).toMatchObject({ id: ids[0], description: 'changed', includeContractLogs: true, tag: 'mine' });
      expect((await post(`/streams/evm/${ids[0]}`, { chainIds: ['fantom'] })).body.details.field).toBe('chainIds.0');
      expect((await post(`/streams/evm/${ids[0]}/status`, { status: 'paused' })).body.status).toBe('paused');
      expect((await post(`/streams/evm/${ids[0]}/status`, { status: 'error' })).body.details.field).toBe('status');
      expect((await post(`/streams/evm/${ids[0]}/status`, { status: 'active' })).body.status).toBe('active');

      const other = (await cliInProcess(['keys', 'create', '--name', 'stream-stranger'], s.dir)).stdout.trim().split('\n').at(-1)!;
      const asOther = { headers: { 'x-api-key': other } };
      expect((await s.call(`/streams/evm/${ids[1]}`, asOther)).status).toBe(404);
      expect((await s.call('/streams/evm', asOther)).body.total).toBe(0);
      expect((await s.call(`/streams/evm/${ids[1]}`, { ...asOther, method: 'DELETE' })).status).toBe(404);

      const del = await s.call(`/streams/evm/${ids[2]}`, { method: 'DELETE' });
      expect(del.body.id).toBe(ids[2]);
      expect((await stream(ids[2]!)).message).toMatch(/no stream/);
      expect((await s.call('/streams/evm/not-a-uuid')).status).toBe(400);
    });

    it('adds, lists and removes addresses in any case, stored lowercase', async () => {
      const id = await make();
      const a = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';
      const one = await post(`/streams/evm/${id}/address`, { address: a });
      expect(one.body).toEqual({ streamId: id, address: a.toLowerCase() });
      const many = Array.from({ length: 250 }, (_, i) => `0x${(i + 1).toString(16).padStart(40, '0')}`);
      await post(`/streams/evm/${id}/address`, { address: [...many, a.toUpperCase().replace('0X', '0x')] });
      expect((await stream(id)).amountOfAddresses).toBe(251);
      const listed: string[] = [];
      let cursor: string | undefined;
      do {
        const p = await s.call(`/streams/evm/${id}/address?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
        expect(p.body.total).toBe(251);
        listed.push(...p.body.result.map((x: { address: string }) => x.address));
        cursor = p.body.cursor;
      } while (cursor);
      expect(listed).toHaveLength(251);
      expect(listed).toContain(a.toLowerCase());
      await s.call(`/streams/evm/${id}/address`, { method: 'DELETE', json: { address: many.slice(0, 50) } });
      expect((await stream(id)).amountOfAddresses).toBe(201);
      expect((await post(`/streams/evm/${id}/address`, { address: '0x123' })).body.details.field).toBe('address');
      expect((await post(`/streams/evm/${id}/address`, { address: Array(10_001).fill(a) })).status).toBe(400);
    });

    it('keeps settings per tenant: a secret made at first use, and a region', async () => {
      const first = await s.call('/settings');
      expect(first.body.secretKey).toMatch(/^[A-Za-z0-9]{32}$/);
      expect((await post('/settings', { region: 'eu-central-1' })).body).toEqual({ region: 'eu-central-1' });
      expect((await s.call('/settings')).body).toEqual({
        region: 'eu-central-1',
        secretKey: first.body.secretKey,
        standardWebhooksSecret: first.body.standardWebhooksSecret,
      });
      expect((await post('/settings', { region: 'mars-1' })).body.details.field).toBe('region');
    });
  });

  describe('delivery', () => {
    it('delivers in order, signed, with x-queue-size; a failed webhook steps aside for its retry while the rest go on', async () => {
      const id = await make();
      const before = rx.webhooks().length;
      // Block 1 fails once: blocks 2 and 3 must not wait for its retry a minute later.
      let failed = false;
      rx.state.answer = (x) => (x.body.streamId === id && x.body.block.number === '1' && !failed ? ((failed = true), 500) : 200);
      const r = await enqueue(id, [webhook(1), webhook(2), webhook(3)]);
      expect(r.body.results).toEqual(['queued', 'queued', 'queued']);
      await advance(s, 0);
      const early = rx
        .webhooks()
        .slice(before)
        .filter((x) => x.body.streamId === id);
      expect(early.map((x) => [x.body.block.number, x.body.retries])).toEqual([
        ['1', 0],
        ['2', 0],
        ['3', 0],
      ]);
      await advance(s, 60);
      const all = rx
        .webhooks()
        .slice(before)
        .filter((x) => x.body.streamId === id);
      expect(all.map((x) => [x.body.block.number, x.body.retries])).toEqual([
        ['1', 0],
        ['2', 0],
        ['3', 0],
        ['1', 1],
      ]);
      // x-queue-size: undelivered at each send, the one waiting for its retry included.
      expect(all.map((g) => g.headers['x-queue-size'])).toEqual(['3', '3', '2', '1']);
      // webhook-id: one per webhook, minted at staging, the same on its retry.
      const ids = all.map((g) => g.headers['webhook-id']);
      expect(ids[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(new Set(ids.slice(0, 3)).size).toBe(3);
      expect(ids[3]).toBe(ids[0]);
      const { secretKey } = (await s.call('/settings')).body;
      for (const g of all) {
        expect(g.headers['content-type']).toBe('application/json');
        expect(g.headers['x-signature']).toBe(`0x${bytesToHex(keccak_256(utf8ToBytes(g.raw + secretKey)))}`);
        expect(g.raw).toBe(JSON.stringify(g.body));
        expect(g.body).toMatchObject({ streamId: id, tag: 'mine', confirmed: false, chainId: '0x1' });
      }
      const stats = (await s.call(`/stats/${id}`)).body;
      expect(stats).toMatchObject({ streamId: id, totalWebhooksDelivered: 3, totalWebhooksFailed: 1, totalLogsProcessed: 3 });
    });

    it("enqueues webhooks for many streams in one call (as a block's matches are), each stream in its own order", async () => {
      const a = await make();
      const b = await make();
      const before = rx.webhooks().length;
      const r = await post('/admin/webhooks', {
        webhooks: [
          { streamId: a, payload: webhook(1) },
          { streamId: b, payload: webhook(1) },
          { streamId: a, payload: webhook(2) },
        ],
      });
      expect(r.status).toBe(200);
      expect(r.body.results).toEqual(['queued', 'queued', 'queued']);
      await advance(s, 0);
      const got = (id: string) =>
        rx
          .webhooks()
          .slice(before)
          .filter((x) => x.body.streamId === id)
          .map((x) => x.body.block.number);
      expect(got(a)).toEqual(['1', '2']);
      expect(got(b)).toEqual(['1']);
      // Bad input names its field; a stream of another tenant, or none, is not found, and nothing is enqueued.
      const bad = await post('/admin/webhooks', { webhooks: [{ payload: webhook(3) }] });
      expect(bad.status).toBe(400);
      expect(bad.body.details.field).toBe('webhooks.0.streamId');
      expect(
        (
          await post('/admin/webhooks', {
            webhooks: [
              { streamId: a, payload: webhook(3) },
              { streamId: 'no-such-stream', payload: webhook(3) },
            ],
          })
        ).status,
      ).toBe(404);
      await advance(s, 0);
      expect(got(a)).toEqual(['1', '2']);
    });

    it('retries at 1 min, 10 min, 1 h, 2 h, 6 h, 12 h after each failure and a last time at 24 h, then leaves the webhook to history', async () => {
      const id = await make({ webhookUrl: `${rx.url}?retries` });
      rx.state.answer = (r) => (r.body.streamId === id ? 500 : 200);
      const t0 = await now();
      await enqueue(id, [webhook(10)]);
      await advance(s, 3 * 86_400);
      const attempts = rx.webhooks().filter((x) => x.body.streamId === id);
      expect(attempts.map((a) => a.body.retries)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      const logs = (await s.call('/history/logs?limit=100')).body.result.filter((l: { streamId: string }) => l.streamId === id).reverse();
      const at = logs.map((l: { createdAt: string }) => Date.parse(l.createdAt) - t0);
      const minute = 60_000;
      // The schedule's last step (1 day after 21 h 11 min) is cut to the 24-hour mark, where the webhook is given up.
      const expected: number[] = [0, 1, 11, 71, 191, 551, 1271, 1440].map((m) => m * minute);
      expect(at).toHaveLength(expected.length);
      at.forEach((ms: number, i: number) => {
        expect(ms - expected[i]!, `attempt ${i}`).toBeGreaterThanOrEqual(0);
        expect(ms - expected[i]!, `attempt ${i}`).toBeLessThan(1000);
      });
      expect(logs.every((l: { deliveryStatus: string }) => l.deliveryStatus === 'failed')).toBe(true);
      // One warn line per failed attempt, naming the next attempt's time; the last says there is none.
      const lines = await failedLinesNow(id);
      expect(lines.map((l) => l.attempt)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      lines.slice(0, -1).forEach((l, i) => {
        const ms = Date.parse(l.nextRetryAt) - t0 - expected[i + 1]!;
        expect(ms, `retry after attempt ${i + 1}`).toBeGreaterThanOrEqual(0);
        expect(ms, `retry after attempt ${i + 1}`).toBeLessThan(1000);
      });
      expect(lines.at(-1)).toMatchObject({
        level: 'warn',
        nextRetryAt: null,
        note: 'no retry left: the webhook stays in history for manual replay',
      });
      // After the attempt at 24 h the webhook is left in history only.
      const h = (await s.call('/history?limit=100')).body.result.filter((x: { streamId: string }) => x.streamId === id);
      expect(h).toHaveLength(1);
      expect(h[0]).toMatchObject({
        streamId: id,
        tag: 'mine',
        webhookUrl: `${rx.url}?retries`,
        errorMessage: 'the receiver answered HTTP 500',
        tinyPayload: { chainId: '0x1', retries: 7, records: 1, amount: 1, block: block(10) },
      });
      expect(h[0].payload.block.number).toBe('10');
      expect((await stream(id)).status).toBe('active'); // 8 failures: 92%
      expect((await s.call(`/stats/${id}`)).body.totalWebhooksFailed).toBe(8);
    });

    it('makes a failed delivery visible: a warn line per failed attempt, counters and queue sizes in /metrics, and the history entry of its later delivery', async () => {
      const url = `${rx.url}?visible`;
      const id = await make({ webhookUrl: url });
      let failures = 2;
      rx.state.answer = (r) => (r.body.streamId === id && failures > 0 ? (failures--, 503) : 200);
      const totals = async () => Promise.all(['delivered', 'failed', 'retried'].map((k) => metric(`chainpost_webhooks_${k}_total`)));
      const perStream = async () =>
        Promise.all([
          ...['delivered', 'failed', 'retried'].map((k) => metric(`chainpost_stream_webhooks_${k}_total`, id)),
          metric('chainpost_stream_webhooks_queued', id),
        ]);
      const before = await totals();
      // Known before any outcome: a new stream's series start at 0.
      expect(await perStream()).toEqual([0, 0, 0, 0]);
      const from = s.output().length;
      const t0 = await now();
      const minute = 60_000;
      const near = (iso: string, ms: number) => {
        expect(Date.parse(iso) - t0 - ms).toBeGreaterThanOrEqual(0);
        expect(Date.parse(iso) - t0 - ms).toBeLessThan(1000);
      };
      await enqueue(id, [webhook(60)]);
      await advance(s, 0);

      // The first try failed: one warn line, its retry a minute later; it waits in the queue and in history, undelivered.
      let lines = await failedLinesNow(id, from);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({
        level: 'warn',
        streamId: id,
        webhookUrl: url,
        status: 503,
        error: 'the receiver answered HTTP 503',
        attempt: 1,
      });
      near(lines[0].nextRetryAt, minute);
      expect(await perStream()).toEqual([0, 1, 0, 1]);
      const entry = async () => (await s.call('/history?limit=100')).body.result.find((h: { streamId: string }) => h.streamId === id);
      const first = await entry();
      expect(first).toMatchObject({
        id: lines[0].historyId,
        errorMessage: 'the receiver answered HTTP 503',
        delivered: false,
        deliveredAt: null,
      });

      // The retry fails too: a second line, the next retry 10 minutes later.
      await advance(s, 60);
      lines = await failedLinesNow(id, from);
      expect(lines).toHaveLength(2);
      expect(lines[1]).toMatchObject({ streamId: id, status: 503, attempt: 2, historyId: first.id });
      near(lines[1].nextRetryAt, 11 * minute);
      expect(await perStream()).toEqual([0, 2, 1, 1]);

      // The next one is delivered: no line, the counters move, the queue is empty, the history entry says when.
      await advance(s, 10 * 60);
      expect(await failedLinesNow(id, from)).toHaveLength(2);
      expect(await perStream()).toEqual([1, 2, 2, 0]);
      const after = await totals();
      expect(after.map((n, i) => n - before[i]!)).toEqual([1, 2, 2]);
      // The queue total is the sum of the streams' queue sizes.
      const text = (await s.call('/metrics')).body as string;
      const queued = text
        .split('\n')
        .filter((l) => l.startsWith('chainpost_stream_webhooks_queued{'))
        .map((l) => Number(l.slice(l.lastIndexOf(' ') + 1)));
      expect(queued.length).toBeGreaterThan(1);
      expect(await metric('chainpost_webhooks_queued')).toBe(queued.reduce((a, b) => a + b, 0));
      const delivered = await entry();
      expect(delivered).toMatchObject({
        id: first.id,
        errorMessage: 'the receiver answered HTTP 503',
        delivered: true,
        tinyPayload: { retries: 1 },
      });
      near(delivered.deliveredAt, 11 * minute);
      expect(
        (await s.call(`/history?limit=100&excludePayload=true`)).body.result.find((h: { id: string }) => h.id === first.id),
      ).toMatchObject({ delivered: true, deliveredAt: delivered.deliveredAt });

      // A deleted stream's series go; the totals keep what it counted.
      expect((await s.call(`/streams/evm/${id}`, { method: 'DELETE' })).status).toBe(200);
      expect(await metric('chainpost_stream_webhooks_delivered_total', id)).toBeNaN();
      expect(await totals()).toEqual(after);
    });

    it('puts every stream of a URL in error on the 31st failure in a row (30 leave it at 70%), and e-mails the owner', async () => {
      const url = `${rx.url}?rate`;
      const rateStreams: string[] = [];
      rx.state.answer = (r) => (rateStreams.includes(r.body.streamId) ? 500 : 200);
      for (let i = 0; i < 31; i++) rateStreams.push(await make({ webhookUrl: url, tag: `rate-${i}` }));
      for (let i = 0; i < 30; i++) await enqueue(rateStreams[i]!, [webhook(100 + i)]);
      await advance(s, 0);
      for (const id of rateStreams) expect((await stream(id)).status, 'after 30 failures').toBe('active');
      // A stream updated to the URL is one of its streams; one updated away from it is not (neither has anything queued).
      const movedIn = await make({ webhookUrl: `${rx.url}?elsewhere`, tag: 'moved-in' });
      expect((await post(`/streams/evm/${movedIn}`, { webhookUrl: url })).status).toBe(200);
      const movedOut = await make({ webhookUrl: url, tag: 'moved-out' });
      expect((await post(`/streams/evm/${movedOut}`, { webhookUrl: `${rx.url}?away` })).status).toBe(200);
      const mailsBefore = smtp.mails.length;
      await enqueue(rateStreams[30]!, [webhook(130)]);
      await advance(s, 0);
      for (const id of [...rateStreams, movedIn]) {
        const st = await stream(id);
        expect(st.status).toBe('error');
        expect(st.statusMessage).toMatch(/success rate of .* fell to 69%, below 70%/);
      }
      expect((await stream(movedOut)).status).toBe('active');
      rateStreams.push(movedIn);
      // One e-mail per stream that entered error, to CHAINPOST_ALERT_EMAIL (the key has no e-mail).
      await until(() => smtp.mails.length - mailsBefore >= 32, 10_000);
      const mails = smtp.mails.slice(mailsBefore);
      expect(mails).toHaveLength(32);
      expect(mails[0]!.to).toEqual(['ops@example.org']);
      expect(mails.map((m) => /Subject: chainpost: stream (\S+) is in error/.exec(m.data)?.[1]).sort()).toEqual([...rateStreams].sort());

      // In error nothing is sent; new webhooks go straight to history.
      const sent = rx.webhooks().length;
      expect((await enqueue(rateStreams[0]!, [webhook(200)])).body.results).toEqual(['history']);
      await advance(s, 3600);
      expect(rx.webhooks().length).toBe(sent);
      const kept = (await s.call('/history?limit=100')).body.result.find(
        (h: { payload: { block: { number: string } } }) => h.payload.block.number === '200',
      );
      expect(kept.errorMessage).toMatch(/^not sent: the stream is in error/);

      // The owner sets one active again: its URL starts over at 100% and the retry schedule resumes.
      rx.state.answer = () => 200;
      const resumed = await post(`/streams/evm/${rateStreams[0]}/status`, { status: 'active' });
      // The error's message goes; the chain this server does not follow is still said.
      expect(resumed.body).toMatchObject({ status: 'active', statusMessage: NOT_FOLLOWED.evm });
      await advance(s, 10 * 60);
      const delivered = rx.webhooks().filter((w) => w.body.streamId === rateStreams[0] && w.body.block.number === '100');
      expect(delivered.map((d) => d.body.retries)).toEqual([0, 1]); // the failed first try, then its retry once resumed
      expect((await s.call(`/stats/${rateStreams[0]}`)).body.totalWebhooksDelivered).toBe(1);

      // 24 h in error: the others are terminated, with an e-mail; their queued webhooks move to history; new blocks are dropped.
      const before = smtp.mails.length;
      await advance(s, 24 * 3600);
      const ended = await stream(rateStreams[1]!);
      expect(ended.status).toBe('terminated');
      expect(ended.statusMessage).toMatch(/stayed in error for 24 hours/);
      expect((await stream(rateStreams[0]!)).status).toBe('active');
      await until(() => smtp.mails.slice(before).filter((m) => /stayed in error for 24 hours/.test(m.data)).length >= 31, 10_000);
      // (Long subjects are folded on the wire; the body says it plainly.)
      expect(smtp.mails.slice(before).filter((m) => /stayed in error for 24 hours/.test(m.data))).toHaveLength(31);
      expect((await enqueue(rateStreams[1]!, [webhook(300)])).body.results).toEqual(['dropped']);
      expect((await post(`/streams/evm/${rateStreams[1]}/status`, { status: 'active' })).status).toBe(400);
      const moved = (await s.call('/history?limit=100&excludePayload=true')).body.result.filter(
        (h: { errorMessage: string }) => h.errorMessage === 'not sent: the stream was terminated',
      );
      expect(moved).toHaveLength(30); // each terminated stream's one waiting webhook (the one moved in had none)
      expect(moved[0].payload).toBeUndefined();
    });

    it("keeps a failing URL's rate when a stream is only paused and resumed", async () => {
      const url = `${rx.url}?pause`;
      const id = await make({ webhookUrl: url });
      rx.state.answer = (r) => (r.body.streamId === id ? 500 : 200);
      await enqueue(
        id,
        Array.from({ length: 30 }, (_, i) => webhook(400 + i)),
      );
      await advance(s, 0);
      expect((await stream(id)).status).toBe('active'); // 70%
      expect((await post(`/streams/evm/${id}/status`, { status: 'paused' })).body.status).toBe('paused');
      expect((await post(`/streams/evm/${id}/status`, { status: 'active' })).body.status).toBe('active');
      await enqueue(id, [webhook(430)]);
      await advance(s, 0);
      expect((await stream(id)).status).toBe('error'); // the 31st failure: 69%
    });

    it("sends no retry of a webhook that a replay delivered, and counts it out of the stream's queue", async () => {
      const id = await make({ webhookUrl: `${rx.url}?replay-retry` });
      rx.state.answer = (r) => (r.body.streamId === id ? 500 : 200);
      await enqueue(id, [webhook(8)]);
      await advance(s, 0);
      const [failed] = await failedLinesNow(id);
      expect(Date.parse(failed.nextRetryAt) - (await now())).toBeGreaterThan(0);
      rx.state.answer = () => 200;
      expect((await post(`/history/replay/${failed.historyId}`)).body).toMatchObject({ delivered: true, status: 200 });
      expect(await metric('chainpost_stream_webhooks_queued', id)).toBe(0);
      // Past the retry's time, and past the 10-minute one after it.
      await advance(s, 61);
      await advance(s, 11 * 60);
      const mine = (n: string) => rx.webhooks().filter((w) => w.body.streamId === id && w.body.block.number === n);
      // The failed try and the replay.
      expect(mine('8').map((w) => w.body.retries)).toEqual([0, 0]);
      await enqueue(id, [webhook(9)]);
      await advance(s, 0);
      // Nothing waits besides the webhook the header is on.
      expect(mine('9').map((w) => w.headers['x-queue-size'])).toEqual(['1']);
      expect(await metric('chainpost_stream_webhooks_queued', id)).toBe(0);
      expect((await stream(id)).status).toBe('active');
      expect((await s.call(`/stats/${id}`)).body).toMatchObject({ totalWebhooksDelivered: 1, totalWebhooksFailed: 1 });
    });

    it('goes to error when 10,000 webhooks wait undelivered', async () => {
      const id = await make({ webhookUrl: `${rx.url}?cap` });
      // Whatever this test's outcome, the stream goes with what it queued and the POST hanging at the receiver times
      // out, so no later test waits behind it.
      onTestFinished(async () => {
        await s.call(`/streams/evm/${id}`, { method: 'DELETE' });
        await time.pass(DELIVERY_TIMEOUT_MS);
        await advance(s, 0);
      });
      // Never answered (rather than failing), so the success-rate rule cannot put the stream in error first.
      rx.state.answer = (r) => (r.body.streamId === id ? 'hang' : 200);
      const batch = (from: number) =>
        Array.from({ length: 5_000 }, (_, i) => ({ chainId: '0x1', block: block(from + i), logs: [], txs: [] }));
      expect((await enqueue(id, batch(0))).status).toBe(200);
      const r = await enqueue(id, batch(5_000));
      expect(r.body.results.at(-1)).toBe('queued');
      const st = await stream(id);
      expect(st.status).toBe('error');
      expect(st.statusMessage).toMatch(/queue of undelivered webhooks reached 10000/);
      expect((await enqueue(id, [webhook(1)])).body.results).toEqual(['history']);
    }, 60_000);

    it('replays a failed webhook on demand without changing the stream, and pages and purges history', async () => {
      const id = await make({ webhookUrl: `${rx.url}?replay` });
      rx.state.answer = (r) => (r.body.streamId === id ? 500 : 200);
      await enqueue(id, [webhook(7)]);
      await advance(s, 0);
      const h = (await s.call('/history?limit=100')).body.result.find((x: { streamId: string }) => x.streamId === id);
      expect(h.payload.block.number).toBe('7');
      const failedReplay = await post(`/history/replay/${h.id}`);
      expect(failedReplay.body).toMatchObject({ id: h.id, delivered: false, status: 500 });
      rx.state.answer = () => 200;
      const replayed = await post(`/history/replay/${id}/${h.id}`);
      expect(replayed.status).toBe(200);
      expect(replayed.body).toMatchObject({ id: h.id, streamId: id, delivered: true, status: 200 });
      // The record says it was delivered, and when (the first time), and keeps its error.
      const record = async () => (await s.call('/history?limit=100')).body.result.find((x: { id: string }) => x.id === h.id);
      expect(h).toMatchObject({ delivered: false, deliveredAt: null });
      expect(Date.parse(replayed.body.deliveredAt)).toBeGreaterThanOrEqual((await now()) - 1000);
      expect(await record()).toMatchObject({
        delivered: true,
        deliveredAt: replayed.body.deliveredAt,
        errorMessage: 'the receiver answered HTTP 500',
      });
      await advance(s, 1);
      expect((await post(`/history/replay/${h.id}`)).body).toMatchObject({ delivered: true, deliveredAt: replayed.body.deliveredAt });
      // The delivered replay ended its retry, due a minute after the first try.
      await advance(s, 60);
      expect(await record()).toMatchObject({ delivered: true, deliveredAt: replayed.body.deliveredAt, tinyPayload: { retries: 0 } });
      // The first try, the refused replay and the two delivered ones.
      expect(rx.webhooks().filter((w) => w.body.streamId === id && w.body.block.number === '7')).toHaveLength(4);
      expect((await stream(id)).status).toBe('active');
      expect((await post(`/history/replay/${id}/${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}`)).status).toBe(404);
      const other = (await cliInProcess(['keys', 'create', '--name', 'history-stranger'], s.dir)).stdout.trim().split('\n').at(-1)!;
      expect((await s.call(`/history/replay/${h.id}`, { method: 'POST', headers: { 'x-api-key': other } })).status).toBe(404);
      expect((await s.call('/history', { headers: { 'x-api-key': other } })).body.total).toBe(0);

      // Paging newest first by cursor, to the end.
      const total = (await s.call('/history?limit=1')).body.total;
      const ids: string[] = [];
      let cursor: string | undefined;
      do {
        const p = await s.call(`/history?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
        ids.push(...p.body.result.map((x: { id: string }) => x.id));
        cursor = p.body.cursor;
      } while (cursor);
      expect(ids).toHaveLength(total);
      expect([...ids].sort().reverse()).toEqual(ids);
      expect((await s.call('/history?limit=0')).body.details.field).toBe('limit');
      expect((await s.call('/history?cursor=bm9wZQ')).status).toBe(400);

      // Kept 7 days after the last failure, then purged (the latest records were written when streams ended, a day in).
      await advance(s, 9 * 86_400);
      expect((await s.call('/history?limit=1')).body.total).toBe(0);
      expect((await s.call('/history/logs?limit=1')).body.total).toBe(0);
    });
  });
});
