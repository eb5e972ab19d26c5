import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { advance, cli, cliInProcess, startChainpost, stopAndClean, type Running } from './helpers.js';

/**
 * `chainpost keys rotate` beside a running server on its test clock: the new key works at once, the old one until
 * its grace period is over (the server's clock moved on, no sleeping), then 401; the Streams API sees one tenant
 * throughout.
 */
describe('chainpost keys rotate', () => {
  // One server: each test rotates a key of its own name; the one refusing a key at once runs before the clock moves on.
  // The CLI runs in this process but for the --grace 0 rotation, another process's change the server sees at once.
  let s: Running;
  beforeAll(async () => {
    s = await startChainpost({ CHAINPOST_TEST_CLOCK: '1' });
  });
  afterAll(() => stopAndClean(s));

  it('with --grace 0 refuses the old key at once; a bad --grace or an unknown key exits 1 naming it', async () => {
    const made = await cliInProcess(['keys', 'create', '--name', 'app-now'], s.dir);
    const old = made.stdout.trim().split('\n').at(-1)!;
    const bad = await cliInProcess(['keys', 'rotate', 'app-now', '--grace', 'soon'], s.dir);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(
      /^chainpost: keys rotate: --grace: not a duration: "soon" \(a number and s, m, h or d, such as 24h; or 0\)$/m,
    );
    const unknown = await cliInProcess(['keys', 'rotate', 'nobody'], s.dir);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^chainpost: no key named or with id "nobody"$/m);
    expect((await s.call('/settings', { headers: { 'x-api-key': old } })).status).toBe(200);

    const rotated = await cli(['keys', 'rotate', 'app-now', '--grace', '0'], s.dir);
    expect(rotated.code, rotated.stderr).toBe(0);
    const fresh = rotated.stdout.trim().split('\n').at(-1)!;
    expect((await s.call('/settings', { headers: { 'x-api-key': old } })).status).toBe(401);
    expect((await s.call('/settings', { headers: { 'x-api-key': fresh } })).status).toBe(200);
    const help = await cliInProcess(['keys', 'rotate', '--help'], s.dir);
    expect(help.stdout).toMatch(/^usage: chainpost keys rotate \[--grace D\] N\n/);
  }, 60_000);

  it('prints the new key once; both work until the grace period ends, then only the new one', async () => {
    const made = await cliInProcess(['keys', 'create', '--name', 'app', '--email', 'ops@example.com'], s.dir);
    expect(made.code, made.stderr).toBe(0);
    const old = made.stdout.trim().split('\n').at(-1)!;
    const as = (key: string) => ({ headers: { 'x-api-key': key } });
    const put = await s.call('/settings', { method: 'POST', json: { region: 'eu-central-1' }, ...as(old) });
    expect(put.status, JSON.stringify(put.body)).toBe(200);

    const rotated = await cliInProcess(['keys', 'rotate', 'app', '--grace', '1h'], s.dir);
    expect(rotated.code, rotated.stderr).toBe(0);
    const lines = rotated.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    const [, oldId, until] = /^rotated key "app": new id \w{12}; the old key \(id (\w{12})\) works until (\S+)$/.exec(lines[0]!)!;
    const fresh = lines[1]!;
    expect(fresh).toMatch(/^cpk_[A-Za-z0-9_-]{32}$/);
    expect(fresh).not.toBe(old);
    // The CLI's wall clock set the expiry; the server's clock started just before it.
    const serverNow = Date.parse((await s.call('/admin/clock')).body.now);
    expect(Date.parse(until!) - serverNow).toBeGreaterThan(3_600_000 - 60_000);
    expect(Date.parse(until!) - serverNow).toBeLessThanOrEqual(3_600_000 + 60_000);

    const list = await cliInProcess(['keys', 'list'], s.dir);
    expect(list.stdout).toMatch(new RegExp(`^app\\s+${oldId}\\s+app\\s+ops@example.com\\s+\\S+\\s+${until!.replace(/\./g, '\\.')}$`, 'm'));
    expect(list.stdout.split('\n').filter((l) => l.startsWith('app '))).toHaveLength(2);

    // Both keys, one tenant: the settings written with the old key are the new key's.
    for (const key of [old, fresh]) {
      const r = await s.call('/settings', as(key));
      expect(r.status).toBe(200);
      expect(r.body.region).toBe('eu-central-1');
    }
    await advance(s, 3_600 - 120);
    expect((await s.call('/settings', as(old))).status).toBe(200);
    await advance(s, 240);
    const refused = await s.call('/settings', as(old));
    expect(refused.status).toBe(401);
    expect((await s.call('/settings', as(fresh))).status).toBe(200);
    // Refused keys are not listed, and the CLI (on its own clock) has not yet reached the expiry.
    expect((await cliInProcess(['keys', 'list'], s.dir)).stdout.split('\n').filter((l) => l.startsWith('app '))).toHaveLength(2);
  }, 60_000);
});
