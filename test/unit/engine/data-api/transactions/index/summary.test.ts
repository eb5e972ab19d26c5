import { rmSync } from 'node:fs';
import { encodeAbiParameters, parseAbiParameters } from 'viem';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FIXTURE_BLOCKS, bundle } from '../../../../../kit/fixtures.js';
import { IndexWriter, indexedBlock } from '../../../../../../engine/data-api/common/indexer.js';
import { contractLogsIndex, blockTimesIndex } from '../../../../../../engine/data-api/chain/index/writer.js';
import { nativeTxIndex, summaryKey } from '../../../../../../engine/data-api/transactions/index/writer.js';
import { summaryAt, summaryOf, transferOfSummary } from '../../../../../../engine/data-api/transactions/source.js';
import {
  APPROVAL,
  APPROVAL_FOR_ALL,
  summarize,
  summaryRow,
  type TxSummary,
} from '../../../../../../engine/data-api/transactions/index/summary.js';
import { normalizeBlock, type BlockRecord, type StoredTx } from '../../../../../../engine/evm/record.js';
import {
  TRANSFER,
  TRANSFER_BATCH,
  TRANSFER_SINGLE,
  transferKeyRef,
  transferKeys,
  transferRefKey,
  transfersOf,
  writeBlock,
  type StoredTransfer,
} from '../../../../../../engine/evm/store.js';
import { pack } from '../../../../../../storage/codec.js';
import { openStore, type Store } from '../../../../../../storage/env.js';
import { tempDir } from '../../../../../helpers.js';

/**
 * The `nativeTxs` summary row (s/chain/number/index) on a real LMDB store: blocks written as the follower
 * writes them (writeBlock: their `transfers` rows and `canon`) and indexed by the native transactions index
 * read back through summaryAt/summaryOf equal to what summarize() made, their transfer references resolving
 * to the rows written under the `transfers` keys; a row in the named form older code wrote (its transfers as
 * `transfers` keys) reads back the same; the tuple is less than half the named form's bytes.
 */

const CHAIN = '0x1';
const word = (v: bigint): string => v.toString(16).padStart(64, '0');
const topic = (address: string): string => `0x${'0'.repeat(24)}${address.slice(2)}`;
const A = '0x1111111111111111111111111111111111111111';
const B = '0x2222222222222222222222222222222222222222';
const TOKEN = '0x3333333333333333333333333333333333333333';
// A checksummed contract, as a node may write a log's address.
const NFT = '0xAbCdEf0123456789aBcDeF0123456789AbCdEf01';
const BLOCK_HASH = `0x${'AB'.repeat(32)}`;

/**
 * A block whose transactions take every branch of the row: an ERC-20 transfer with an Approval and an
 * ApprovalForAll; a creation with a pre-Byzantium receipt (root, no status); NFT transfers (ERC-721 with a
 * large id, a TransferBatch of two ids, a TransferSingle) and a transfer of another token, with internal calls; quantities that are not
 * numbers in the row (above 2^52, a leading zero, upper case).
 */
