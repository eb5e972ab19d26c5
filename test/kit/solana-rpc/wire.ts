/**
 * Solana's transaction message in wire format (what the fee payer signs), from the getBlock / getTransaction
 * json encoding of a message: legacy, and v0 (prefix 0x80, then address-table lookups after the instructions).
 * Lengths are compact-u16 ("shortvec"). See solana-message's `serialize` and the versioned message docs.
 */
import bs58 from 'bs58';

/** A compiled instruction as the json encoding writes it (`stackHeight` null at top level since agave 1.16). */
export interface UiInstruction {
  accounts: number[];
  data: string;
  programIdIndex: number;
  stackHeight?: number | null;
}

export interface UiAddressTableLookup {
  accountKey: string;
  readonlyIndexes: number[];
  writableIndexes: number[];
}

export interface UiMessageHeader {
  numReadonlySignedAccounts: number;
  numReadonlyUnsignedAccounts: number;
  numRequiredSignatures: number;
}

/** `transaction.message` of the json encoding; `addressTableLookups` only on v0 messages. */
export interface UiMessage {
  accountKeys: string[];
  addressTableLookups?: UiAddressTableLookup[];
  header: UiMessageHeader;
  instructions: UiInstruction[];
  recentBlockhash: string;
}

/** compact-u16: 7 bits a byte, low first, high bit set while more follow. */
export function shortvec(n: number): number[] {
  const out: number[] = [];
  let rest = n;
  for (;;) {
    const low = rest & 0x7f;
    rest >>= 7;
    if (rest === 0) return [...out, low];
    out.push(low | 0x80);
  }
}

const key32 = (text: string): Uint8Array => {
  const bytes = bs58.decode(text);
  if (bytes.length !== 32) throw new Error(`${text} is not a 32-byte key`);
  return bytes;
};

const bytesList = (list: number[]): number[] => [...shortvec(list.length), ...list];

/** The message bytes; `version` 0 writes the v0 prefix and the lookups (an absent `addressTableLookups` counts as none). */
export function serializeMessage(message: UiMessage, version: 'legacy' | 0): Uint8Array {
  const parts: Array<number[] | Uint8Array> = [];
  if (version === 0) parts.push([0x80]);
  const { header } = message;
  parts.push([header.numRequiredSignatures, header.numReadonlySignedAccounts, header.numReadonlyUnsignedAccounts]);
  parts.push(shortvec(message.accountKeys.length), ...message.accountKeys.map(key32));
  parts.push(key32(message.recentBlockhash));
  parts.push(shortvec(message.instructions.length));
  for (const ix of message.instructions) parts.push([ix.programIdIndex], bytesList(ix.accounts), bytesList([...bs58.decode(ix.data)]));
  if (version === 0) {
    const lookups = message.addressTableLookups ?? [];
    parts.push(shortvec(lookups.length));
    for (const l of lookups) parts.push(key32(l.accountKey), bytesList(l.writableIndexes), bytesList(l.readonlyIndexes));
  }
  const size = parts.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
