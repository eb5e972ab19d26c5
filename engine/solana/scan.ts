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

/** Base58 keys seen lately, by hash of their text (programs, sysvars and validators' keys repeat within and across slots). */
const KEY_TEXTS = new Map<number, string>();

class Scanner extends JsonScanner {
  constructor(b: Buffer) {
    super(b, (message) => new SolanaScanError(`getBlock answer: ${message}`));
  }

  /** A string without escapes (signatures, base58 data): its bytes as latin1, no UTF-8 decoding. */
  plain(): string {
    const e = this.stringRange();
    const s = this.start;
    return latin1(this.b, s, e);
  }

  /** A base58 key: one string per distinct key, not one per mention. */
  keyText(): string {
    return this.interned(KEY_TEXTS, 1 << 16);
  }

  keyTexts(into: string[]): string[] {
    for (let more = this.firstItem(); more; more = this.nextItem()) into.push(this.keyText());
    return into;
  }

  intOrNull(): number | null {
    return this.isNull() ? null : this.int();
  }

  ints(): number[] {
    const out: number[] = [];
    for (let more = this.firstItem(); more; more = this.nextItem()) out.push(this.int());
    return out;
  }
}

/**
 * The getBlock response body of `slot` read into its outcome; a SolanaScanError for an answer that is not one.
 * With `onTransaction`, each transaction goes there as it is read and the block's list stays empty: a slot's
 * thousands of transactions are then never all alive at once (promoted out of the young generation, they made
 * garbage collection a third of the time).
 */