function syntheticRecord(): BlockRecord {
  const log = (address: string, topics: string[], data: string, logIndex: number) => ({
    address,
    topics,
    data,
    logIndex: `0x${logIndex.toString(16)}`,
  });
  const batch = encodeAbiParameters(parseAbiParameters('uint256[], uint256[]'), [
    [1n, 7n],
    [5n, 2n ** 70n],
  ]);
  const txs: StoredTx[] = [
    {
      tx: {
        hash: `0x${'a1'.repeat(32)}`,
        from: A.toUpperCase().replace('0X', '0x'),
        to: TOKEN,
        value: '0x0',
        nonce: '0x05',
        gas: '0x5208',
        gasPrice: '0x1234567890abcdef12',
        input: '0xa9059cbb',
      },
      receipt: { status: '0x1', gasUsed: '0x5208', cumulativeGasUsed: '0x5208', contractAddress: null },
      logs: [
        log(TOKEN, [TRANSFER, topic(A), topic(B)], `0x${word(10n ** 18n)}`, 0),
        log(TOKEN, [APPROVAL, topic(A), topic(B)], `0x${word(2n ** 256n - 1n)}`, 1),
        log(NFT, [APPROVAL_FOR_ALL, topic(A), topic(B)], `0x${word(1n)}`, 2),
      ],
    },
    {
      tx: {
        hash: `0x${'a2'.repeat(32)}`,
        from: B,
        to: null,
        value: '0xDE0B6B3A7640000',
        nonce: '0x0',
        gas: '0x30d40',
        gasPrice: '0x3b9aca00',
        input: '0x6080',
      },
      receipt: { root: `0x${'CD'.repeat(32)}`, gasUsed: '0x30d40', cumulativeGasUsed: '0x35f48', contractAddress: NFT },
      logs: [],
    },
    {
      tx: {
        hash: `0x${'a3'.repeat(32)}`,
        from: A,
        to: NFT,
        value: '0x2386f26fc10000',
        nonce: '0x6',
        gas: '0x7a120',
        gasPrice: '0x3b9aca00',
        input: '0x',
      },
      receipt: { status: '0x0', gasUsed: '0x1d4c0', cumulativeGasUsed: '0x53408', effectiveGasPrice: '0x77359400', contractAddress: null },
      logs: [
        log(NFT, [TRANSFER, topic(A), topic(B), `0x${word(2n ** 200n + 5n)}`], '0x', 3),
        log(NFT, [TRANSFER_BATCH, topic(A), topic(A), topic(B)], batch, 4),
        log(NFT, [TRANSFER_SINGLE, topic(A), topic(B), topic(A)], `0x${word(9n)}${word(1n)}`, 5),
        // A token the transaction did not call.
        log(TOKEN, [TRANSFER, topic(B), topic(A)], `0x${word(3n)}`, 6),
      ],
    },
    { tx: { hash: `0x${'a4'.repeat(32)}`, from: B, to: A, value: '0x1', nonce: '0x1' }, receipt: {}, logs: [] },
  ];
  const header = { number: '0x2a', hash: BLOCK_HASH, parentHash: `0x${'0'.repeat(64)}`, timestamp: '0x65000000' };
  const internal = [
    {
      txIndex: 2,
      traceAddress: [0],
      type: 'CALL',
      from: NFT.toLowerCase(),
      to: B,
      value: '0x2386f26fc10000',
      gas: '0x6000',
      gasUsed: '0x0',
    },
    { txIndex: 2, traceAddress: [1], type: 'CREATE2', from: null, to: null, value: '0x0', gas: '0x10000000000000', gasUsed: '0x01' },
  ];
  return { header, txs, internal };
}

const fixtureRecords = (): BlockRecord[] =>
  FIXTURE_BLOCKS.map((n) => {
    const b = bundle(n);
    return normalizeBlock(b.block, b.receipts, b.traces);
  });

/** A block as the follower and the native transactions index write it. */
function index(store: Store, r: BlockRecord): void {
  const number = Number(r.header['number']);
  store.transact(() => {
    writeBlock(store, CHAIN, r);
    const block = indexedBlock(CHAIN, number, String(r.header['hash']), r);
    // The block's time and hash and the log rows first, as the indexer applies them: an ERC-20 transfer is its log's row.
    blockTimesIndex.apply(new IndexWriter(store, []), block, undefined);
    contractLogsIndex.apply(new IndexWriter(store, []), block, undefined);
    nativeTxIndex.apply(new IndexWriter(store, []), block, undefined);
  });
}

/** The summaries as 8ba7ac3 stored them: named, with each transfer's `transfers` key (by contract), in log order. */
function namedRows(r: BlockRecord): Array<Omit<TxSummary, 'transfers'> & { transfers: string[] }> {
  const keys: string[][] = r.txs.map(() => []);
  for (const t of transfersOf(r)) keys[t.transactionIndex]!.push(transferKeys(CHAIN, t).byContract);
  return summarize(r).map((s, i) => ({ ...s, transfers: keys[i]! }));
}

