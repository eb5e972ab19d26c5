/**
 * Transactions built and signed here, as a confirmed block's json encoding shows them (`{meta, transaction,
 * version}`), so tests control every key: SOL transfers, SPL Token transferChecked (direct or through a
 * program's CPI), v0 transactions loading accounts from a lookup table, vote transactions, and failed ones.
 * Signatures are real ed25519 over the wire-format message; balances move through a Ledger so pre and post agree.
 * Each builder also answers what the transaction touches, from its own inputs (not by reading the JSON back).
 */
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import bs58 from 'bs58';
import { serializeMessage, type UiAddressTableLookup, type UiInstruction, type UiMessage } from './wire.js';

export const SYSTEM_PROGRAM = '11111111111111111111111111111111';
export const TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA';
export const VOTE_PROGRAM = 'Vote111111111111111111111111111111111111111';
export const COMPUTE_BUDGET_PROGRAM = 'ComputeBudget111111111111111111111111111111';
export const SYSVAR_SLOT_HASHES = 'SysvarS1otHashes111111111111111111111111111';
export const SYSVAR_CLOCK = 'SysvarC1ock11111111111111111111111111111111';
export const USDC_MINT = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';

/** What a node's fee is per signature (lamports), with no priority fee. */
export const LAMPORTS_PER_SIGNATURE = 5000;

export interface UiTokenAmount {
  amount: string;
  decimals: number;
  uiAmount: number | null;
  uiAmountString: string;
}

export interface TokenBalance {
  accountIndex: number;
  mint: string;
  owner: string;
  programId: string;
  uiTokenAmount: UiTokenAmount;
}

export interface InnerInstructions {
  index: number;
  instructions: UiInstruction[];
}

/** `meta` of the json encoding, keys in the node's (alphabetical) order; the 2021 fixture lacks the optional ones. */
export interface TxMeta {
  computeUnitsConsumed?: number;
  err: unknown;
  fee: number;
  innerInstructions: InnerInstructions[] | null;
  loadedAddresses?: { readonly: string[]; writable: string[] };
  logMessages: string[] | null;
  postBalances: number[];
  postTokenBalances: TokenBalance[] | null;
  preBalances: number[];
  preTokenBalances: TokenBalance[] | null;
  rewards: unknown[] | null;
  status: { Ok: null } | { Err: unknown };
}

/** One transaction of a block: what getBlock json lists (`version` shown only when the client sent maxSupportedTransactionVersion). */
export interface TxEntry {
  meta: TxMeta;
  transaction: { message: UiMessage; signatures: string[] };
  version: 'legacy' | 0;
}

/** The keys a transaction touches, as a watcher would name them. */
export interface Touches {
  /** Static account keys then loaded ones (writable, then readonly). */
  accounts: string[];
  /** Programs invoked by instructions and inner instructions. */
  programs: string[];
  /** Mints of its token balances. */
  mints: string[];
  /** Owners of its token balances. */
  owners: string[];
}

export interface BuiltTx {
  entry: TxEntry;
  signature: string;
  touches: Touches;
}

export interface Keypair {
  address: string;
  secretKey: Uint8Array;
}

/** A lookup table the stand-in holds: its address and the addresses it lists. */
export interface LookupTable {
  address: string;
  addresses: string[];
}

export interface Mint {
  address: string;
  decimals: number;
}

const text = (s: string): Uint8Array => new TextEncoder().encode(s);

/** The keypair number `index` made from `seed` (same inputs, same key). */
export function keypair(seed = 'chainpost', index = 0): Keypair {
  const secretKey = sha256(text(`solana/${seed}/${index}`));
  return { secretKey, address: bs58.encode(ed25519.getPublicKey(secretKey)) };
}

/** A 32-byte address with no key behind it (token accounts, mints, tables), made from a name. */
export const addressOf = (name: string): string => bs58.encode(sha256(text(`solana-address/${name}`)));

/** The token account of `owner` for `mint` (stands for the associated token account). */
export const tokenAccountOf = (owner: string, mint: string): string => addressOf(`ata/${owner}/${mint}`);

