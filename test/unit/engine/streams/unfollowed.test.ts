import { describe, expect, it } from 'vitest';
import { followedChains, parseConfig } from '../../../../engine/config/config.js';
import { FollowedChains, unfollowed } from '../../../../engine/streams/unfollowed.js';

const follows =
  (...chains: string[]) =>
  (chain: string): boolean =>
    chains.includes(chain);
/** Before any chain removal of the interface's table. */
const EARLY = Date.parse('2026-01-01T00:00:00Z');
/** After all of them (0x46f removed from streams, 0x504 no longer producing blocks). */
const LATE = Date.parse('2026-11-23T00:00:00Z');

describe('unfollowed', () => {
  it('names each chain not followed and what adds it, one sentence per family; nothing when all are followed', () => {
    expect(unfollowed(['0x1', '0x539'], follows('0x539'), EARLY)).toEqual({
      chains: ['0x1'],
      message: 'Stream cannot fire on chain 0x1 (eth): this server does not follow it. Add it to CHAINPOST_CHAINS and restart the server.',
    });
    expect(unfollowed(['0x1', '0x89', '0x2105'], follows(), EARLY)?.message).toBe(
      'Stream cannot fire on chains 0x1 (eth), 0x89 (polygon) and 0x2105 (base): this server does not follow them. Add them to CHAINPOST_CHAINS and restart the server.',
    );
    expect(unfollowed(['bitcoin', 'solana'], follows(), EARLY)?.message).toBe(
      "Stream cannot fire on chain bitcoin: this server does not follow it. Set CHAINPOST_BITCOIN_RPC (a Bitcoin Core node's URL) and restart the server. " +
        "Stream cannot fire on chain solana: this server does not follow it. Set CHAINPOST_SOLANA_RPC (a Solana node's URL) and restart the server.",
    );
    expect(unfollowed(['0x1', 'bitcoin'], follows('0x1', 'bitcoin'), EARLY)).toBeUndefined();
    expect(unfollowed([], follows(), EARLY)).toBeUndefined();
  });

  it('leaves a chain removed from streams, or no longer producing blocks, to its own message', () => {
    expect(unfollowed(['0x46f', '0x504'], follows(), EARLY)?.chains).toEqual(['0x46f', '0x504']);
    expect(unfollowed(['0x46f', '0x504'], follows(), LATE)).toBeUndefined();
    expect(unfollowed(['0x46f', '0x1'], follows(), LATE)?.chains).toEqual(['0x1']);
  });
});

describe('FollowedChains.answer', () => {
  const followed = new FollowedChains(follows('0x539'));
  const response = (status: string, statusMessage: string) => ({ id: 's', chainIds: ['0x1'], status, statusMessage, updatedAt: 'then' });

  it("adds the message after the stream's own, keeping the fields in their order; error and terminated keep theirs alone", () => {
    const plain = followed.answer(response('active', ''), 'active', ['0x1'], EARLY);
    expect(Object.keys(plain)).toEqual(['id', 'chainIds', 'status', 'statusMessage', 'updatedAt']);
    expect(plain['statusMessage']).toMatch(/^Stream cannot fire on chain 0x1 \(eth\): /);
    expect(
      followed.answer(response('paused', 'Stream matches nothing: no include option is set. Set …'), 'paused', ['0x1'], EARLY)[
        'statusMessage'
      ],
    ).toMatch(/^Stream matches nothing: no include option is set\. Set … Stream cannot fire on chain 0x1 \(eth\): /);
    for (const status of ['error', 'terminated'])
      expect(followed.answer(response(status, 'Stream in error: …'), status, ['0x1'], EARLY)['statusMessage']).toBe('Stream in error: …');
    expect(followed.answer(response('active', ''), 'active', ['0x539'], EARLY)['statusMessage']).toBe('');
  });
});

describe('followedChains', () => {
  it('is the devnet when CHAINPOST_CHAINS is unset, the chains it lists, none for `none`, with bitcoin and solana when their node is set', () => {
    expect([...followedChains(parseConfig({}))]).toEqual(['0x539']);
    expect([...followedChains(parseConfig({ CHAINPOST_CHAINS: 'eth=http://127.0.0.1:1,base=http://127.0.0.1:2' }))]).toEqual([
      '0x1',
      '0x2105',
    ]);
    expect([
      ...followedChains(
        parseConfig({ CHAINPOST_CHAINS: 'none', CHAINPOST_BITCOIN_RPC: 'http://127.0.0.1:3', CHAINPOST_SOLANA_RPC: 'http://127.0.0.1:4' }),
      ),
    ]).toEqual(['bitcoin', 'solana']);
    expect([...followedChains(parseConfig({ CHAINPOST_CHAINS: 'none' }))]).toEqual([]);
  });
});