export function scanSolanaBlock(
  slot: number,
  body: Uint8Array,
  onTransaction?: (t: SolTransaction, index: number) => void,
): SolScanOutcome {
  const s = new Scanner(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
  let outcome = undefined as SolScanOutcome | undefined;
  s.object((key) => {
    if (key === 'result') outcome = s.isNull() ? null : scanBlock(s, slot, onTransaction);
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

function scanBlock(s: Scanner, slot: number, onTransaction?: (t: SolTransaction, index: number) => void): SolBlock {
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
        b.transactions = [];
        for (let more = s.firstItem(), i = 0; more; more = s.nextItem(), i++) {
          if (onTransaction === undefined) b.transactions.push(scanTx(s));
          else onTransaction(scanTx(s), i);
        }
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
  const t: SolTransaction = {
    signature: '',
    fee: 0,
    err: null,
    version: 'legacy',
    accountKeys: [],
    staticKeys: 0,
    loadedWritable: 0,
    instructions: [],
    innerInstructions: null,
    preTokenBalances: null,
    postTokenBalances: null,
  };
  let writable: string[] = [];
  let readonly: string[] = [];
  for (let key = s.firstKey(); key !== null; key = s.nextKey()) {
    if (key === 'transaction') scanTransaction(s, t);
    else if (key === 'meta') {
      if (!s.isNull()) [writable, readonly] = scanMeta(s, t);
    } else if (key === 'version') t.version = scanVersion(s);
    else s.skip();
  }
  if (t.signature === '') s.fail('a transaction without signatures (transactionDetails must be full, encoding json)');
  t.staticKeys = t.accountKeys.length;
  t.loadedWritable = writable.length;
  for (const k of writable) t.accountKeys.push(k);
  for (const k of readonly) t.accountKeys.push(k);
  return t;
}

function scanVersion(s: Scanner): 'legacy' | 0 {
  if (s.peek() === 0x22) return s.plain() === 'legacy' ? 'legacy' : s.fail('an unknown transaction version');
  return s.int() === 0 ? 0 : s.fail('an unknown transaction version');
}

function scanTransaction(s: Scanner, t: SolTransaction): void {
  if (s.peek() !== 0x7b) s.fail('a transaction not in the json encoding');
  for (let key = s.firstKey(); key !== null; key = s.nextKey()) {
    if (key === 'signatures') {
      for (let more = s.firstItem(), first = true; more; more = s.nextItem(), first = false) {
        if (first) t.signature = s.plain();
        else s.skip();
      }
    } else if (key === 'message') {
      for (let k = s.firstKey(); k !== null; k = s.nextKey()) {
        if (k === 'accountKeys') {
          for (let more = s.firstItem(); more; more = s.nextItem())
            t.accountKeys.push(s.peek() === 0x7b ? s.fail('accountKeys are objects (jsonParsed): ask for the json encoding') : s.keyText());
        } else if (k === 'instructions') t.instructions = scanInstructions(s);
        else s.skip();
      }
    } else s.skip();
  }
}

function scanInstructions(s: Scanner): SolInstruction[] {
  const out: SolInstruction[] = [];
  for (let more = s.firstItem(); more; more = s.nextItem()) {
    const ix: SolInstruction = { programIdIndex: -1, accounts: [], data: '', stackHeight: null };
    for (let key = s.firstKey(); key !== null; key = s.nextKey()) {
      if (key === 'programIdIndex') ix.programIdIndex = s.int();
      else if (key === 'accounts') ix.accounts = s.ints();
      else if (key === 'data') ix.data = s.plain();
      else if (key === 'stackHeight') ix.stackHeight = s.intOrNull();
      else s.skip();
    }
    if (ix.programIdIndex < 0) s.fail('an instruction without programIdIndex (jsonParsed?)');
    out.push(ix);
  }
  return out;
}

/** The meta's kept parts into `t`; its loaded addresses returned (writable, readonly: they follow the static keys, which may come later). */
function scanMeta(s: Scanner, t: SolTransaction): [string[], string[]] {
  const writable: string[] = [];
  const readonly: string[] = [];
  for (let key = s.firstKey(); key !== null; key = s.nextKey()) {
    switch (key) {
      case 'err':
        if (!s.isNull()) t.err = s.raw();
        break;
      case 'fee':
        t.fee = s.int();
        break;
      case 'innerInstructions':
        t.innerInstructions = s.isNull() ? null : scanInner(s);
        break;
      case 'preTokenBalances':
      case 'postTokenBalances':
        t[key] = s.isNull() ? null : scanTokenBalances(s);
        break;
      case 'loadedAddresses':
        if (s.isNull()) break;
        for (let k = s.firstKey(); k !== null; k = s.nextKey()) {
          if (k === 'writable') s.keyTexts(writable);
          else if (k === 'readonly') s.keyTexts(readonly);
          else s.skip();
        }
        break;
      default:
        // logMessages, pre/postBalances, rewards, status, returnData, computeUnitsConsumed: not kept.
        s.skip();
    }
  }
  return [writable, readonly];
}

function scanInner(s: Scanner): SolInnerInstructions[] {
  const out: SolInnerInstructions[] = [];
  for (let more = s.firstItem(); more; more = s.nextItem()) {
    const inner: SolInnerInstructions = { index: -1, instructions: [] };
    for (let key = s.firstKey(); key !== null; key = s.nextKey()) {
      if (key === 'index') inner.index = s.int();
      else if (key === 'instructions') inner.instructions = scanInstructions(s);
      else s.skip();
    }
    if (inner.index < 0) s.fail('inner instructions without an index');
    out.push(inner);
  }
  return out;
}

function scanTokenBalances(s: Scanner): RpcTokenBalance[] {
  const out: RpcTokenBalance[] = [];
  for (let more = s.firstItem(); more; more = s.nextItem()) {
    const b: Partial<RpcTokenBalance> = {};
    for (let key = s.firstKey(); key !== null; key = s.nextKey()) {
      switch (key) {
        case 'accountIndex':
          b.accountIndex = s.int();
          break;
        case 'mint':
        case 'owner':
        case 'programId':
          b[key] = s.keyText();
          break;
        case 'uiTokenAmount':
          b.uiTokenAmount = scanUiAmount(s);
          break;
        default:
          s.skip();
      }
    }
    if (b.accountIndex === undefined || b.mint === undefined || b.uiTokenAmount === undefined)
      s.fail('a token balance without accountIndex, mint or uiTokenAmount');
    out.push(b as RpcTokenBalance);
  }
  return out;
}

function scanUiAmount(s: Scanner): RpcUiTokenAmount {
  const a: RpcUiTokenAmount = { amount: '', decimals: 0, uiAmount: null, uiAmountString: '' };
  for (let key = s.firstKey(); key !== null; key = s.nextKey()) {
    if (key === 'amount' || key === 'uiAmountString') a[key] = s.plain();
    else if (key === 'decimals') a.decimals = s.int();
    // Number() of the node's digits: the double JSON.parse gives.
    else if (key === 'uiAmount') a.uiAmount = s.isNull() ? null : Number(s.numberText());
    else s.skip();
  }
  return a;
}
