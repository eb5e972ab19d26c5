import { JsonScanner, latin1 } from '../ingest/json-scan.js';
import type { RpcError, RpcTokenBalance, RpcUiTokenAmount } from './rpc-json.js';

/**
 * A getBlock response body (json encoding, transactionDetails full) read
 * straight from its bytes into the parts a slot's record keeps. A mainnet
 * slot's answer is several MB, most of it log messages and lamport balances the
 * record does not keep: these are stepped over without a string or an object
 * made of them (engine/ingest/json-scan.ts).
 */
export class SolanaScanError extends Error {
  override name = 'SolanaScanError';
}

/** An instruction; its indexes point into the transaction's accountKeys (static, then loaded). */
export interface SolInstruction {
  programIdIndex: number;
  accounts: number[];
  /** base58, as the node gives it. */
  data: string;
  /** Inner instructions: the call depth the node reports (2 and more); null when it reports none (top level, old slots). */
  stackHeight: number | null;
}

export interface SolInnerInstructions {
  index: number;
  instructions: SolInstruction[];
}

export interface SolTransaction {
  /** The first signature: the transaction's id. */
  signature: string;
  /** Lamports. */
  fee: number;
  /** The node's `err` as JSON text; null when the transaction succeeded. */
  err: string | null;
  version: 'legacy' | 0;
  /** Static keys, then those loaded from lookup tables (writable, then readonly): the order instruction indexes use. */
  accountKeys: string[];
  /** How many of accountKeys are the message's own (the rest are loaded). */
  staticKeys: number;
  loadedWritable: number;
  instructions: SolInstruction[];
  innerInstructions: SolInnerInstructions[] | null;
  preTokenBalances: RpcTokenBalance[] | null;
  postTokenBalances: RpcTokenBalance[] | null;
}

export interface SolBlock {
  /** Not in the answer: the slot asked for. */
  slot: number;
  blockhash: string;
  previousBlockhash: string;
  parentSlot: number;
  blockHeight: number | null;
  blockTime: number | null;
  transactions: SolTransaction[];
}

/** A block; null when the node answered `result: null`; the node's JSON-RPC error (skipped -32007/-32009, not yet -32004, …). */
export type SolScanOutcome = SolBlock | null | { error: RpcError };

class Scanner extends JsonScanner {
  constructor(b: Buffer) {
    super(b, (message) => new SolanaScanError(`getBlock answer: ${message}`));
  }

  /** A string without escapes (keys, base58): its bytes as latin1, no UTF-8 decoding. */
  plain(): string {
    const [s, e] = this.stringRange();
    return latin1(this.b, s, e);
  }

  intOrNull(): number | null {
    return this.isNull() ? null : this.int();
  }

  ints(): number[] {
    return this.array(() => this.int());
  }
}