export const lookupTable = (name: string, addresses: string[]): LookupTable => ({ address: addressOf(`alt/${name}`), addresses });

/** A blockhash for built transactions that name no recent one. */
export const DEFAULT_RECENT_BLOCKHASH = addressOf('recent-blockhash');

/** Executable and sysvar accounts hold fixed balances, as on mainnet; anything else starts from a deterministic amount. */
const FIXED_BALANCES: Record<string, number> = {
  [SYSTEM_PROGRAM]: 1,
  [VOTE_PROGRAM]: 1,
  [COMPUTE_BUDGET_PROGRAM]: 1,
  [SYSVAR_SLOT_HASHES]: 1,
  [SYSVAR_CLOCK]: 1,
  [TOKEN_PROGRAM]: 934_087_680,
};

/** Lamports and token amounts of accounts, so one transaction's post balances are the next one's pre balances. */
export class Ledger {
  private readonly lamports = new Map<string, number>();
  private readonly tokens = new Map<string, bigint>();

  balance(key: string): number {
    const known = this.lamports.get(key) ?? FIXED_BALANCES[key];
    if (known !== undefined) return known;
    const h = sha256(text(`lamports/${key}`));
    return 2_039_280 + ((h[0]! << 16) | (h[1]! << 8) | h[2]!) * 10_000;
  }

  setBalance(key: string, lamports: number): void {
    this.lamports.set(key, lamports);
  }

  tokenAmount(account: string): bigint {
    return this.tokens.get(account) ?? BigInt(1_000_000_000 + (sha256(text(`tokens/${account}`))[0]! << 20));
  }

  setTokenAmount(account: string, amount: bigint): void {
    this.tokens.set(account, amount);
  }
}

/** An account an instruction uses, as solana's AccountMeta. */
export interface AccountMeta {
  pubkey: string;
  isSigner: boolean;
  isWritable: boolean;
}

export interface Instruction {
  programId: string;
  accounts: AccountMeta[];
  data: Uint8Array;
}

/** A message compiled from instructions: the json message, the loaded addresses, and all keys in index order. */
export interface Compiled {
  message: UiMessage;
  loaded: { readonly: string[]; writable: string[] };
  keys: string[];
}

/**
 * Compiles instructions as solana's `Message::new` / `v0::Message::try_compile` do: the payer first, then
 * signers (writable, readonly), then the rest (writable, readonly); with `tables`, non-signer accounts that are
 * not program ids and are listed in a table are loaded from it instead of sent (writable ones first).
 */
export function compile(payer: string, instructions: Instruction[], recentBlockhash: string, tables: LookupTable[] = []): Compiled {
  const metas = new Map<string, { signer: boolean; writable: boolean }>([[payer, { signer: true, writable: true }]]);
  const programs = new Set(instructions.map((ix) => ix.programId));
  const merge = (pubkey: string, signer: boolean, writable: boolean): void => {
    const m = metas.get(pubkey);
    metas.set(pubkey, { signer: (m?.signer ?? false) || signer, writable: (m?.writable ?? false) || writable });
  };
  for (const ix of instructions) {
    for (const a of ix.accounts) merge(a.pubkey, a.isSigner, a.isWritable);
    merge(ix.programId, false, false);
  }
  const lookups: UiAddressTableLookup[] = [];
  const loaded = { readonly: [] as string[], writable: [] as string[] };
  for (const table of tables) {
    const lookup: UiAddressTableLookup = { accountKey: table.address, readonlyIndexes: [], writableIndexes: [] };
    for (const [key, m] of metas) {
      const at = table.addresses.indexOf(key);
      if (m.signer || programs.has(key) || at < 0) continue;
      (m.writable ? lookup.writableIndexes : lookup.readonlyIndexes).push(at);
      (m.writable ? loaded.writable : loaded.readonly).push(key);
      metas.delete(key);
    }
    if (lookup.writableIndexes.length + lookup.readonlyIndexes.length > 0) lookups.push(lookup);
  }
  const all = [...metas];
  const group = (signer: boolean, writable: boolean): string[] =>
    all.filter(([, m]) => m.signer === signer && m.writable === writable).map(([k]) => k);
  const staticKeys = [...group(true, true), ...group(true, false), ...group(false, true), ...group(false, false)];
  const keys = [...staticKeys, ...loaded.writable, ...loaded.readonly];
  const indexOf = (k: string): number => keys.indexOf(k);
  const message: UiMessage = {
    accountKeys: staticKeys,
    ...(tables.length > 0 ? { addressTableLookups: lookups } : {}),
    header: {
      numReadonlySignedAccounts: group(true, false).length,
      numReadonlyUnsignedAccounts: group(false, false).length,
      numRequiredSignatures: group(true, true).length + group(true, false).length,
    },
    instructions: instructions.map((ix) => ({
      accounts: ix.accounts.map((a) => indexOf(a.pubkey)),
      data: bs58.encode(ix.data),
      programIdIndex: indexOf(ix.programId),
      stackHeight: null,
    })),
    recentBlockhash,
  };
  return { message, loaded, keys };
}

