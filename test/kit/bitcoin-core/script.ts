/**
 * An output script as Bitcoin Core describes it in JSON (`ScriptToUniv`, `ScriptToAsmStr`, `Solver`,
 * `InferDescriptor`): asm, desc, hex, address, type. Written from Core's rules, not from chainpost's
 * engine, so tests compare chainpost against an independent reading.
 */
import { address as addr, script as bscript } from 'bitcoinjs-lib';

/** Core's `scriptPubKey` object, fields in Core's order. */
export interface ScriptPubKeyJson {
  asm: string;
  desc: string;
  hex: string;
  address?: string;
  type: ScriptType;
}

export type ScriptType =
  | 'pubkey'
  | 'pubkeyhash'
  | 'scripthash'
  | 'multisig'
  | 'nulldata'
  | 'witness_v0_keyhash'
  | 'witness_v0_scripthash'
  | 'witness_v1_taproot'
  | 'witness_unknown'
  | 'anchor'
  | 'nonstandard';

/** One parsed op: the opcode and, for pushes, the pushed bytes. */
interface Op {
  code: number;
  data?: Uint8Array;
}

const OP_PUSHDATA1 = 0x4c;
const OP_PUSHDATA2 = 0x4d;
const OP_PUSHDATA4 = 0x4e;
const OP_RETURN = 0x6a;
const OP_CHECKSIG = 0xac;
const OP_CHECKMULTISIG = 0xae;

/** Core's `GetOp` over the whole script; `undefined` marks where it fails (a push running past the end). */
export function parseOps(script: Uint8Array): Array<Op | undefined> {
  const ops: Array<Op | undefined> = [];
  let i = 0;
  while (i < script.length) {
    const code = script[i++]!;
    if (code > OP_PUSHDATA4) {
      ops.push({ code });
      continue;
    }
    const width = code === OP_PUSHDATA1 ? 1 : code === OP_PUSHDATA2 ? 2 : code === OP_PUSHDATA4 ? 4 : 0;
    if (i + width > script.length) return [...ops, undefined];
    let size = code;
    if (width > 0) {
      size = 0;
      for (let b = width - 1; b >= 0; b--) size = size * 256 + script[i + b]!;
      i += width;
    }
    if (i + size > script.length) return [...ops, undefined];
    ops.push({ code, data: script.subarray(i, i + size) });
    i += size;
  }
  return ops;
}

// Core's GetOpName for 0x61..0xba; OP_1..OP_16 and OP_1NEGATE are written as numbers.
const NAMES = (
  'NOP VER IF NOTIF VERIF VERNOTIF ELSE ENDIF VERIFY RETURN TOALTSTACK FROMALTSTACK 2DROP 2DUP 3DUP 2OVER 2ROT 2SWAP ' +
  'IFDUP DEPTH DROP DUP NIP OVER PICK ROLL ROT SWAP TUCK CAT SUBSTR LEFT RIGHT SIZE INVERT AND OR XOR EQUAL EQUALVERIFY ' +
  'RESERVED1 RESERVED2 1ADD 1SUB 2MUL 2DIV NEGATE ABS NOT 0NOTEQUAL ADD SUB MUL DIV MOD LSHIFT RSHIFT BOOLAND BOOLOR ' +
  'NUMEQUAL NUMEQUALVERIFY NUMNOTEQUAL LESSTHAN GREATERTHAN LESSTHANOREQUAL GREATERTHANOREQUAL MIN MAX WITHIN RIPEMD160 ' +
  'SHA1 SHA256 HASH160 HASH256 CODESEPARATOR CHECKSIG CHECKSIGVERIFY CHECKMULTISIG CHECKMULTISIGVERIFY NOP1 ' +
  'CHECKLOCKTIMEVERIFY CHECKSEQUENCEVERIFY NOP4 NOP5 NOP6 NOP7 NOP8 NOP9 NOP10 CHECKSIGADD'
).split(' ');

function opName(code: number): string {
  if (code === 0x4f) return '-1';
  if (code === 0x50) return 'OP_RESERVED';
  if (code >= 0x51 && code <= 0x60) return String(code - 0x50);
  if (code === 0xff) return 'OP_INVALIDOPCODE';
  const name = NAMES[code - 0x61];
  return name === undefined ? 'OP_UNKNOWN' : `OP_${name}`;
}

