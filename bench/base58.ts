/**
 * npm run bench:base58 — whether the one hand-written base58 path (a Solana key's text into its 32 bytes,
 * engine/solana/key-base58.ts) still earns its place beside bs58, measured where it is used, in one run on
 * one thread (tinybench); docs/decisions/base58.md has the figures that decided it:
 * - Solana: a mainnet-size bench slot's distinct keys (every base58 text of 32 to 44 characters in its
 *   getBlock answer) decoded into 32 bytes each, as KeyTable does while a block is prepared (hand-written,
 *   bs58), and encoded back with bs58, as a record's keys are for a webhook body; beside prepareSolanaBlock
 *   of the same slots.
 * - Bitcoin: P2PKH addresses (base58check of 21 bytes) as xpub derivation and an output's address encode
 *   them (xpub-hash.ts's checksum, bs58's digits) beside @scure/base's base58check; beside deriveAddresses
 *   of an xpub per address.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import bs58 from 'bs58';
import { base58check as scureBase58check } from '../engine/bitcoin/encoding.js';
import { base58check } from '../engine/bitcoin/address-encoding.js';
import { deriveAddresses, parseExtendedKey } from '../engine/bitcoin/xpub.js';
import { base58Decode32Into } from '../engine/solana/key-base58.js';
import { prepareSolanaBlock } from '../engine/solana/prepared.js';
import { XPUB } from '../test/kit/bitcoin-core/keys.js';
import { benchChain } from '../test/kit/solana-rpc/bench.js';
import { getBlockResponse } from '../test/kit/solana-rpc/render.js';
import { Bench } from 'tinybench';
import { printRows, report, round, sized } from './report.js';

const SLOTS = sized(4, 1);
const ADDRESSES = sized(1_000, 100);
/** Distinct keys of a mainnet slot (engine/solana/key.ts: ~30,000 keys, a third of them distinct); the bench slots repeat theirs more. */
const MAINNET_DISTINCT_KEYS = 10_000;

// --- Solana: the slots and their distinct keys --------------------------------------------------------

const { chain } = benchChain({ slots: SLOTS, start: 320_000_000 });
const answers = chain.slots().map((block) => ({ slot: block.slot, bytes: getBlockResponse(block) }));
const keyTexts = answers.map((a) => [...new Set(a.bytes.toString('latin1').match(/(?<=")[1-9A-HJ-NP-Za-km-z]{32,44}(?=")/g) ?? [])]);
const keyBytes = keyTexts.map((texts) =>
  texts.map((text) => {
    const out = new Uint8Array(32);
    if (!base58Decode32Into(text, out, 0)) throw new Error(`${text} is not a 32-byte key`);
    return out;
  }),
);
const keysPerSlot = keyTexts.reduce((n, texts) => n + texts.length, 0) / SLOTS;
const packed = new Uint8Array(32 * Math.max(...keyTexts.map((t) => t.length)));

// --- Bitcoin: P2PKH payloads --------------------------------------------------------------------------

const payloads = Array.from({ length: ADDRESSES }, (_, i) =>
  Uint8Array.of(0x00, ...sha256(Uint8Array.of(i >> 8, i & 255)).subarray(0, 20)),
);
for (const p of payloads) if (base58check(p) !== scureBase58check.encode(p)) throw new Error('the codecs disagree');
const xpub = parseExtendedKey(XPUB);

// --- the run ------------------------------------------------------------------------------------------

const bench = new Bench(sized({ time: 2_000, warmupTime: 300 }, { time: 0, iterations: 2, warmupTime: 0, warmupIterations: 1 }));
bench
  .add('solana prepare (slot)', () => {
    for (const a of answers) prepareSolanaBlock({ slot: a.slot, block: Uint8Array.prototype.slice.call(a.bytes) });
  })
  .add('solana decode keys: hand-written', () => {
    for (const texts of keyTexts) for (let i = 0; i < texts.length; i++) base58Decode32Into(texts[i]!, packed, i * 32);
  })
  .add('solana decode keys: bs58', () => {
    for (const texts of keyTexts) {
      for (let i = 0; i < texts.length; i++) {
        const b = bs58.decodeUnsafe(texts[i]!);
        if (b === undefined || b.length !== 32) throw new Error('not a key');
        packed.set(b, i * 32);
      }
    }
  })
  .add('solana encode keys: bs58', () => {
    for (const keys of keyBytes) for (const k of keys) bs58.encode(k);
  })
  .add('bitcoin derive (xpub, p2pkh)', () => {
    deriveAddresses(xpub, 0, 0, ADDRESSES);
  })
  .add('bitcoin p2pkh: checksum + bs58', () => {
    for (const p of payloads) base58check(p);
  })
  .add('bitcoin p2pkh: @scure/base base58check', () => {
    for (const p of payloads) scureBase58check.encode(p);
  });