/** Signs the message by each required signer, in account-key order. */
export function sign(message: UiMessage, version: 'legacy' | 0, signers: Keypair[]): string[] {
  const bytes = serializeMessage(message, version);
  return message.accountKeys.slice(0, message.header.numRequiredSignatures).map((key) => {
    const kp = signers.find((s) => s.address === key);
    if (!kp) throw new Error(`no signer for ${key}`);
    return bs58.encode(ed25519.sign(bytes, kp.secretKey));
  });
}

const u32 = (n: number): Uint8Array => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n, true);
  return b;
};
const u64 = (n: bigint | number): Uint8Array => {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(n), true);
  return b;
};
const concat = (...parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  parts.reduce((at, p) => (out.set(p, at), at + p.length), 0);
  return out;
};

/** System program `Transfer` (instruction 2, lamports as u64 LE). */
export const transferIx = (from: string, to: string, lamports: number): Instruction => ({
  programId: SYSTEM_PROGRAM,
  accounts: [
    { pubkey: from, isSigner: true, isWritable: true },
    { pubkey: to, isSigner: false, isWritable: true },
  ],
  data: concat(u32(2), u64(lamports)),
});

/** ComputeBudget `SetComputeUnitLimit` (instruction 2, u32): most mainnet transactions start with it; a limit alone costs no fee. */
export const computeUnitLimitIx = (units: number): Instruction => ({
  programId: COMPUTE_BUDGET_PROGRAM,
  accounts: [],
  data: concat(Uint8Array.of(2), u32(units)),
});

/** SPL Token `TransferChecked` (instruction 12: u64 amount, u8 decimals) with accounts source, mint, destination, owner. */
export const transferCheckedIx = (source: string, mint: Mint, destination: string, owner: string, amount: bigint): Instruction => ({
  programId: TOKEN_PROGRAM,
  accounts: [
    { pubkey: source, isSigner: false, isWritable: true },
    { pubkey: mint.address, isSigner: false, isWritable: false },
    { pubkey: destination, isSigner: false, isWritable: true },
    { pubkey: owner, isSigner: true, isWritable: false },
  ],
  data: concat(Uint8Array.of(12), u64(amount), Uint8Array.of(mint.decimals)),
});

/** A token amount as the node shows it: `uiAmount` null for zero, `uiAmountString` with trailing zeros trimmed. */
export function uiTokenAmount(amount: bigint, decimals: number): UiTokenAmount {
  const digits = amount.toString().padStart(decimals + 1, '0');
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, '');
  const uiAmountString = fraction === '' ? whole : `${whole}.${fraction}`;
  return { amount: amount.toString(), decimals, uiAmount: amount === 0n ? null : Number(uiAmountString), uiAmountString };
}

