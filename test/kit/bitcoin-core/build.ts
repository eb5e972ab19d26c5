/**
 * Blocks built from transactions made with bitcoinjs-lib, so tests control every address: deterministic
 * keys, outputs of every mainnet address type, signed spends of earlier built outputs, a BIP-34 coinbase
 * with a BIP-141 witness commitment, and blocks on the tip or on an older parent (for reorgs).
 * Signatures are real (they verify against the spent outputs); proof of work is not.
 */
import * as ecc from '@bitcoinerlab/secp256k1';
import { Block, Transaction, address, crypto, initEccLib, payments, script } from 'bitcoinjs-lib';
import { type BitcoinChain } from './chain.js';

initEccLib(ecc);

export type AddressKind = 'p2pkh' | 'p2sh-p2wpkh' | 'p2wpkh' | 'p2wsh' | 'p2tr';
export const ADDRESS_KINDS: AddressKind[] = ['p2pkh', 'p2sh-p2wpkh', 'p2wpkh', 'p2wsh', 'p2tr'];

/** A deterministic key and one address made from it. */
export interface Owner {
  kind: AddressKind;
  privateKey: Uint8Array;
  publicKey: Uint8Array;
  address: string;
  output: Uint8Array;
}

/** An output a test can spend. */
export interface Coin {
  txid: string;
  vout: number;
  value: bigint;
  owner: Owner;
}

/** A private key from a seed and index: sha256 of both, retried until it is a valid scalar. */
function privateKeyOf(seed: string, index: number): Uint8Array {
  for (let n = 0; ; n++) {
    const d = crypto.sha256(Buffer.from(`${seed}/${index}/${n}`));
    if (ecc.isPrivate(d)) return d;
  }
}

/** The P2WSH witness script of a key: `<pubkey> OP_CHECKSIG`. */
const witnessScriptOf = (publicKey: Uint8Array): Uint8Array => script.compile([publicKey, script.OPS.OP_CHECKSIG]);

function paymentOf(kind: AddressKind, publicKey: Uint8Array): payments.Payment {
  if (kind === 'p2pkh') return payments.p2pkh({ pubkey: publicKey });
  if (kind === 'p2sh-p2wpkh') return payments.p2sh({ redeem: payments.p2wpkh({ pubkey: publicKey }) });
  if (kind === 'p2wpkh') return payments.p2wpkh({ pubkey: publicKey });
  if (kind === 'p2wsh') return payments.p2wsh({ redeem: { output: witnessScriptOf(publicKey) } });
  return payments.p2tr({ internalPubkey: publicKey.subarray(1) });
}

/** The owner of address `kind` number `index` made from `seed` (same inputs, same address). */
export function owner(kind: AddressKind, seed = 'chainpost', index = 0): Owner {
  const privateKey = privateKeyOf(seed, index);
  const publicKey = ecc.pointFromScalar(privateKey, true)!;
  const p = paymentOf(kind, publicKey);
  return { kind, privateKey, publicKey, address: p.address!, output: p.output! };
}

/** An output paying `sats` to a mainnet address of any type. */
export function payTo(addr: string, sats: bigint | number): { script: Uint8Array; value: bigint } {
  return { script: address.toOutputScript(addr), value: BigInt(sats) };
}

/** The Taproot key-path signing key: the internal key, negated for an odd y, plus the BIP-341 tweak. */
function tweakedKey(o: Owner): Uint8Array {
  const d = o.publicKey[0] === 3 ? ecc.privateNegate(o.privateKey) : o.privateKey;
  return ecc.privateAdd(d, crypto.taggedHash('TapTweak', o.publicKey.subarray(1)))!;
}

/** Signs input `i` (SIGHASH_ALL, or Taproot's default) as its owner's address type wants. */
function signInput(tx: Transaction, i: number, coins: Coin[]): void {
  const { owner: o, value } = coins[i]!;
  const der = (hash: Uint8Array): Uint8Array => script.signature.encode(ecc.sign(hash, o.privateKey), Transaction.SIGHASH_ALL);
  const keyhash = payments.p2pkh({ pubkey: o.publicKey }).output!;
  if (o.kind === 'p2pkh') {
    tx.setInputScript(i, script.compile([der(tx.hashForSignature(i, o.output, Transaction.SIGHASH_ALL)), o.publicKey]));
  } else if (o.kind === 'p2wpkh' || o.kind === 'p2sh-p2wpkh') {
    tx.setWitness(i, [der(tx.hashForWitnessV0(i, keyhash, value, Transaction.SIGHASH_ALL)), o.publicKey]);
    if (o.kind === 'p2sh-p2wpkh') tx.setInputScript(i, script.compile([payments.p2wpkh({ pubkey: o.publicKey }).output!]));
  } else if (o.kind === 'p2wsh') {
    const ws = witnessScriptOf(o.publicKey);
    tx.setWitness(i, [der(tx.hashForWitnessV0(i, ws, value, Transaction.SIGHASH_ALL)), ws]);
  } else {
    const hash = tx.hashForWitnessV1(
      i,
      coins.map((c) => c.owner.output),
      coins.map((c) => c.value),
      Transaction.SIGHASH_DEFAULT,
    );
    tx.setWitness(i, [ecc.signSchnorr(hash, tweakedKey(o))]);
  }
}