let dir: string;
let store: Store;
beforeEach(() => {
  dir = tempDir();
  store = openStore(dir);
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the nativeTxs summary row', () => {
  it('reads back what summarize() made, for the mainnet fixture blocks and a block taking every branch', () => {
    const records = [...fixtureRecords(), syntheticRecord()];
    let transfers = 0;
    for (const r of records) {
      index(store, r);
      const number = Number(r.header['number']);
      const made = summarize(r);
      made.forEach((s, i) => {
        expect(summaryAt({ kv: store }, CHAIN, number, i), `${number}/${i}`).toEqual(s);
        expect(summaryOf({ kv: store }, CHAIN, s.hash)).toEqual(s);
        // Each reference resolves to that transfer: an NFT one to the row writeBlock wrote, an ERC-20 one to its log's row.
        s.transfers.forEach((ref, j) => {
          const t = transfersOf(r).filter((x) => x.transactionIndex === i)[j]!;
          const got = transferOfSummary(store, CHAIN, number, ref);
          const lower = (a: string | undefined): string | undefined => a?.toLowerCase();
          expect(got && { ...got, contract: lower(got.contract), from: lower(got.from), to: lower(got.to) }).toMatchObject({
            kind: t.kind,
            contract: lower(t.contract),
            from: lower(t.from),
            to: lower(t.to),
            value: t.value,
          });
          if (t.kind !== 'erc20') expect(got).toEqual(store.get<StoredTransfer>('transfers', transferKeys(CHAIN, t).byContract));
          expect(ref[1]).toBe(t.logIndex);
          transfers++;
        });
      });
    }
    expect(transfers).toBeGreaterThan(100);
    // The synthetic block's rows hold what was asked of them.
    const [erc20, creation, nft, plain] = summarize(syntheticRecord());
    expect(erc20!.approvals).toEqual([
      { token: TOKEN, owner: A, spender: B, value: `0x${(2n ** 256n - 1n).toString(16)}` },
      { token: NFT.toLowerCase(), owner: A, spender: B, approved: true },
    ]);
    expect(erc20!.nonce).toBe('0x05');
    expect(creation).toMatchObject({
      status: null,
      root: `0x${'cd'.repeat(32)}`,
      contractAddress: NFT.toLowerCase(),
      to: null,
      value: '0xDE0B6B3A7640000',
    });
    expect(nft!.transfers).toEqual([
      [NFT.toLowerCase(), 3, `0x${(2n ** 200n + 5n).toString(16)}`],
      [NFT.toLowerCase(), 4, '0x1'],
      [NFT.toLowerCase(), 4, '0x7', 1],
      [NFT.toLowerCase(), 5, '0x9'],
      [TOKEN, 6],
    ]);
    expect(nft!.internal.map((c) => c.from)).toEqual([NFT.toLowerCase(), null]);
    expect(plain).toMatchObject({ gas: '0x0', status: null, transfers: [], internal: [], approvals: [] });
    expect(summaryAt({ kv: store }, CHAIN, 42, 0)!.blockHash).toBe(BLOCK_HASH.toLowerCase());
  });

  it('leaves out the key, the block hash and an empty or null tail', () => {
    const [erc20, creation, nft, plain] = summarize(syntheticRecord()).map(summaryRow);
    expect(plain).toEqual([`0x${'a4'.repeat(32)}`, 0x65000000, 1, B, A, 1, 0, 0, '0x', 0, 0, null]);
    // Transfers, then the two approvals: no internal calls between them is an empty list; nothing after them.
    // A transfer of the token the transaction called names it as 0.
    expect(erc20!.slice(12)).toEqual([
      [[0, 0]],
      [],
      [
        [TOKEN, A, B, `0x${(2n ** 256n - 1n).toString(16)}`],
        [NFT.toLowerCase(), A, B, true],
      ],
    ]);
    expect(erc20!.slice(2, 11)).toEqual(['0x05', A, TOKEN, 0, 0x5208, '0x1234567890abcdef12', '0xa9059cbb', 0x5208, 0x5208]);
    expect(nft![12]).toEqual([
      [0, 3, `0x${(2n ** 200n + 5n).toString(16)}`],
      [0, 4, 1],
      [0, 4, 7, 1],
      [0, 5, 9],
      [TOKEN, 6],
    ]);
    expect(creation!.slice(11)).toEqual([null, [], [], [], NFT.toLowerCase(), `0x${'cd'.repeat(32)}`]);
  });

  it('reads a row in the named form older code wrote the same as the tuple', () => {
    for (const r of [...fixtureRecords(), syntheticRecord()]) {
      index(store, r);
      const number = Number(r.header['number']);
      const named = namedRows(r);
      store.transact(() => named.forEach((row, i) => store.put('nativeTxs', summaryKey(CHAIN, number, i), row)));
      summarize(r).forEach((s, i) => {
        const got = summaryAt({ kv: store }, CHAIN, number, i)!;
        expect(got, `${number}/${i}`).toEqual(s);
        // Its references name the keys it held.
        expect(got.transfers.map((ref) => transferRefKey(CHAIN, number, ref))).toEqual(named[i]!.transfers);
        for (const key of named[i]!.transfers) expect(transferKeyRef(key)).toEqual(got.transfers[named[i]!.transfers.indexOf(key)]);
      });
    }
  });

  it("takes less than half the named form's bytes beside the input (calldata, kept whole in both)", () => {
    let tuple = 0;
    let named = 0;
    let inputs = 0;
    for (const r of [...fixtureRecords(), syntheticRecord()]) {
      tuple += summarize(r).reduce((n, s) => n + pack(summaryRow(s)).length, 0);
      named += namedRows(r).reduce((n, s) => n + pack(s).length, 0);
      inputs += summarize(r).reduce((n, s) => n + pack(s.input).length, 0);
    }
    expect(tuple - inputs).toBeLessThan((named - inputs) / 2);
  });
});
