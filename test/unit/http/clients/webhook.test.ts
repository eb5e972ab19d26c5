import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RECEIVER_TEXT_MAX, refusal } from '../../../../engine/delivery/webhook.js';
import { TargetPolicy } from '../../../../engine/net/targets.js';
import { systemResolver } from '../../../../http/clients/dns.js';
import { deadline, undiciSender } from '../../../../http/clients/webhook.js';
import { systemTicker } from '../../../../app/process.js';
import { manualTicker } from '../../../helpers.js';

/**
 * A receiver that never answers fails its delivery at the timeout, not before: the retry schedule and the
 * soak's probe date each failure from the send. undici's own timeouts tick every 499 ms and fired up to a tick
 * early (a soak saw a 10-s one fail 5 ms early); sends spread over a tick's phases show it.
 */
describe('the webhook timeout', () => {
  let hang: Server;
  let url: string;
  beforeAll(async () => {
    hang = createServer(() => {}); // reads the request, never answers
    await new Promise<void>((r) => hang.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(hang.address() as AddressInfo).port}/hook`;
  });
  afterAll(async () => {
    hang.closeAllConnections();
    await new Promise((r) => hang.close(r));
  });

  it('fails a POST nobody answers no earlier than its timeout, whenever it was sent', async () => {
    const sender = undiciSender({ targets: new TargetPolicy('allow', systemResolver), ticker: systemTicker });
    // 3 ticks of undici's 499 ms: a send late in a tick would have failed up to a tick early.
    const timeoutMs = 1_497;
    try {
      const sends = Array.from({ length: 10 }, async (_, i) => {
        await new Promise((r) => setTimeout(r, i * 53));
        const sent = performance.now();
        const outcome = await sender.post(url, Buffer.from('{}'), { 'content-type': 'application/json' }, timeoutMs);
        return { outcome, tookMs: performance.now() - sent };
      });
      for (const { outcome, tookMs } of await Promise.all(sends)) {
        expect(outcome).toEqual({ error: 'no answer within 1.497 s', timedOut: true });
        expect(tookMs).toBeGreaterThanOrEqual(timeoutMs);
        expect(tookMs).toBeLessThan(timeoutMs + 500);
      }
    } finally {
      await sender.close();
    }
  });

  it('deadline: aborts with a TimeoutError once its time has passed on the monotonic clock; clear() stops it', async () => {
    const started = performance.now();
    const d = deadline(30, systemTicker);
    const reason = await new Promise<unknown>((r) => d.signal.addEventListener('abort', () => r(d.signal.reason)));
    expect(performance.now() - started).toBeGreaterThanOrEqual(30);
    expect((reason as Error).name).toBe('TimeoutError');
    const cleared = deadline(10, systemTicker);
    cleared.clear();
    await new Promise((r) => setTimeout(r, 40));
    expect(cleared.signal.aborted).toBe(false);
  });

  it('deadline: runs on its ticker (real time a test moves): not aborted a millisecond before its time, aborted at it', async () => {
    const time = manualTicker();
    const d = deadline(10_000, time.ticker);
    await time.pass(9_999);
    expect(d.signal.aborted).toBe(false);
    await time.pass(1);
    expect(d.signal.aborted).toBe(true);
    expect((d.signal.reason as Error).name).toBe('TimeoutError');
    const cleared = deadline(10, time.ticker);
    cleared.clear();
    expect(time.armed()).toBeUndefined();
    await time.pass(10);
    expect(cleared.signal.aborted).toBe(false);
  });
});

/**
 * A receiver's answer other than 200 comes back with the start of its text (its own words for the failure, which the
 * error keeps: refusal), 2 KiB of it at most; a 200's body is not read.
 */
describe("the receiver's answer text", () => {
  let server: Server;
  let url: string;
  const answers: Array<{ status: number; body: string | Buffer }> = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const a = answers.shift()!;
        res.writeHead(a.status, { 'content-type': 'text/plain' }).end(a.body);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('answers the start of a failing answer, 2 KiB of it at most, and none of a 200', async () => {
    const sender = undiciSender({ targets: new TargetPolicy('allow', systemResolver), ticker: systemTicker });
    const post = () => sender.post(url, Buffer.from('{}'), { 'content-type': 'application/json' }, 5_000);
    try {
      answers.push({ status: 500, body: '<img src=x onerror=alert(1)>\nsecond line' });
      expect(await post()).toEqual({ status: 500, answer: '<img src=x onerror=alert(1)>\nsecond line' });
      // 1 MB of text: its first characters alone; the connection goes on serving the next POST.
      answers.push({ status: 503, body: 'é'.repeat(500_000) });
      expect(await post()).toEqual({ status: 503, answer: 'é'.repeat(1024) });
      answers.push({ status: 404, body: '' });
      expect(await post()).toEqual({ status: 404, answer: '' });
      answers.push({ status: 200, body: 'fine' });
      expect(await post()).toEqual({ status: 200 });
    } finally {
      await sender.close();
    }
  });

  it('refusal: the status, then the text on one line, trimmed and cut at RECEIVER_TEXT_MAX, after a colon; the status alone for none', () => {
    expect(refusal(500, undefined)).toBe('the receiver answered HTTP 500');
    expect(refusal(500, ' \n\t ')).toBe('the receiver answered HTTP 500');
    expect(refusal(400, 'bad\r\nrequest\u0000 <script>')).toBe('the receiver answered HTTP 400: bad request <script>');
    expect(refusal(503, 'x'.repeat(1_000))).toBe(`the receiver answered HTTP 503: ${'x'.repeat(RECEIVER_TEXT_MAX)}…`);
  });
});
