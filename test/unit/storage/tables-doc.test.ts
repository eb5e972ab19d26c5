import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { DATA_API_TABLES, dataChainRanges } from '../../../engine/data-api/tables.js';
import { HEX_KEYED_TABLES, IN_PLACE_TABLES, SCHEMA_VERSION, TABLES } from '../../../storage/env.js';
import { withDataApiTables } from '../../../storage/tables-doc.js';

// The layout of schema version 7 as written before the Data API's indexes declared their own tables: a declaration
// dropped or renamed would leave a table of existing stores unopened, or read its keys in the wrong encoding.
const SCHEMA_7 = [
  'meta',
  'keys',
  'tenants',
  'challenges',
  'binds',
  'expiries',
  'expiryCounts',
  'profiles',
  'accounts',
  'blocks',
  'probes',
  'transfers',
  'sales',
  'canon',
  'chainState',
  'blockEvents',
  'tokens',
  'streams',
  'streamAddresses',
  'streamXpubs',
  'xpubUsed',
  'xpubKeys',
  'queue',
  'retries',
  'queueMeta',
  'history',
  'deliveryLogs',
  'rates',
  'settings',
  'stats',
  'outbox',
  'blockHashes',
  'counts',
  'btcOutputs',
  'btcMempool',
  'btcAddressTxs',
  'btcUtxos',
  'btcTxs',
  'indexState',
  'indexUndo',
  'blockTimes',
  'contractLogs',
  'nativeTxs',
  'addressTxs',
  'activity',
  'erc20Balances',
  'erc20Pairs',
  'erc20Holders',
  'erc20Tokens',
  'erc20HolderDays',
  'erc20HolderDeltas',
  'erc20Approvals',
  'erc20Wallet',
  'erc20Search',
  'nftOwners',
  'nftTokens',
  'nftCollections',
  'nftStats',
  'nftRefs',
  'nftTrades',
  'nftMetadata',
  'dexPools',
  'dexStates',
  'dexSwaps',
  'dexWalletSwaps',
  'dexTokenSwaps',
  'priceMarks',
  'dexCandles',
];
const HEX_KEYED_7 = [
  'blockTimes',
  'contractLogs',
  'nativeTxs',
  'addressTxs',
  'activity',
  'indexUndo',
  'erc20Balances',
  'erc20Pairs',
  'erc20Holders',
  'erc20Tokens',
  'erc20HolderDays',
  'erc20HolderDeltas',
  'erc20Approvals',
  'erc20Wallet',
  'nftOwners',
  'nftTokens',
  'nftCollections',
  'nftStats',
  'nftRefs',
  'nftTrades',
  'dexPools',
  'dexStates',
  'dexSwaps',
  'dexWalletSwaps',
  'dexTokenSwaps',
  'priceMarks',
  'dexCandles',
];

it("the store opens the tables of schema version 7 and the ones versions 8, 9 and 12 add, each once: the engine's and those the Data API's indexes declare", () => {
  expect(SCHEMA_VERSION).toBe(13);
  expect(new Set(TABLES).size).toBe(TABLES.length);
  // watchedSets holds derived data only (compiled watched sets, rebuilt when absent): no version of its own; watchChanges,
  // the log a kept set relies on, came with version 12.
  expect([...TABLES].sort()).toEqual([...SCHEMA_7, 'matchMarks', 'alerts', 'watchedSets', 'watchChanges'].sort());
});

it('the declarations give the hex-key encoding and in-place decoding to the tables that had them in schema version 7', () => {
  expect([...HEX_KEYED_TABLES].sort()).toEqual([...HEX_KEYED_7].sort());
  expect([...IN_PLACE_TABLES].sort()).toEqual(HEX_KEYED_7.filter((t) => t !== 'indexUndo').sort());
});

it("a chain cleared takes every declared table's rows of that chain, the indexer's position last", () => {
  const ranges = dataChainRanges('0x539');
  expect(new Set(ranges.map((r) => r.table))).toEqual(new Set(DATA_API_TABLES.map(([t]) => t)));
  expect(ranges.at(-1)).toEqual({ table: 'indexState', start: '0x539', end: '0x539\u0000' });
});

it("storage/README.md's Data API tables are those the declarations write (npm run docs:tables rewrites them)", () => {
  const readme = readFileSync(new URL('../../../storage/README.md', import.meta.url), 'utf8');
  expect(withDataApiTables(readme) === readme, 'storage/README.md differs from the table declarations: run npm run docs:tables').toBe(true);
});