/** Log lines a node writes for a program invocation at `depth` (1 = top level). */
const invokeLogs = (program: string, depth: number, inner: string[] = [], consumed?: { units: number; of: number }): string[] => [
  `Program ${program} invoke [${depth}]`,
  ...inner,
  ...(consumed ? [`Program ${program} consumed ${consumed.units} of ${consumed.of} compute units`] : []),
  `Program ${program} success`,
];

const TOKEN_TRANSFER_UNITS = 6_200;
const BUILTIN_UNITS = 150;

/** Everything a builder needs besides the transaction's own inputs. */
export interface BuildContext {
  ledger: Ledger;
  recentBlockhash?: string;
}

const unique = (xs: string[]): string[] => [...new Set(xs)];

/** Pre balances, then the changes applied to the ledger; answers the post balances. */
function moveLamports(ledger: Ledger, keys: string[], changes: Map<string, number>): { pre: number[]; post: number[] } {
  const pre = keys.map((k) => ledger.balance(k));
  for (const [k, delta] of changes) ledger.setBalance(k, ledger.balance(k) + delta);
  return { pre, post: keys.map((k) => ledger.balance(k)) };
}

interface Assembly {
  payer: Keypair;
  signers: Keypair[];
  instructions: Instruction[];
  tables?: LookupTable[];
  /** Lamports moved besides the fee (payer's fee is added here). */
  lamports: Map<string, number>;
  logMessages: string[];
  computeUnitsConsumed: number;
  innerInstructions?: (keys: string[]) => InnerInstructions[];
  tokenBalances?: (keys: string[]) => { pre: TokenBalance[]; post: TokenBalance[] };
  err?: unknown;
  extraPrograms?: string[];
  mints?: string[];
  owners?: string[];
}

/** Compiles, signs and fills the meta of a transaction described by its parts. */
function assemble(ctx: BuildContext, a: Assembly): BuiltTx {
  const version = a.tables && a.tables.length > 0 ? 0 : 'legacy';
  const { message, loaded, keys } = compile(
    a.payer.address,
    a.instructions,
    ctx.recentBlockhash ?? DEFAULT_RECENT_BLOCKHASH,
    a.tables ?? [],
  );
  const signatures = sign(message, version, [a.payer, ...a.signers]);
  const fee = LAMPORTS_PER_SIGNATURE * signatures.length;
  a.lamports.set(a.payer.address, (a.lamports.get(a.payer.address) ?? 0) - fee);
  const { pre, post } = moveLamports(ctx.ledger, keys, a.lamports);
  const tokens = a.tokenBalances?.(keys) ?? { pre: [], post: [] };
  const entry: TxEntry = {
    meta: {
      computeUnitsConsumed: a.computeUnitsConsumed,
      err: a.err ?? null,
      fee,
      innerInstructions: a.innerInstructions?.(keys) ?? [],
      loadedAddresses: { readonly: loaded.readonly, writable: loaded.writable },
      logMessages: a.logMessages,
      postBalances: post,
      postTokenBalances: tokens.post,
      preBalances: pre,
      preTokenBalances: tokens.pre,
      rewards: [],
      status: a.err === undefined ? { Ok: null } : { Err: a.err },
    },
    transaction: { message, signatures },
    version,
  };
  const touches: Touches = {
    accounts: keys,
    programs: unique([...a.instructions.map((ix) => ix.programId), ...(a.extraPrograms ?? [])]),
    mints: unique(a.mints ?? []),
    owners: unique(a.owners ?? []),
  };
  return { entry, signature: signatures[0]!, touches };
}

export interface SolTransfer {
  from: Keypair;
  to: string;
  lamports: number;
  /** Loads `to` from this table (a v0 transaction) when it lists it. */
  table?: LookupTable;
  /** Puts a ComputeBudget SetComputeUnitLimit first, as most wallets do. */
  computeBudget?: boolean;
}

