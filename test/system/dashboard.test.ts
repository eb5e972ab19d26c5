import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { serveDevnet, type Devnet } from '../devnet-harness.js';
import { tempDir } from '../helpers.js';
import { startReceiver } from '../receiver.js';
import { registerSecret } from '../secret-scan.js';

/**
 * The dashboard (GET /dashboard) in a real browser: Debian's chromium-headless-shell driven by playwright-core (no
 * browser download), over the real server on the embedded anvil devnet and a real receiver. Sign in, see the chain
 * move, create a stream with the form, see its delivery in the log, make the receiver fail, see the failure with its
 * error text and the stream's stats, replay it and see it delivered, pause and resume. The stream's tag and
 * description, and the receiver's answer, carry markup that must show as text and run nothing. Any console error
 * (a CSP violation is one), page error, request to a host other than loopback, or the key in a URL fails it. A
 * screenshot of each screen is saved under the test's temp dir (its path is printed).
 */

/** Calls back into the test: hostile markup that ran would call it. */
const PWNED = 'pwned';
const HOSTILE_TAG = `<img src=x onerror="${PWNED}('tag')">`;
const HOSTILE_DESCRIPTION = `<script>${PWNED}('description')</script><b>bold?</b>`;
const HOSTILE_ERROR = `<img src=x onerror="${PWNED}('receiver')"><script>${PWNED}('receiver')</script>`;
/** The address the stream watches: the devnet's account (1). */
const WATCHED = '0x70997970c51812dc3a010c7d01b50e0d17dc79c8';