/** A signed transaction spending `coins` to `outputs` (what is left over is the fee). */
export function spend(coins: Coin[], outputs: Array<{ script: Uint8Array; value: bigint }>): Transaction {
  const tx = new Transaction();
  tx.version = 2;
  for (const c of coins) tx.addInput(Buffer.from(c.txid, 'hex').reverse(), c.vout, 0xfffffffd);
  for (const o of outputs) tx.addOutput(o.script, o.value);
  coins.forEach((_, i) => signInput(tx, i, coins));
  return tx;
}

/** The outputs of `tx` that pay `owners`, as coins to spend later. */
export function coinsOf(tx: Transaction, owners: Owner[]): Coin[] {
  return tx.outs.flatMap((out, vout) => {
    const o = owners.find((w) => Buffer.from(w.output).equals(Buffer.from(out.script)));
    return o ? [{ txid: tx.getId(), vout, value: out.value, owner: o }] : [];
  });
}

/** The block subsidy at a height (50 BTC, halving every 210,000 blocks). */
const subsidy = (height: number): bigint => (height >= 210_000 * 64 ? 0n : 5_000_000_000n >> BigInt(Math.floor(height / 210_000)));

/**
 * A coinbase paying `to` the subsidy plus `fees`, its scriptSig starting with the BIP-34 height push; with a
 * BIP-141 `commitment` (hash256 of the witness root and the reserved value, 32 zero bytes) in an OP_RETURN.
 */
export function coinbase(height: number, to: Uint8Array, fees: bigint, commitment?: Uint8Array): Transaction {
  const tx = new Transaction();
  tx.version = 2;
  tx.addInput(Buffer.alloc(32), 0xffffffff, 0xffffffff, script.compile([script.number.encode(height), Buffer.from('chainpost stand-in')]));
  tx.addOutput(to, subsidy(height) + fees);
  if (commitment) {
    tx.addOutput(script.compile([script.OPS.OP_RETURN, Buffer.concat([Buffer.from('aa21a9ed', 'hex'), commitment])]), 0n);
    tx.setWitness(0, [Buffer.alloc(32)]);
  }
  return tx;
}

/** Where a new block goes: its parent's hash, height and time, and the difficulty bits to copy. */
export interface Parent {
  hash: string;
  height: number;
  time: number;
  bits: number;
}

/** A block on `parent` holding a coinbase (paying `miner`, or an anyone-can-spend OP_TRUE) then `txs`. */
export function buildBlock(parent: Parent, txs: Transaction[], fees = 0n, miner?: Uint8Array): Block {
  const block = new Block();
  block.version = 0x20000000;
  block.prevHash = Buffer.from(parent.hash, 'hex').reverse();
  block.timestamp = parent.time + 600;
  block.bits = parent.bits;
  block.nonce = 0;
  const pay = miner ?? script.compile([script.OPS.OP_TRUE]);
  const height = parent.height + 1;
  // bitcoinjs computes the commitment from a coinbase that has one; it counts the coinbase's wtxid as zero,
  // so a placeholder commitment does not change it.
  const placeholder = coinbase(height, pay, fees, Buffer.alloc(32));
  const commitment = txs.some((t) => t.hasWitnesses()) ? Block.calculateMerkleRoot([placeholder, ...txs], true) : undefined;
  block.transactions = [coinbase(height, pay, fees, commitment), ...txs];
  block.merkleRoot = Block.calculateMerkleRoot(block.transactions);
  if (commitment) block.witnessCommit = commitment;
  return block;
}

/** The parent for a block at `height` (default: on the tip). */
export function parentAt(chain: BitcoinChain, height = chain.height): Parent {
  const b = chain.at(height);
  if (!b) throw new Error(`no block at height ${height}`);
  return { hash: b.hash, height: b.height, time: b.block.timestamp, bits: b.block.bits };
}

/** Fees of `txs` from the prevouts the chain knows and the outputs of earlier `txs` (a block may spend its own); unknown inputs count as zero. */
function feesOf(chain: BitcoinChain, txs: Transaction[]): bigint {
  const own = new Map<string, bigint>();
  return txs.reduce((sum, tx) => {
    const known = chain.prevouts(tx);
    const inputs = tx.ins.reduce(
      (s, input, i) => s + (known[i]?.value ?? own.get(`${Buffer.from(input.hash).reverse().toString('hex')}:${input.index}`) ?? 0n),
      0n,
    );
    tx.outs.forEach((o, n) => own.set(`${tx.getId()}:${n}`, o.value));
    return sum + inputs - tx.outs.reduce((s, o) => s + o.value, 0n);
  }, 0n);
}

/** Builds a block of `txs` on the chain's tip and appends it; answers the block. */
export function mineBlock(chain: BitcoinChain, txs: Transaction[] = [], miner?: Uint8Array): Block {
  const block = buildBlock(parentAt(chain), txs, feesOf(chain, txs), miner);
  chain.append(block.toBuffer());
  return block;
}

/**
 * A competing branch: `count` blocks on the block `depth` below the tip (the first holding `txs`; coinbases paying
 * `miner`, which tells two branches built on one parent apart), not
 * appended; `chain.reorg(depth, branch.map((b) => b.toBuffer()))` makes it the active chain.
 */
export function branch(chain: BitcoinChain, depth: number, count: number, txs: Transaction[] = [], miner?: Uint8Array): Block[] {
  const blocks: Block[] = [];
  let parent = parentAt(chain, chain.height - depth);
  for (let i = 0; i < count; i++) {
    const b = buildBlock(parent, i === 0 ? txs : [], 0n, miner);
    blocks.push(b);
    parent = { hash: b.getId(), height: parent.height + 1, time: b.timestamp, bits: b.bits };
  }
  return blocks;
}