/** A System transfer of `lamports` from `from` to `to`. */
export function solTransfer(ctx: BuildContext, t: SolTransfer): BuiltTx {
  const instructions = [...(t.computeBudget ? [computeUnitLimitIx(200_000)] : []), transferIx(t.from.address, t.to, t.lamports)];
  return assemble(ctx, {
    payer: t.from,
    signers: [],
    instructions,
    tables: t.table ? [t.table] : [],
    lamports: new Map([
      [t.from.address, -t.lamports],
      [t.to, t.lamports],
    ]),
    logMessages: instructions.flatMap((ix) => invokeLogs(ix.programId, 1)),
    computeUnitsConsumed: BUILTIN_UNITS * instructions.length,
  });
}

/** A System transfer the sender cannot pay: it fails with the System program's Custom(1) (insufficient lamports); only the fee is taken. */
export function failedTransfer(ctx: BuildContext, t: SolTransfer): BuiltTx {
  const have = ctx.ledger.balance(t.from.address) - LAMPORTS_PER_SIGNATURE;
  const lamports = Math.max(t.lamports, have + 1);
  return assemble(ctx, {
    payer: t.from,
    signers: [],
    instructions: [transferIx(t.from.address, t.to, lamports)],
    lamports: new Map(),
    logMessages: [
      `Program ${SYSTEM_PROGRAM} invoke [1]`,
      `Transfer: insufficient lamports ${have}, need ${lamports}`,
      `Program ${SYSTEM_PROGRAM} failed: custom program error: 0x1`,
    ],
    computeUnitsConsumed: BUILTIN_UNITS,
    err: { InstructionError: [0, { Custom: 1 }] },
  });
}

export interface SplTransfer {
  /** The sender: owner of the source token account and fee payer. */
  owner: Keypair;
  mint: Mint;
  /** The receiving wallet; its token account (tokenAccountOf) is the destination and it shows only as that balance's owner. */
  to: string;
  amount: bigint;
  /** Calls this program, which transfers by CPI into the Token program (an inner instruction at stack height 2). */
  via?: string;
  /** Loads the mint and the destination token account from this table (a v0 transaction) where it lists them. */
  table?: LookupTable;
}

/** An SPL Token transferChecked between the token accounts of `owner` and `to`, with pre/post token balances. */
export function splTransfer(ctx: BuildContext, t: SplTransfer): BuiltTx {
  const source = tokenAccountOf(t.owner.address, t.mint.address);
  const destination = tokenAccountOf(t.to, t.mint.address);
  const tokenIx = transferCheckedIx(source, t.mint, destination, t.owner.address, t.amount);
  const top: Instruction = t.via
    ? {
        programId: t.via,
        accounts: [...tokenIx.accounts, { pubkey: TOKEN_PROGRAM, isSigner: false, isWritable: false }],
        data: concat(Uint8Array.of(1), u64(t.amount)),
      }
    : tokenIx;
  const instructions = [computeUnitLimitIx(200_000), top];
  const tokenLogs = (depth: number, of: number): string[] =>
    invokeLogs(TOKEN_PROGRAM, depth, ['Program log: Instruction: TransferChecked'], { units: TOKEN_TRANSFER_UNITS, of });
  const viaUnits = 8_000;
  const topLogs = t.via
    ? invokeLogs(t.via, 1, ['Program log: Instruction: Pay', ...tokenLogs(2, 200_000 - BUILTIN_UNITS - viaUnits)], {
        units: viaUnits + TOKEN_TRANSFER_UNITS,
        of: 200_000 - BUILTIN_UNITS,
      })
    : tokenLogs(1, 200_000 - BUILTIN_UNITS);
  const before = { source: ctx.ledger.tokenAmount(source), destination: ctx.ledger.tokenAmount(destination) };
  ctx.ledger.setTokenAmount(source, before.source - t.amount);
  ctx.ledger.setTokenAmount(destination, before.destination + t.amount);
  const balance = (keys: string[], account: string, owner: string, amount: bigint): TokenBalance => ({
    accountIndex: keys.indexOf(account),
    mint: t.mint.address,
    owner,
    programId: TOKEN_PROGRAM,
    uiTokenAmount: uiTokenAmount(amount, t.mint.decimals),
  });
  const sides = (keys: string[], s: bigint, d: bigint): TokenBalance[] =>
    [balance(keys, source, t.owner.address, s), balance(keys, destination, t.to, d)].sort((x, y) => x.accountIndex - y.accountIndex);
  return assemble(ctx, {
    payer: t.owner,
    signers: [],
    instructions,
    tables: t.table ? [t.table] : [],
    lamports: new Map(),
    logMessages: [...invokeLogs(COMPUTE_BUDGET_PROGRAM, 1), ...topLogs],
    computeUnitsConsumed: BUILTIN_UNITS + TOKEN_TRANSFER_UNITS + (t.via ? viaUnits : 0),
    innerInstructions: t.via
      ? (keys) => [
          {
            index: 1,
            instructions: [
              {
                accounts: tokenIx.accounts.map((a) => keys.indexOf(a.pubkey)),
                data: bs58.encode(tokenIx.data),
                programIdIndex: keys.indexOf(TOKEN_PROGRAM),
                stackHeight: 2,
              },
            ],
          },
        ]
      : undefined,
    tokenBalances: (keys) => ({
      pre: sides(keys, before.source, before.destination),
      post: sides(keys, before.source - t.amount, before.destination + t.amount),
    }),
    extraPrograms: t.via ? [TOKEN_PROGRAM] : [],
    mints: [t.mint.address],
    owners: [t.owner.address, t.to],
  });
}