/** The getBlock response body of `slot` read into its outcome; a SolanaScanError for an answer that is not one. */
export function scanSolanaBlock(slot: number, body: Uint8Array): SolScanOutcome {
  const s = new Scanner(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
  let outcome = undefined as SolScanOutcome | undefined;
  s.object((key) => {
    if (key === 'result') outcome = s.isNull() ? null : scanBlock(s, slot);
    else if (key === 'error' && !s.isNull()) outcome = { error: scanError(s) };
    else s.skip();
  });
  if (outcome === undefined) return s.fail('neither a result nor an error');
  return outcome;
}

function scanError(s: Scanner): RpcError {
  let code: number | undefined;
  let message = '';
  s.object((key) => {
    if (key === 'code') code = s.int();
    else if (key === 'message') message = JSON.parse(s.raw()) as string;
    else s.skip();
  });
  if (code === undefined) s.fail('an error without a code');
  return { code, message };
}

function scanBlock(s: Scanner, slot: number): SolBlock {
  const b: Partial<SolBlock> = { slot };
  s.object((key) => {
    switch (key) {
      case 'blockhash':
      case 'previousBlockhash':
        b[key] = s.plain();
        break;
      case 'parentSlot':
        b.parentSlot = s.int();
        break;
      case 'blockHeight':
      case 'blockTime':
        b[key] = s.intOrNull();
        break;
      case 'transactions':
        b.transactions = s.array(() => scanTx(s));
        break;
      default:
        s.skip();
    }
  });
  if (b.blockhash === undefined || b.previousBlockhash === undefined || b.parentSlot === undefined || b.transactions === undefined) {
    s.fail('a block without blockhash, previousBlockhash, parentSlot or transactions (transactionDetails must be full)');
  }
  b.blockHeight ??= null;
  b.blockTime ??= null;
  return b as SolBlock;
}

function scanTx(s: Scanner): SolTransaction {
  const t: SolTransaction = { signature: '', fee: 0, err: null, version: 'legacy', accountKeys: [], staticKeys: 0, loadedWritable: 0, instructions: [], innerInstructions: null, preTokenBalances: null, postTokenBalances: null };
  let loaded: { writable: string[]; readonly: string[] } | undefined;
  s.object((key) => {
    if (key === 'transaction') scanTransaction(s, t);
    else if (key === 'meta') {
      if (!s.isNull()) loaded = scanMeta(s, t);
    } else if (key === 'version') t.version = s.peek() === 0x22 ? (s.plain() === 'legacy' ? 'legacy' : s.fail('an unknown transaction version')) : s.int() === 0 ? 0 : s.fail('an unknown transaction version');
    else s.skip();
  });
  if (t.signature === '') s.fail('a transaction without signatures (transactionDetails must be full, encoding json)');
  t.staticKeys = t.accountKeys.length;
  if (loaded !== undefined) {
    t.loadedWritable = loaded.writable.length;
    for (const k of loaded.writable) t.accountKeys.push(k);
    for (const k of loaded.readonly) t.accountKeys.push(k);
  }
  return t;
}

function scanTransaction(s: Scanner, t: SolTransaction): void {
  if (s.peek() !== 0x7b) s.fail('a transaction not in the json encoding');
  s.object((key) => {
    if (key === 'signatures') {
      const sigs = s.array(() => s.plain());
      t.signature = sigs[0] ?? '';
    } else if (key === 'message') {
      s.object((k) => {
        if (k === 'accountKeys') {
          t.accountKeys = s.array(() => (s.peek() === 0x7b ? s.fail('accountKeys are objects (jsonParsed): ask for the json encoding') : s.plain()));
        } else if (k === 'instructions') t.instructions = s.array(() => scanInstruction(s));
        else s.skip();
      });
    } else s.skip();
  });
}

function scanInstruction(s: Scanner): SolInstruction {
  const ix: SolInstruction = { programIdIndex: -1, accounts: [], data: '', stackHeight: null };
  s.object((key) => {
    if (key === 'programIdIndex') ix.programIdIndex = s.int();
    else if (key === 'accounts') ix.accounts = s.ints();
    else if (key === 'data') ix.data = s.plain();
    else if (key === 'stackHeight') ix.stackHeight = s.intOrNull();
    else s.skip();
  });
  if (ix.programIdIndex < 0) s.fail('an instruction without programIdIndex (jsonParsed?)');
  return ix;
}

/** The meta's kept parts into `t`; its loaded addresses returned (they follow the static keys, which may come later). */
function scanMeta(s: Scanner, t: SolTransaction): { writable: string[]; readonly: string[] } | undefined {
  let loaded: { writable: string[]; readonly: string[] } | undefined;
  s.object((key) => {
    switch (key) {
      case 'err':
        if (!s.isNull()) t.err = s.raw();
        break;
      case 'fee':
        t.fee = s.int();
        break;
      case 'innerInstructions':
        t.innerInstructions = s.isNull() ? null : s.array(() => scanInner(s));
        break;
      case 'preTokenBalances':
      case 'postTokenBalances':
        t[key] = s.isNull() ? null : s.array(() => scanTokenBalance(s));
        break;
      case 'loadedAddresses':
        if (s.isNull()) break;
        loaded = { writable: [], readonly: [] };
        s.object((k) => (k === 'writable' || k === 'readonly' ? (loaded![k] = s.array(() => s.plain())) : s.skip()));
        break;
      default:
        // logMessages, pre/postBalances, rewards, status, returnData, computeUnitsConsumed: not kept.
        s.skip();
    }
  });
  return loaded;
}

function scanInner(s: Scanner): SolInnerInstructions {
  const inner: SolInnerInstructions = { index: -1, instructions: [] };
  s.object((key) => {
    if (key === 'index') inner.index = s.int();
    else if (key === 'instructions') inner.instructions = s.array(() => scanInstruction(s));
    else s.skip();
  });
  if (inner.index < 0) s.fail('inner instructions without an index');
  return inner;
}

function scanTokenBalance(s: Scanner): RpcTokenBalance {
  const b: Partial<RpcTokenBalance> = {};
  s.object((key) => {
    switch (key) {
      case 'accountIndex':
        b.accountIndex = s.int();
        break;
      case 'mint':
      case 'owner':
      case 'programId':
        b[key] = s.plain();
        break;
      case 'uiTokenAmount':
        b.uiTokenAmount = scanUiAmount(s);
        break;
      default:
        s.skip();
    }
  });
  if (b.accountIndex === undefined || b.mint === undefined || b.uiTokenAmount === undefined) s.fail('a token balance without accountIndex, mint or uiTokenAmount');
  return b as RpcTokenBalance;
}

function scanUiAmount(s: Scanner): RpcUiTokenAmount {
  const a: RpcUiTokenAmount = { amount: '', decimals: 0, uiAmount: null, uiAmountString: '' };
  s.object((key) => {
    if (key === 'amount' || key === 'uiAmountString') a[key] = s.plain();
    else if (key === 'decimals') a.decimals = s.int();
    // Number() of the node's digits: the double JSON.parse gives.
    else if (key === 'uiAmount') a.uiAmount = s.isNull() ? null : Number(s.numberText());
    else s.skip();
  });
  return a;
}
