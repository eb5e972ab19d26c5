import { rmSync } from 'node:fs';
import { afterAll, expect, it } from 'vitest';
import type { Table } from '../../../../engine/ports.js';
import { clearChain } from '../../../../engine/ingest/chain-store.js';
import { dataChainRanges } from '../../../../engine/data-api/tables.js';
import { TABLES, openStore } from '../../../../storage/env.js';
import { tempDir } from '../../../helpers.js';

const store = openStore(tempDir());
afterAll(async () => {
  await store.close();
  rmSync(store.path, { recursive: true, force: true });
});

/** Every key of every table, as `table key`. */
const everything = (): string[] =>
  TABLES.flatMap((t: Table) => store.range(t).map((e) => `${t} ${e.key}`)).filter((k) => !k.startsWith('meta '));

it('clearChain removes every row ingested from one chain (in batches) and nothing of another chain or of the tenants', async () => {
  const rows = (chain: string): Array<[Table, string]> => [
    ['chainState', chain],
    ...(['blocks', 'probes', 'canon'] as const).flatMap((t) =>
      [0, 1, 2].map((n): [Table, string] => [t, `${chain}/${n.toString(16).padStart(12, '0')}`]),
    ),
    ['blockHashes', `${chain}/0xabc`],
    ['blockEvents', `${chain}/000000000002/0`],
    ['matchMarks', `${chain}/000000000002/0/#07`],
    ['tokens', `${chain}/0xcontract`],
    ['sales', `${chain}/0xcontract/${'0'.repeat(64)}/1/0/0`],
    ['transfers', `nft/${chain}/0xcontract/${'0'.repeat(64)}/1/0/0`],
    ['transfers', `erc20/${chain}/0xcontract/1/0`],
    ['transfers', `wallet/${chain}/0xwallet/1/0`],
    ['blockTimes', `${chain}/000000000001`],
    ['contractLogs', `${chain}/a/0xcontract/000000000001/000000`],
    ['contractLogs', `${chain}/t/0xcontract/0xtopic/000000000001/000000`],
    ['nftOwners', `token/${chain}/0xcontract/${'0'.repeat(64)}/0xwallet`],
    ['nftOwners', `owner/${chain}/0xwallet/0xcontract/${'0'.repeat(64)}`],
    ['nftTokens', `${chain}/0xcontract/${'0'.repeat(64)}`],
    ['nftCollections', `${chain}/0xwallet/0xcontract`],
    ['nftStats', `${chain}/0xcontract`],
    ['nftStats', `${chain}/start`],
    ...['block', 'contract', 'wallet', 'walletContract'].map((k): [Table, string] => ['nftRefs', `${k}/${chain}/1/0/0`]),
    ['nftTrades', `contract/${chain}/0xcontract/1/0`],
    ['nftTrades', `token/${chain}/0xcontract/${'0'.repeat(64)}/1/0`],
    ['nftMetadata', `${chain}/0xcontract/${'0'.repeat(64)}`],
    ['nativeTxs', `h/${chain}/0xhash`],
    ['nativeTxs', `s/${chain}/000000000001/000000`],
    ['addressTxs', `tx/${chain}/0xwallet/000000000001/000000`],
    ['addressTxs', `hist/${chain}/0xwallet/000000000001/000000`],
    ['activity', `${chain}/0xwallet`],
    ...(
      [
        'erc20Balances',
        'erc20Pairs',
        'erc20Holders',
        'erc20Tokens',
        'erc20HolderDays',
        'erc20HolderDeltas',
        'erc20Approvals',
        'erc20Wallet',
        'erc20Search',
        'indexUndo',
      ] as const
    ).map((t): [Table, string] => [t, `${chain}/0xsomething`]),
    ['indexState', chain],
    ['dexPools', `${chain}/p/0xpool`],
    ['dexPools', `${chain}/t/0xtoken/0xother/0xpool`],
    ['dexStates', `${chain}/0xpool/000000000001/000000`],
    ['dexSwaps', `${chain}/0xpool/000000000001/000000`],
    ['dexWalletSwaps', `${chain}/0xtrader/000000000001/000000`],
    ['dexTokenSwaps', `${chain}/0xtoken/000000000001/000000`],
    ['priceMarks', `${chain}/0xtoken/000000000001`],
    ['dexCandles', `${chain}/0xpool/1min/0000000060`],
    ['btcOutputs', `${chain}/txid`],
    ['btcAddressTxs', `${chain}/address/00000001/000000`],
    ['btcUtxos', `${chain}/address/txid:0`],
    ['btcTxs', `${chain}/txid`],
  ];
  // 0x5390 shares 0x539's first characters: the `/` after a chain id keeps it apart.
  const kept = [...rows('0x1'), ...rows('0x5390'), ['streams', 't_1/0x539'], ['settings', 't_1']] as Array<[Table, string]>;
  store.transact(() => {
    for (const [t, k] of [...rows('0x539'), ...kept]) store.put(t, k, 1);
  });
  const removed = await clearChain(store, '0x539', dataChainRanges('0x539'), 2);
  expect(removed).toEqual({
    chainState: 1,
    blocks: 3,
    probes: 3,
    canon: 3,
    blockHashes: 1,
    blockEvents: 1,
    matchMarks: 1,
    tokens: 1,
    sales: 1,
    transfers: 3,
    blockTimes: 1,
    contractLogs: 2,
    activity: 1,
    indexUndo: 1,
    erc20Balances: 1,
    erc20Pairs: 1,
    erc20Holders: 1,
    erc20Tokens: 1,
    erc20HolderDays: 1,
    erc20HolderDeltas: 1,
    erc20Approvals: 1,
    erc20Wallet: 1,
    erc20Search: 1,
    nativeTxs: 2,
    addressTxs: 2,
    nftOwners: 2,
    nftTokens: 1,
    nftCollections: 1,
    nftStats: 2,
    nftRefs: 4,
    nftTrades: 2,
    nftMetadata: 1,
    indexState: 1,
    dexPools: 2,
    dexStates: 1,
    dexSwaps: 1,
    dexWalletSwaps: 1,
    dexTokenSwaps: 1,
    priceMarks: 1,
    dexCandles: 1,
    btcOutputs: 1,
    btcAddressTxs: 1,
    btcUtxos: 1,
    btcTxs: 1,
  });
  expect(everything().sort()).toEqual(kept.map(([t, k]) => `${t} ${k}`).sort());
  expect(Object.values(await clearChain(store, '0x539', dataChainRanges('0x539'))).every((n) => n === 0)).toBe(true);
});