export interface Vote {
  /** The validator identity: signer and fee payer. */
  identity: Keypair;
  voteAccount: string;
  /** The slot voted on (the vote names it and the two before, as the fixture's votes do). */
  slot: number;
  /** The voted bank's hash. */
  hash: string;
  timestamp: number;
}

/**
 * A legacy Vote program `Vote` (instruction 2: slots as a bincode Vec<u64>, the bank hash, Some(timestamp)), with
 * the accounts of the 2021 votes in the chainstorage fixture: identity, vote account, SlotHashes, Clock, Vote.
 */
export function voteTx(ctx: BuildContext, v: Vote): BuiltTx {
  const slots = [v.slot - 2, v.slot - 1, v.slot].filter((s) => s >= 0);
  const data = concat(
    u32(2),
    u64(slots.length),
    ...slots.map(u64),
    bs58.decode(v.hash),
    Uint8Array.of(1),
    u64(BigInt.asUintN(64, BigInt(v.timestamp))),
  );
  const ix: Instruction = {
    programId: VOTE_PROGRAM,
    accounts: [
      { pubkey: v.voteAccount, isSigner: false, isWritable: true },
      { pubkey: SYSVAR_SLOT_HASHES, isSigner: false, isWritable: false },
      { pubkey: SYSVAR_CLOCK, isSigner: false, isWritable: false },
      { pubkey: v.identity.address, isSigner: true, isWritable: true },
    ],
    data,
  };
  return assemble(ctx, {
    payer: v.identity,
    signers: [],
    instructions: [ix],
    lamports: new Map(),
    logMessages: invokeLogs(VOTE_PROGRAM, 1),
    computeUnitsConsumed: 2_100,
  });
}

/** The keys a json-encoded transaction touches, read from its JSON (for the real fixtures, whose builder is mainnet). */
export function touchesOf(entry: Pick<TxEntry, 'meta' | 'transaction'>): Touches {
  const { message } = entry.transaction;
  const loaded = entry.meta.loadedAddresses ?? { readonly: [], writable: [] };
  const accounts = [...message.accountKeys, ...loaded.writable, ...loaded.readonly];
  const inner = (entry.meta.innerInstructions ?? []).flatMap((i) => i.instructions);
  const balances = [...(entry.meta.preTokenBalances ?? []), ...(entry.meta.postTokenBalances ?? [])];
  return {
    accounts,
    programs: unique([...message.instructions, ...inner].map((ix) => accounts[ix.programIdIndex]!)),
    mints: unique(balances.map((b) => b.mint)),
    owners: unique(balances.map((b) => b.owner).filter((o): o is string => typeof o === 'string')),
  };
}
