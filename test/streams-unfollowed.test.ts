import { rmSync } from 'node:fs';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startChainpost, tempDir, until, type Running } from './helpers.js';
import { startReceiver } from './receiver.js';

/**
 * A stream on a chain the server does not follow: accepted, as the hosted service accepts it, and its
 * statusMessage names the chain and the variable that adds it, with one warn line at create and update; a
 * restart that follows the chain clears the message. Each chain's node is a closed loopback port: what counts
 * is the configuration (an upstream that fails is /health's matter, not the stream's).
 */

const CLOSED = 'http://127.0.0.1:9';
const WARN = 'stream on a chain this server does not follow';

const EVM =
  /^Stream cannot fire on chain 0x1 \(eth\): this server does not follow it\. Add it to CHAINPOST_CHAINS and restart the server\.$/;
const BITCOIN =
  /^Stream cannot fire on chain bitcoin: this server does not follow it\. Set CHAINPOST_BITCOIN_RPC \(a Bitcoin Core node's URL\) and restart the server\.$/;
const SOLANA =
  /^Stream cannot fire on chain solana: this server does not follow it\. Set CHAINPOST_SOLANA_RPC \(a Solana node's URL\) and restart the server\.$/;

/** The warn lines the server logged so far, parsed. */
const warnings = (s: Running): Array<Record<string, any>> =>
  s
    .stdout()
    .split('\n')
    .filter((l) => l.includes(`"msg":"${WARN}"`))
    .map((l) => JSON.parse(l));

describe('a stream on a chain this server does not follow', () => {
  it('is accepted, says so in its statusMessage (create, get, list, update) and in one warn line per create and update, until a restart follows the chain', async () => {
    const rx = await startReceiver();
    const dir = tempDir();
    onTestFinished(async () => {
      await rx.close();
      rmSync(dir, { recursive: true, force: true });
    });
    // Follows the devnet alone: no Bitcoin or Solana node.
    const s = await startChainpost({ CHAINPOST_CHAINS: `0x539=${CLOSED}`, CHAINPOST_RATE_LIMIT: '0' }, dir);
    const ids = { evm: '', bitcoin: '', solana: '' };
    try {
      const evm = await s.call('/streams/evm', {
        method: 'PUT',
        json: { webhookUrl: rx.url, chainIds: ['0x1', '0x539'], includeNativeTxs: true },
      });
      expect(evm.status, JSON.stringify(evm.body)).toBe(200);
      expect(evm.body).toMatchObject({ status: 'active', statusMessage: expect.stringMatching(EVM) });
      const bitcoin = await s.call('/streams/bitcoin', { method: 'PUT', json: { webhookUrl: rx.url } });
      expect(bitcoin.status, JSON.stringify(bitcoin.body)).toBe(200);
      expect(bitcoin.body).toMatchObject({ status: 'active', statusMessage: expect.stringMatching(BITCOIN) });
      const solana = await s.call('/streams/solana', { method: 'PUT', json: { webhookUrl: rx.url, allAddresses: true } });
      expect(solana.status, JSON.stringify(solana.body)).toBe(200);
      expect(solana.body).toMatchObject({ status: 'active', statusMessage: expect.stringMatching(SOLANA) });
      Object.assign(ids, { evm: evm.body.id, bitcoin: bitcoin.body.id, solana: solana.body.id });

      // One warn line per create, saying the same (read from the child's stdout, which may lag the answer).
      await until(() => warnings(s).length >= 3, 5_000);
      expect(warnings(s).map((w) => [w['level'], w['streamId'], w['chains'], w['statusMessage']])).toEqual([
        ['warn', ids.evm, ['0x1'], evm.body.statusMessage],
        ['warn', ids.bitcoin, ['bitcoin'], bitcoin.body.statusMessage],
        ['warn', ids.solana, ['solana'], solana.body.statusMessage],
      ]);

      // Get and list answer it too.
      expect((await s.call(`/streams/evm/${ids.evm}`)).body.statusMessage).toMatch(EVM);
      expect((await s.call(`/streams/bitcoin/${ids.bitcoin}`)).body.statusMessage).toMatch(BITCOIN);
      expect((await s.call('/streams/solana')).body.result[0].statusMessage).toMatch(SOLANA);

      // It follows its definition: after the "matches nothing" message, gone with the unfollowed chain.
      const nothing = await s.call(`/streams/evm/${ids.evm}`, { method: 'POST', json: { includeNativeTxs: false } });
      expect(nothing.body.statusMessage).toMatch(
        /^Stream matches nothing: no include option is set\. .* Stream cannot fire on chain 0x1 \(eth\): /,
      );
      const devnetOnly = await s.call(`/streams/evm/${ids.evm}`, { method: 'POST', json: { includeNativeTxs: true, chainIds: ['0x539'] } });
      expect(devnetOnly.body.statusMessage).toBe('');
      const back = await s.call(`/streams/evm/${ids.evm}`, { method: 'POST', json: { chainIds: ['0x539', '0x1'] } });
      expect(back.body.statusMessage).toMatch(EVM);
      // The create and two updates on 0x1; the update without it logged nothing (lines come in order: it would be before the last).
      await until(() => warnings(s).length >= 5, 5_000);
      expect(warnings(s).filter((w) => w['streamId'] === ids.evm)).toHaveLength(3);
    } finally {
      expect(await s.stop()).toBe(0);
    }

    // Restarted following every chain: the message comes from the running configuration, not the record.
    const followed = await startChainpost(
      {
        CHAINPOST_CHAINS: `0x539=${CLOSED},0x1=${CLOSED}`,
        CHAINPOST_BITCOIN_RPC: CLOSED,
        CHAINPOST_SOLANA_RPC: CLOSED,
        CHAINPOST_RATE_LIMIT: '0',
      },
      dir,
    );
    try {
      for (const family of ['evm', 'bitcoin', 'solana'] as const) {
        const r = await followed.call(`/streams/${family}/${ids[family]}`);
        expect(r.body, family).toMatchObject({ status: 'active', statusMessage: '' });
      }
      const made = await followed.call('/streams/evm', {
        method: 'PUT',
        json: { webhookUrl: rx.url, chainIds: ['0x1'], includeNativeTxs: true },
      });
      expect(made.body).toMatchObject({ status: 'active', statusMessage: '' });
    } finally {
      expect(await followed.stop()).toBe(0);
    }
    expect(warnings(followed)).toEqual([]);
  }, 60_000);
});
