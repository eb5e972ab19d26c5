import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { n12 } from '../../../engine/data-api/common/block-times.js';
import { walletTradeRows, type Trade } from '../../../engine/data-api/nft/index/writer.js';
import { blockKey } from '../../../engine/ingest/chain-store.js';
import { addRows, openStore, upgradeSchema } from '../../../storage/env.js';
import { tempDir } from '../../helpers.js';

/** The upgrade of a version-9 store's NFT trades: each gets its buyer's and seller's rows (schema version 10). */

const CHAIN = '0x539';
const NFT = `0x${'0a'.repeat(20)}`;
const [ALICE, BOB, CAROL] = ['a1', 'b0', 'c4'].map((b) => `0x${b.repeat(20)}`) as [string, string, string];

const trade = (block: number, buyer: string, seller: string, id: string): Trade => ({
  transactionHash: `0x${block.toString(16).padStart(64, '0')}`,
  timestamp: 1_700_000_000 + block,
  buyer,
  seller,
  price: '0x10',
  paymentToken: null,
  blockNumber: block,
  blockHash: `0x${'ee'.repeat(32)}`,
  transactionIndex: 0,
  marketplace: `0x${'99'.repeat(20)}`,
  tokenIds: [id],
});
const at = (block: number, log: number) => `${n12(block)}/${log.toString(16).padStart(6, '0')}`;

describe('NFT trades at the upgrade to wallet lists', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it("get their buyer's and seller's rows, named in their block's undo row while it has one; walked again, nothing is added twice", async () => {
    dir = tempDir();
    const old = openStore(dir);
    // Two trades in block 7 (its undo row kept), one in block 3 (its undo row gone: deeper than a reorg reaches).
    const trades: Array<[string, Trade]> = [
      [at(3, 1), trade(3, ALICE, BOB, '1')],
      [at(7, 2), trade(7, BOB, CAROL, '2')],
      [at(7, 5), trade(7, CAROL, ALICE, '3')],
    ];
    old.transact(() => {
      for (const [a, t] of trades) {
        old.put('nftTrades', `contract/${CHAIN}/${NFT}/${a}`, t);
        old.put('nftTrades', `token/${CHAIN}/${NFT}/${BigInt(t.tokenIds[0]!).toString(16).padStart(64, '0')}/${a}`, t);
      }
      old.put('indexUndo', blockKey(CHAIN, 7), { hash: '0x07', parent: '0x06', undo: [['nftOwners', 'k', new Uint8Array([1, 2])]] });
      old.put('meta', 'schemaVersion', 9);
    });
    await old.close();
    const s = openStore(dir, { migrate: true });
    expect(upgradeSchema(s)).toEqual({ from: 9, rewrittenKeys: 3 });
    const wallet = (w: string) =>
      s.range('nftTrades', { start: `wallet/${CHAIN}/${w}/`, end: `wallet/${CHAIN}/${w}/\uffff` }).map(({ key, value }) => [key, value]);
    const row = (w: string, i: number) => [`wallet/${CHAIN}/${w}/${trades[i]![0]}`, { ...trades[i]![1], contract: NFT }];
    expect(wallet(ALICE)).toEqual([row(ALICE, 0), row(ALICE, 2)]);
    expect(wallet(BOB)).toEqual([row(BOB, 0), row(BOB, 1)]);
    expect(wallet(CAROL)).toEqual([row(CAROL, 1), row(CAROL, 2)]);
    // Block 7's undo row takes its four rows back with the block; block 3 has none.
    const undo = s.get<{ hash: string; parent: string; undo: Array<[string, string, Uint8Array | null]> }>(
      'indexUndo',
      blockKey(CHAIN, 7),
    )!;
    expect(undo.hash).toBe('0x07');
    expect(undo.undo.map(([t, k, before]) => [t, k, before === null ? null : [...before]])).toEqual([
      ['nftOwners', 'k', [1, 2]],
      ['nftTrades', row(BOB, 1)[0], null],
      ['nftTrades', row(CAROL, 1)[0], null],
      ['nftTrades', row(CAROL, 2)[0], null],
      ['nftTrades', row(ALICE, 2)[0], null],
    ]);
    expect(s.has('indexUndo', blockKey(CHAIN, 3))).toBe(false);
    // Walked again (a migration cut short), one trade per transaction: the hex keys' batches neither skip nor repeat.
    expect(addRows(s, 'nftTrades', 'contract/', (key, value) => walletTradeRows(s, key, value), 1)).toBe(0);
    expect(s.keys('nftTrades', { start: 'wallet/', end: 'wallet/\uffff' })).toHaveLength(6);
    await s.close();
  });

  it('are each walked once in batches of one, two trades of a block included', async () => {
    dir = tempDir();
    const s = openStore(dir);
    s.transact(() => {
      s.put('nftTrades', `contract/${CHAIN}/${NFT}/${at(7, 2)}`, trade(7, BOB, CAROL, '2'));
      s.put('nftTrades', `contract/${CHAIN}/${NFT}/${at(7, 5)}`, trade(7, CAROL, ALICE, '3'));
      s.put('nftTrades', `contract/${CHAIN}/${NFT}/${at(8, 0)}`, trade(8, ALICE, BOB, '4'));
    });
    const seen: string[] = [];
    expect(addRows(s, 'nftTrades', 'contract/', (key) => void seen.push(key), 1)).toBe(0);
    expect(seen).toEqual([at(7, 2), at(7, 5), at(8, 0)].map((a) => `contract/${CHAIN}/${NFT}/${a}`));
    await s.close();
  });
});