await bench.run();

/** Mean µs of one run of a task. */
const us = (name: string): number => {
  const task = bench.getTask(name);
  const latency = task?.result !== undefined && 'latency' in task.result ? task.result.latency.mean : undefined;
  if (latency === undefined) throw new Error(`${name}: no result`);
  return latency * 1_000;
};
const keys = keysPerSlot * SLOTS;
const prepareUsPerSlot = us('solana prepare (slot)') / SLOTS;
const decodeHand = us('solana decode keys: hand-written') / keys;
const decodeBs58 = us('solana decode keys: bs58') / keys;
const encodeBs58 = us('solana encode keys: bs58') / keys;
const deriveUs = us('bitcoin derive (xpub, p2pkh)') / ADDRESSES;
const p2pkhBs58 = us('bitcoin p2pkh: checksum + bs58') / ADDRESSES;
const p2pkhScure = us('bitcoin p2pkh: @scure/base base58check') / ADDRESSES;

const figures = {
  solanaKeysPerSlot: round(keysPerSlot, 0),
  solanaPrepareMsPerSlot: round(prepareUsPerSlot / 1_000, 2),
  decodeKeyUsHandWritten: round(decodeHand, 3),
  decodeKeyUsBs58: round(decodeBs58, 3),
  encodeKeyUsBs58: round(encodeBs58, 3),
  /** What bs58's decode would add to a slot's prepare. */
  solanaPrepareShareBs58: round(((decodeBs58 - decodeHand) * keysPerSlot) / prepareUsPerSlot, 3),
  /** The same for a slot with a mainnet slot's distinct keys: the bench slot's prepare plus the decodes of the keys it lacks. */
  solanaMainnetShareBs58: round(
    ((decodeBs58 - decodeHand) * MAINNET_DISTINCT_KEYS) / (prepareUsPerSlot + (MAINNET_DISTINCT_KEYS - keysPerSlot) * decodeHand),
    3,
  ),
  deriveUsPerAddress: round(deriveUs, 2),
  p2pkhUsBs58: round(p2pkhBs58, 3),
  p2pkhUsScure: round(p2pkhScure, 3),
  /** The base58check of each derived xpub address (P2PKH), over the derivation's time per address. */
  base58checkShareOfDerive: round(p2pkhBs58 / deriveUs, 3),
};
printRows([
  ['decode a Solana key, bs58', decodeBs58, 'µs', decodeHand],
  ['encode a Solana key, bs58', encodeBs58, 'µs'],
  ['P2PKH address, @scure/base', p2pkhScure, 'µs', p2pkhBs58],
]);
console.log(figures);
const LIMIT = 0.1;
// Met: the hand-written decode still earns its place (bs58 would add more than a tenth to a mainnet slot's prepare).
report('base58', 'npm run bench:base58', figures, { solanaMainnetShareBs58: `> ${LIMIT}` }, figures.solanaMainnetShareBs58 > LIMIT, [
  `One thread, tinybench. Per key: the distinct base58 texts of 32 to 44 characters of ${SLOTS} mainnet-size bench slots (test/kit/solana-rpc/bench.ts), decoded into 32 bytes (the hand-written base58Decode32Into; bs58.decodeUnsafe and a copy) and encoded back (bs58). Per address: ${ADDRESSES.toLocaleString('en-US')} P2PKH payloads, base58check (address-encoding.ts: xpub-hash.ts's checksum, bs58's digits; @scure/base's base58check whole). solanaPrepareShareBs58: what bs58's decode would add to prepareSolanaBlock per slot, over its time (above ${LIMIT}, the hand-written decode stays); base58checkShareOfDerive: the base58check's part of deriveAddresses' time per address. solanaMainnetShareBs58 models a slot with mainnet's ${MAINNET_DISTINCT_KEYS.toLocaleString('en-US')} distinct keys (the bench slots repeat theirs: solanaKeysPerSlot).`,
]);