/** `CScriptNum(vch).getint()` for pushes of up to 4 bytes: little-endian, sign in the top bit. */
function scriptNum(data: Uint8Array): number {
  if (data.length === 0) return 0;
  let n = 0;
  for (let i = data.length - 1; i >= 0; i--) n = n * 256 + (i === data.length - 1 ? data[i]! & 0x7f : data[i]!);
  return data[data.length - 1]! & 0x80 ? -n : n;
}

const SIGHASH: Record<number, string> = {
  1: 'ALL',
  2: 'NONE',
  3: 'SINGLE',
  0x81: 'ALL|ANYONECANPAY',
  0x82: 'NONE|ANYONECANPAY',
  0x83: 'SINGLE|ANYONECANPAY',
};
const hex = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.length).toString('hex');

/** Core's `ScriptToAsmStr`; `sighash` decodes a trailing hash type on DER signatures, as Core does for scriptSigs. */
export function coreAsm(script: Uint8Array, sighash = false): string {
  const unspendable = script[0] === OP_RETURN || script.length > 10_000;
  const words: string[] = [];
  for (const op of parseOps(script)) {
    if (op === undefined) return [...words, '[error]'].join(' ');
    if (op.data === undefined) words.push(opName(op.code));
    else if (op.data.length <= 4) words.push(String(scriptNum(op.data)));
    else if (sighash && !unspendable && bscript.isCanonicalScriptSignature(op.data)) {
      words.push(hex(op.data.subarray(0, -1)) + `[${SIGHASH[op.data[op.data.length - 1]!]}]`);
    } else words.push(hex(op.data));
  }
  return words.join(' ');
}

/** `CPubKey::ValidSize`: a prefix byte that gives the key's length. */
function validPubkeySize(k: Uint8Array): boolean {
  const len = k[0] === 2 || k[0] === 3 ? 33 : k[0] === 4 || k[0] === 6 || k[0] === 7 ? 65 : 0;
  return len > 0 && k.length === len;
}

/** What Core's `Solver` finds in a script, with the key(s) or program it read. */
export interface Solved {
  type: ScriptType;
  keys?: Uint8Array[];
  required?: number;
  witness?: { version: number; program: Uint8Array };
}

function witnessProgram(s: Uint8Array): { version: number; program: Uint8Array } | undefined {
  if (s.length < 4 || s.length > 42) return undefined;
  if (s[0] !== 0 && (s[0]! < 0x51 || s[0]! > 0x60)) return undefined;
  if (s[1]! + 2 !== s.length) return undefined;
  return { version: s[0] === 0 ? 0 : s[0]! - 0x50, program: s.subarray(2) };
}

/** OP_1..OP_16 as its number, else undefined (multisig counts; larger pushed counts are not modelled). */
const smallInt = (op: Op | undefined): number | undefined =>
  op && op.data === undefined && op.code >= 0x51 && op.code <= 0x60 ? op.code - 0x50 : undefined;

function multisig(s: Uint8Array): Solved | undefined {
  const ops = parseOps(s);
  const last = ops[ops.length - 1];
  if (last === undefined || last.code !== OP_CHECKMULTISIG || last.data !== undefined) return undefined;
  const required = smallInt(ops[0]);
  const count = smallInt(ops[ops.length - 2]);
  const keys = ops.slice(1, -2).map((o) => o?.data);
  if (required === undefined || count === undefined || required > count || keys.length !== count) return undefined;
  if (!keys.every((k): k is Uint8Array => k !== undefined && validPubkeySize(k))) return undefined;
  return { type: 'multisig', keys, required };
}

/** Core's `Solver`, checked in Core's order. */
export function solve(s: Uint8Array): Solved {
  if (s.length === 23 && s[0] === 0xa9 && s[1] === 0x14 && s[22] === 0x87) return { type: 'scripthash' };
  const witness = witnessProgram(s);
  if (witness) {
    const { version, program } = witness;
    if (version === 0 && program.length === 20) return { type: 'witness_v0_keyhash', witness };
    if (version === 0 && program.length === 32) return { type: 'witness_v0_scripthash', witness };
    if (version === 1 && program.length === 32) return { type: 'witness_v1_taproot', witness };
    if (version === 1 && hex(program) === '4e73') return { type: 'anchor', witness };
    if (version !== 0) return { type: 'witness_unknown', witness };
    return { type: 'nonstandard' };
  }
  if (s[0] === OP_RETURN && parseOps(s.subarray(1)).every((o) => o !== undefined && o.code <= 0x60)) return { type: 'nulldata' };
  if (
    (s.length === 35 || s.length === 67) &&
    s[0] === s.length - 2 &&
    s[s.length - 1] === OP_CHECKSIG &&
    validPubkeySize(s.subarray(1, -1))
  ) {
    return { type: 'pubkey', keys: [s.subarray(1, -1)] };
  }
  if (s.length === 25 && s[0] === 0x76 && s[1] === 0xa9 && s[2] === 0x14 && s[23] === 0x88 && s[24] === 0xac) return { type: 'pubkeyhash' };
  return multisig(s) ?? { type: 'nonstandard' };
}