/** The browser Debian installs (`apt-get install chromium-headless-shell`; .ci/run does when it is missing). */
function chromiumPath(): string {
  try {
    return execFileSync('sh', ['-c', 'command -v chromium-headless-shell'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error('chromium-headless-shell is not installed: `apt-get install chromium-headless-shell` (Debian), as .ci/run does');
  }
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);
describe('the dashboard in chromium-headless-shell', () => {
  let s: Devnet;
  let rx: Awaited<ReturnType<typeof startReceiver>>;
  let browser: Browser;
  let page: Page;
  const shots = mkdtempSync(join(tmpdir(), 'chainpost-dashboard-'));
  let shot = 0;
  const screenshot = (name: string) =>
    page.screenshot({ path: join(shots, `${String(++shot).padStart(2, '0')}-${name}.png`), fullPage: true });
  /** What must stay empty: console errors, page errors, requests off loopback, URLs with the key, hostile markup that ran. */
  const problems: string[] = [];
  const ran: string[] = [];
  let streamId = '';

  beforeAll(async () => {
    const executablePath = chromiumPath();
    rx = await startReceiver();
    [s, browser] = await Promise.all([
      // A block a second; 1 confirmation, so a transfer's confirmed webhook follows its first within a block.
      serveDevnet(tempDir(), { CHAINPOST_DEVNET_BLOCK_TIME: '1', CHAINPOST_CONFIRMATIONS: '0x539=1' }),
      chromium.launch({ executablePath }),
    ]);
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    await context.route('**/*', (route) => {
      const url = new URL(route.request().url());
      if (LOOPBACK.has(url.hostname)) return route.continue();
      problems.push(`a request off loopback: ${url.href}`);
      return route.abort();
    });
    page = await context.newPage();
    await page.exposeFunction(PWNED, (where: string) => ran.push(where));
    page.on('console', (m) => {
      if (m.type() !== 'error') return;
      const at = m.location().url;
      problems.push(`console error: ${m.text()} (${at})`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('request', (r) => {
      if (r.url().includes(s.key)) problems.push(`the key in a URL: ${r.url()}`);
    });
    process.stdout.write(`dashboard screenshots: ${shots}\n`);
  }, 60_000);

  afterEach(() => {
    // Each step's own: emptied so that the next step reports its own.
    const seen = problems.splice(0);
    expect(seen).toEqual([]);
    expect(ran, 'hostile markup ran').toEqual([]);
  });

  afterAll(async () => {
    await browser?.close();
    await s?.stop('SIGKILL');
    rmSync(s?.dir ?? '', { recursive: true, force: true });
    await rx?.close();
  });

  /** A native transfer to the watched address, from the devnet's account (0), sent to anvil itself. */
  const transfer = async (): Promise<void> => {
    const res = await fetch(s.devnet.rpc, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'eth_sendTransaction',
        params: [{ from: s.devnet.accounts[0], to: WATCHED, value: '0x1' }],
      }),
    });
    expect(((await res.json()) as { result?: string }).result).toMatch(/^0x[0-9a-f]{64}$/);
  };
  const streamRow = () => page.locator(`#streams tr[data-stream="${streamId}"]`);

  it('serves the page under a CSP of its own origin, and signs in with a key kept in session storage alone', async () => {
    const res = await page.goto(`${s.url}/dashboard`);
    expect(res?.status()).toBe(200);
    expect(res?.headers()['content-security-policy']).toMatch(
      /default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'/,
    );
    await page.locator('#sign-in').waitFor();
    await screenshot('sign-in');
    // A wrong key is refused with the API's message, and not kept.
    await page.fill('#sign-in input[name=key]', 'cpk_not_a_key_0123456789abcdef');
    await page.click('#sign-in button[type=submit]');
    await expect.poll(() => page.locator('#sign-in [role=alert]').textContent()).toMatch(/^401: /);
    // The browser logs the refused call as an error: that one is expected here.
    expect(problems.splice(0)).toEqual([expect.stringMatching(/^console error: Failed to load resource: .* 401 .*\/stats\)$/)]);
    // (Browser code as text: the tests' TypeScript has no DOM types.)
    expect(await page.evaluate('sessionStorage.length')).toBe(0);
    await page.fill('#sign-in input[name=key]', s.key);
    await page.click('#sign-in button[type=submit]');
    await page.locator('#chains').waitFor();
    const stored = await page.evaluate('({ session: { ...sessionStorage }, local: localStorage.length, cookie: document.cookie })');
    expect(stored).toEqual({ session: { 'chainpost.apiKey': s.key }, local: 0, cookie: '' });
  });

  it('shows the devnet chain moving', async () => {
    const head = page.locator('#chains tr[data-chain="0x539"] .head');
    await head.waitFor();
    const first = Number(await head.textContent());
    await expect.poll(async () => Number(await head.textContent()), { timeout: 15_000 }).toBeGreaterThan(first);
    await screenshot('chains');
  });

  it('creates an EVM stream with the form, its tag and description shown as text', async () => {
    const form = page.locator('#create-stream');
    await form.locator('select[name=family]').selectOption('evm');
    await form.locator('input[name=webhookUrl]').fill(rx.url);
    await form.locator('input[name=description]').fill(HOSTILE_DESCRIPTION);
    await form.locator('input[name=tag]').fill(HOSTILE_TAG);
    await form.locator('input[name=chainIds]').fill('0x539');
    expect(await form.locator('input[name=includeNativeTxs]').isChecked()).toBe(true);
    await form.locator('textarea[name=addresses]').fill(WATCHED);
    await form.locator('button[type=submit]').click();
    const outcome = form.locator('[role=status]');
    await expect.poll(() => outcome.textContent(), { timeout: 10_000 }).toMatch(/^created EVM stream [0-9a-f-]{36} with 1 address/);
    streamId = /stream ([0-9a-f-]{36})/.exec((await outcome.textContent())!)![1]!;
    // The server has it as the form gave it.
    const stored = (await s.call(`/streams/evm/${streamId}`)).body;
    expect(stored).toMatchObject({
      tag: HOSTILE_TAG,
      description: HOSTILE_DESCRIPTION,
      webhookUrl: rx.url,
      chainIds: ['0x539'],
      status: 'active',
    });
    await streamRow().waitFor();
    expect(await streamRow().locator('.tag').textContent()).toBe(HOSTILE_TAG);
    expect(await streamRow().locator('.description').textContent()).toBe(HOSTILE_DESCRIPTION);
    expect(await streamRow().locator('.status').textContent()).toBe('active');
    await screenshot('stream-created');
  });

  it('shows a delivery in the log as it arrives', async () => {
    await transfer();
    const delivered = page.locator(`#log tr[data-stream="${streamId}"] .outcome`, { hasText: 'success' });
    await delivered.first().waitFor({ timeout: 20_000 });
    expect(rx.webhooks().length).toBeGreaterThan(0);
    expect(await page.locator(`#log tr[data-stream="${streamId}"] .tag`).first().textContent()).toBe(HOSTILE_TAG);
    await expect.poll(() => streamRow().locator('.delivered').textContent(), { timeout: 10_000 }).not.toBe('0');
    await screenshot('delivered');
  });

  it("shows a failed delivery: the receiver's error text, the body, the stream's stats", async () => {
    // Every webhook of the transfer (first and confirmed) delivered before the receiver fails.
    await expect
      .poll(() => rx.webhooks().filter((w) => w.body.streamId === streamId).length, { timeout: 20_000 })
      .toBeGreaterThanOrEqual(2);
    rx.state.answer = () => 500;
    rx.state.answerText = (_r, status) => (status === 200 ? 'ok' : HOSTILE_ERROR);
    await transfer();
    const failed = page.locator(`#failed li[data-stream="${streamId}"]`);
    await failed.first().waitFor({ timeout: 20_000 });
    const history = (await s.call('/history?limit=10')).body.result as Array<{ id: string; errorMessage: string; payload: unknown }>;
    const record = history[0]!;
    const row = page.locator(`#failed li[data-history="${record.id}"]`);
    // The error as the server records it, the receiver's own words in it, shown as text.
    expect(record.errorMessage).toBe(`the receiver answered HTTP 500: ${HOSTILE_ERROR}`);
    expect(await row.locator('.error-text').textContent()).toBe(record.errorMessage);
    expect(await row.locator('.undelivered-mark').count()).toBe(1);
    await row.locator('summary').click();
    expect(JSON.parse((await row.locator('pre.body').textContent())!)).toEqual(record.payload);
    expect(await row.locator('pre.body').textContent()).toContain(HOSTILE_TAG.replaceAll('"', '\\"'));
    // The failure in the log and in the stream's stats.
    await page.locator(`#log tr[data-stream="${streamId}"] .outcome`, { hasText: 'failed' }).first().waitFor({ timeout: 10_000 });
    await expect.poll(() => streamRow().locator('.failed').textContent(), { timeout: 10_000 }).not.toBe('0');
    await screenshot('failed');
  });

  it("shows the stream's queue size and last error: its failed webhooks wait for their retry", async () => {
    const stats = (await s.call(`/stats/${streamId}`)).body as { queueSize: number; lastError: { message: string } | null };
    expect(stats.queueSize).toBeGreaterThan(0);
    await expect
      .poll(() => streamRow().locator('[data-stat="queueSize"] b').textContent(), { timeout: 10_000 })
      .toBe(String(stats.queueSize));
    expect(await streamRow().locator('.last-error .error-text').textContent()).toBe(stats.lastError?.message);
    await screenshot('queue');
  });

  it('replays the failed delivery and shows it delivered', async () => {
    rx.state.answer = () => 200;
    rx.state.answerText = (_r, status) => (status === 200 ? 'ok' : '');
    const record = ((await s.call('/history?limit=1')).body.result as Array<{ id: string }>)[0]!;
    const row = page.locator(`#failed li[data-history="${record.id}"]`);
    await row.locator('button.replay').click();
    await expect.poll(() => row.locator('[role=status]').textContent(), { timeout: 10_000 }).toBe('delivered (HTTP 200)');
    await row.locator('.delivered-mark').waitFor({ timeout: 10_000 });
    expect((await s.call('/history?limit=1')).body.result[0]).toMatchObject({ id: record.id, delivered: true });
    await screenshot('replayed');
  });

  it('replays every failed delivery of the stream from its row', async () => {
    const undelivered = async () =>
      ((await s.call('/history?limit=100')).body.result as Array<{ delivered: boolean }>).filter((h) => !h.delivered).length;
    rx.state.answer = () => 500;
    const before = await undelivered();
    await transfer();
    // The transfer's two webhooks (first and confirmed) failed.
    await expect.poll(undelivered, { timeout: 20_000 }).toBe(before + 2);
    await expect.poll(() => page.locator('#failed .undelivered-mark').count(), { timeout: 10_000 }).toBe(before + 2);
    rx.state.answer = () => 200;
    await streamRow().locator('button.replay-all').click();
    await expect
      .poll(() => streamRow().locator('[role=status]').textContent(), { timeout: 20_000 })
      .toBe(`replayed ${before + 2}: ${before + 2} delivered`);
    expect(await undelivered()).toBe(0);
    await expect.poll(() => page.locator('#failed .undelivered-mark').count(), { timeout: 10_000 }).toBe(0);
    await expect.poll(() => streamRow().locator('[data-stat="queueSize"] b').textContent(), { timeout: 10_000 }).toBe('0');
    await screenshot('replayed-all');
  });

  it('pauses and resumes the stream', async () => {
    await streamRow().locator('button.pause').click();
    await expect.poll(() => streamRow().locator('.status').textContent(), { timeout: 10_000 }).toBe('paused');
    expect((await s.call(`/streams/evm/${streamId}`)).body.status).toBe('paused');
    await screenshot('paused');
    await streamRow().locator('button.resume').click();
    await expect.poll(() => streamRow().locator('.status').textContent(), { timeout: 10_000 }).toBe('active');
    expect((await s.call(`/streams/evm/${streamId}`)).body.status).toBe('active');
  });

  it('lists, creates, rotates and revokes the keys of the tenant', async () => {
    const keys = page.locator('#keys');
    const own = keys.locator('tr', { has: page.locator('.current') });
    await own.waitFor({ timeout: 15_000 });
    // A new key, shown once, that the API takes.
    await keys.locator('#create-key input[name=name]').fill('dashboard-made');
    await keys.locator('#create-key button[type=submit]').click();
    const secret = keys.locator('.new-key code.secret');
    await expect.poll(() => secret.textContent(), { timeout: 10_000 }).toMatch(/^cpk_/);
    const made = (await secret.textContent())!;
    registerSecret(made);
    expect((await s.call('/stats', { headers: { 'x-api-key': made } })).status).toBe(200);
    const row = keys.locator('tr', { has: page.locator('.name', { hasText: /^dashboard-made$/ }) });
    await row.waitFor({ timeout: 10_000 });
    await screenshot('key-created');
    // Rotated at once (grace 0): the old key is refused, the new one shown and taken.
    await row.locator('button.rotate').click();
    await expect.poll(() => secret.textContent(), { timeout: 10_000 }).not.toBe(made);
    const rotated = (await secret.textContent())!;
    registerSecret(rotated);
    expect((await s.call('/stats', { headers: { 'x-api-key': made } })).status).toBe(401);
    expect((await s.call('/stats', { headers: { 'x-api-key': rotated } })).status).toBe(200);
    // Revoked after a confirmation: gone from the list, refused by the API.
    const current = keys.locator('tr', { has: page.locator('.name', { hasText: /^dashboard-made$/ }) });
    await current.locator('button.revoke').click();
    await current.locator('button.confirm-revoke').click();
    await expect.poll(() => current.count(), { timeout: 10_000 }).toBe(0);
    expect((await s.call('/stats', { headers: { 'x-api-key': rotated } })).status).toBe(401);
    expect(await keys.locator('.new-key').count(), 'a revoked key still shown').toBe(0);
    expect(await own.count()).toBe(1);
    await screenshot('keys');
  });

  it('rendered every hostile text as text: no element, handler or script of theirs in the page', async () => {
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.locator('script').count()).toBe(1);
    expect(await page.locator('#streams b', { hasText: 'bold?' }).count()).toBe(0);
    expect(await page.getByText(HOSTILE_TAG, { exact: true }).count()).toBeGreaterThan(0);
    expect(await page.getByText(HOSTILE_DESCRIPTION, { exact: true }).count()).toBe(1);
  });
});
