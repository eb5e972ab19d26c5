import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advance, startChainpost, stopAndClean, type Running } from './helpers.js';
import { startReceiver } from './receiver.js';
import { moralisFor } from './sdk.js';

describe('the Moralis SDK (moralis@2.27.2) against the Streams API', () => {
  let s: Running;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  let Moralis: any;
  let secret: string;
  beforeAll(async () => {
    rx = await startReceiver();
    s = await startChainpost({ CHAINPOST_TEST_CLOCK: '1', CHAINPOST_NOW: '2026-11-22T12:00:00Z', CHAINPOST_RATE_LIMIT: '0' });
    secret = (await s.call('/settings')).body.secretKey;
    Moralis = await moralisFor(s.url, s.key, { streamsSecret: secret });
  });
  afterAll(async () => {
    await stopAndClean(s);
    await rx.close();
  });

  it('manages a stream through its whole life', async () => {
    const added = await Moralis.Streams.add({
      webhookUrl: rx.url,
      description: 'sdk',
      tag: 'sdk-tag',
      chains: ['0x1', 137],
      includeNativeTxs: true,
    });
    const stream = added.result;
    expect(stream.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(stream.chains.map((c: { hex: string }) => c.hex)).toEqual(['0x1', '0x89']);
    expect(stream.includeNativeTxs).toBe(true);
    expect(stream.status).toBe('active');

    const updated = await Moralis.Streams.update({ id: stream.id, description: 'sdk updated', chains: ['0x1'] });
    expect(updated.result.description).toBe('sdk updated');
    expect((await Moralis.Streams.getById({ id: stream.id })).result.tag).toBe('sdk-tag');

    const all = await Moralis.Streams.getAll({ limit: 10 });
    expect(all.result.map((x: { id: string }) => x.id)).toContain(stream.id);
    expect(all.hasNext()).toBe(false);

    const status = await Moralis.Streams.updateStatus({ id: stream.id, status: 'paused' });
    expect(status.raw.status).toBe('paused');
    await Moralis.Streams.updateStatus({ id: stream.id, status: 'active' });

    const addrs = ['0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266', '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'];
    const addedAddr = await Moralis.Streams.addAddress({ id: stream.id, address: addrs });
    expect(addedAddr.raw.streamId).toBe(stream.id);
    const listed = await Moralis.Streams.getAddresses({ id: stream.id, limit: 10 });
    expect(listed.result.map((a: { address: { lowercase: string } }) => a.address.lowercase).sort()).toEqual(
      addrs.map((a) => a.toLowerCase()).sort(),
    );
    await Moralis.Streams.deleteAddress({ id: stream.id, address: addrs[0] });
    expect((await Moralis.Streams.getAddresses({ id: stream.id, limit: 10 })).result).toHaveLength(1);

    const settings = await Moralis.Streams.readSettings();
    expect(settings.raw.secretKey).toBe(secret);

    // A delivered webhook verifies with the SDK, and a failed one shows in its history and can be retried.
    rx.state.answer = () => 500;
    await s.call(`/admin/streams/${stream.id}/webhooks`, {
      method: 'POST',
      json: {
        webhooks: [{ chainId: '0x1', confirmed: true, block: { number: '5', hash: '0x05', timestamp: '1795000000' }, logs: [], txs: [] }],
      },
    });
    await advance(s, 0);
    const sent = rx.webhooks().at(-1)!;
    expect(Moralis.Streams.verifySignature({ body: sent.body, signature: sent.headers['x-signature'] })).toBe(true);
    expect(() =>
      Moralis.Streams.verifySignature({ body: { ...sent.body, tag: 'forged' }, signature: sent.headers['x-signature'] }),
    ).toThrow(/Signature is not valid/);

    const history = await Moralis.Streams.getHistory({ limit: 10 });
    const record = history.result.find((h: { streamId: string }) => h.streamId === stream.id);
    expect(record.tinyPayload).toMatchObject({ chainId: '0x1', confirmed: true, retries: 0 });
    rx.state.answer = () => 200;
    const retried = await Moralis.Streams.retry({ streamId: stream.id, id: record.id });
    expect(retried.raw.delivered).toBe(true);

    const stats = await Moralis.Streams.getStats();
    expect(stats.raw.totalWebhooksFailed).toBe(1);
    const byId = await Moralis.Streams.getStatsById({ streamId: stream.id });
    expect(byId.raw.streamId).toBe(stream.id);

    const deleted = await Moralis.Streams.delete({ id: stream.id });
    expect(deleted.result.id).toBe(stream.id);
    await expect(Moralis.Streams.getById({ id: stream.id })).rejects.toThrow(/no stream/);
  });
});