/** Core's `ExtractDestination` + `EncodeDestination` on mainnet: the address, where one is defined (never for pubkey). */
export function coreAddress(s: Uint8Array, solved: Solved): string | undefined {
  if (solved.type === 'pubkeyhash') return addr.toBase58Check(s.subarray(3, 23), 0x00);
  if (solved.type === 'scripthash') return addr.toBase58Check(s.subarray(2, 22), 0x05);
  if (solved.witness && solved.type !== 'nonstandard') return addr.toBech32(solved.witness.program, solved.witness.version, 'bc');
  return undefined;
}

// BIP-380 descriptor checksum.
const INPUT_CHARSET = '0123456789()[],\'/*abcdefgh@:$%{}IJKLMNOPQRSTUVWXYZ&+-.;<=>?!^_|~ijklmnopqrstuvwxyzABCDEFGH`#"\\ ';
const CHECKSUM_CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
const GENERATOR = [0xf5dee51989n, 0xa9fdca3312n, 0x1bab10e32dn, 0x3706b1677an, 0x644d626ffdn];

function polymod(symbols: number[]): bigint {
  let chk = 1n;
  for (const value of symbols) {
    const top = chk >> 35n;
    chk = ((chk & 0x7ffffffffn) << 5n) ^ BigInt(value);
    for (let i = 0; i < 5; i++) if ((top >> BigInt(i)) & 1n) chk ^= GENERATOR[i]!;
  }
  return chk;
}

/** `desc#checksum` (BIP-380): each character's low 5 bits, then its high bits packed three to a symbol. */
export function descriptorChecksum(desc: string): string {
  const symbols: number[] = [];
  let groups: number[] = [];
  for (const c of desc) {
    const v = INPUT_CHARSET.indexOf(c);
    if (v < 0) throw new Error(`character ${JSON.stringify(c)} is not allowed in a descriptor`);
    symbols.push(v & 31);
    groups.push(v >> 5);
    if (groups.length === 3) {
      symbols.push(groups[0]! * 9 + groups[1]! * 3 + groups[2]!);
      groups = [];
    }
  }
  if (groups.length === 1) symbols.push(groups[0]!);
  if (groups.length === 2) symbols.push(groups[0]! * 3 + groups[1]!);
  const checksum = polymod([...symbols, 0, 0, 0, 0, 0, 0, 0, 0]) ^ 1n;
  let out = '';
  for (let i = 0; i < 8; i++) out += CHECKSUM_CHARSET[Number((checksum >> BigInt(5 * (7 - i))) & 31n)];
  return `${desc}#${out}`;
}

/** A key Core's `InferPubkey` accepts: compressed or uncompressed, not hybrid. */
const nonHybrid = (k: Uint8Array): boolean => k[0] === 2 || k[0] === 3 || k[0] === 4;

/** Core's `InferDescriptor` with no signing provider: pk()/multi() for bare keys, addr() where an address exists, else raw(). */
export function coreDescriptor(s: Uint8Array, solved: Solved, address: string | undefined): string {
  const keys = solved.keys;
  if (solved.type === 'pubkey' && nonHybrid(keys![0]!)) return descriptorChecksum(`pk(${hex(keys![0]!)})`);
  if (solved.type === 'multisig' && keys!.every(nonHybrid))
    return descriptorChecksum(`multi(${solved.required},${keys!.map(hex).join(',')})`);
  return descriptorChecksum(address === undefined ? `raw(${hex(s)})` : `addr(${address})`);
}

/** The whole `scriptPubKey` object for an output script. */
export function scriptPubKeyJson(s: Uint8Array): ScriptPubKeyJson {
  const solved = solve(s);
  const address = coreAddress(s, solved);
  const json: ScriptPubKeyJson = { asm: coreAsm(s), desc: coreDescriptor(s, solved, address), hex: hex(s), type: solved.type };
  if (address === undefined) return json;
  return { asm: json.asm, desc: json.desc, hex: json.hex, address, type: json.type };
}
