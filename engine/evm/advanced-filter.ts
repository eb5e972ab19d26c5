import type { AbiParameter } from 'viem';

/**
 * The `filter` of a stream's `advancedOptions` entry, as the hosted service documents it
 * (docs.moralis.com, Streams → Filters / Advanced Options): a JSON expression over the
 * ABI-decoded parameters of the entry's event, named as in the ABI (`from`, `to`, `value`).
 *
 * - `and` / `or` take at least 2 sub-filters.
 * - `eq` / `ne` compare any scalar; `lt` / `gt` / `lte` / `gte` only numbers.
 * - `in` / `nin` take an array of values.
 * - Numbers may be written as strings or JSON numbers (`"1000"`, `1000000000`) and compare
 *   as big integers, so uint256 values past 2^53 are exact when written as strings.
 * - Addresses compare case-insensitively; booleans accept `true` or `"true"`.
 * - `{}` (the service's default) matches every event.
 *
 * Beyond the docs: a tuple's field is named `param.field`.
 */
export type Scalar = string | number | boolean;
export type FilterExpr =
  | { and: FilterExpr[] }
  | { or: FilterExpr[] }
  | { eq: [string, Scalar] }
  | { ne: [string, Scalar] }
  | { lt: [string, string | number] }
  | { gt: [string, string | number] }
  | { lte: [string, string | number] }
  | { gte: [string, string | number] }
  | { in: [string, Scalar[]] }
  | { nin: [string, Scalar[]] }
  | Record<string, never>;

/** The stream-level variables a filter may name besides the event's parameters. */
export interface FilterContext {
  /** The address of the contract that emitted the log (any case). */
  contractAddress?: string;
  /** The chain id, `0x1` or `1`. */
  chainId?: string | number | bigint;
  possibleSpam?: boolean;
}

export type CompiledFilter = (args: Record<string, unknown>, ctx?: FilterContext) => boolean;

const LOGICAL = ['and', 'or'] as const;
const ORDERED = ['lt', 'gt', 'lte', 'gte'] as const;
const OPERATORS = ['and', 'or', 'eq', 'ne', 'lt', 'gt', 'lte', 'gte', 'in', 'nin'] as const;
type Operator = (typeof OPERATORS)[number];

/** How a value is compared: numbers as bigint, addresses and bytes as lowercase hex, the rest as is. */
type Kind =
  | { kind: 'int'; min: bigint; max: bigint; type: string }
  | { kind: 'address'; type: string }
  | { kind: 'bool'; type: string }
  | { kind: 'string'; type: string }
  | { kind: 'bytes'; size: number | null; type: string };

type Key = bigint | string | boolean;

interface Field {
  kind: Kind;
  /** Reads the raw value from decoded args (or the context, for the special variables). */
  read: (args: Record<string, unknown>, ctx: FilterContext | undefined) => unknown;
}

/** The documented special variables; the contract address is compared lowercased like any address. */
const SPECIAL: Record<string, Field> = {
  moralis_streams_contract_address: { kind: { kind: 'address', type: 'address' }, read: (_, c) => c?.contractAddress },
  moralis_streams_chain_id: { kind: { kind: 'int', min: 0n, max: 2n ** 256n - 1n, type: 'chain id' }, read: (_, c) => c?.chainId },
  moralis_streams_possibleSpam: { kind: { kind: 'bool', type: 'bool' }, read: (_, c) => c?.possibleSpam },
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const show = (v: unknown): string =>
  typeof v === 'string' ? JSON.stringify(v) : typeof v === 'bigint' ? `${v}` : (JSON.stringify(v) ?? String(v));

/** The comparison kind of a scalar ABI type, or why it has none. */
function kindOf(p: AbiParameter): Kind | string {
  const t = p.type;
  const int = /^(u?)int(\d*)$/.exec(t);
  if (int) {
    const bits = BigInt(int[2] || '256');
    return int[1]
      ? { kind: 'int', min: 0n, max: 2n ** bits - 1n, type: t }
      : { kind: 'int', min: -(2n ** (bits - 1n)), max: 2n ** (bits - 1n) - 1n, type: t };
  }
  if (t === 'address') return { kind: 'address', type: t };
  if (t === 'bool') return { kind: 'bool', type: t };
  if (t === 'string') return { kind: 'string', type: t };
  const bytes = /^bytes(\d*)$/.exec(t);
  if (bytes) return { kind: 'bytes', size: bytes[1] ? Number(bytes[1]) : null, type: t };
  return `${t} values can't be compared`;
}

/** Resolves `name` (or `name.field` through tuples) against the event inputs. */
function resolve(name: string, inputs: readonly AbiParameter[]): Field | string {
  const special = SPECIAL[name];
  if (special) return special;
  const parts = name.split('.');
  let params: readonly AbiParameter[] = inputs;
  let param: AbiParameter | undefined;
  for (let i = 0; i < parts.length; i++) {
    param = params.find((p) => p.name === parts[i] && p.name !== '');
    if (!param) {
      const known = params.map((p) => p.name).filter((n): n is string => !!n);
      const where = i === 0 ? 'the event' : `${parts.slice(0, i).join('.')}`;
      return `${show(name)} is not a parameter of ${where} (${known.length ? known.join(', ') : 'it has no named parameters'})`;
    }
    // Indexed dynamic values reach us only as their keccak hash, so nothing can be compared.
    if (i === 0 && (param as { indexed?: boolean }).indexed && (/^(string|bytes|tuple)$/.test(param.type) || param.type.endsWith(']'))) {
      return `${show(name)} is an indexed ${param.type}: the log carries only its hash`;
    }
    if (i < parts.length - 1) {
      if (param.type !== 'tuple' || !('components' in param))
        return `${show(parts.slice(0, i + 1).join('.'))} is ${param.type}, not a tuple`;
      params = param.components;
    }
  }
  const kind = kindOf(param!);
  if (typeof kind === 'string') return `${show(name)}: ${kind}`;
  return { kind, read: (args) => parts.reduce<unknown>((v, k) => (isObject(v) ? v[k] : undefined), args) };
}

/** Parses a filter value for `kind`; a string is the reason it doesn't fit. */
function parseValue(v: unknown, k: Kind): { key: Key } | string {
  switch (k.kind) {
    case 'int': {
      let n: bigint;
      if (typeof v === 'number' && Number.isInteger(v)) n = BigInt(v);
      else if (typeof v === 'string' && /^(-?\d+|0x[0-9a-fA-F]+)$/.test(v)) n = BigInt(v);
      else return `${show(v)} is not an integer (${k.type} needs a number or a string of digits)`;
      if (n < k.min || n > k.max) return `${show(v)} is out of range for ${k.type}`;
      return { key: n };
    }
    case 'address':
      return typeof v === 'string' && /^0x[0-9a-fA-F]{40}$/.test(v)
        ? { key: v.toLowerCase() }
        : `${show(v)} is not an address (0x and 40 hex digits)`;
    case 'bool':
      if (typeof v === 'boolean') return { key: v };
      if (v === 'true' || v === 'false') return { key: v === 'true' };
      return `${show(v)} is not a bool (true or false)`;
    case 'string':
      return typeof v === 'string' ? { key: v } : `${show(v)} is not a string`;
    case 'bytes': {
      const ok = typeof v === 'string' && /^0x([0-9a-fA-F]{2})*$/.test(v) && (k.size === null || v.length === 2 + 2 * k.size);
      return ok
        ? { key: v.toLowerCase() }
        : `${show(v)} is not ${k.type} (0x and ${k.size === null ? 'an even number of' : 2 * k.size} hex digits)`;
    }
  }
}

/** Normalizes a decoded value as parseValue does a filter value; undefined when it can't be compared. */
function normalize(v: unknown, k: Kind): Key | undefined {
  switch (k.kind) {
    case 'int':
      if (typeof v === 'bigint') return v;
      if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
      if (typeof v === 'string' && /^(-?\d+|0x[0-9a-fA-F]+)$/.test(v)) return BigInt(v);
      return undefined;
    case 'address':
    case 'bytes':
      return typeof v === 'string' ? v.toLowerCase() : undefined;
    case 'bool':
      return typeof v === 'boolean' ? v : undefined;
    case 'string':
      return typeof v === 'string' ? v : undefined;
  }
}

/**
 * Checks a filter against the event's ABI inputs: every operator known and used with its
 * documented arity, every name a parameter (or special variable), every value fitting the
 * parameter's type. Returns `"<path>: <reason>"` for the first problem (path down to the
 * offending element, e.g. `advancedOptions.0.filter.and.1.gt.1`), or null when valid.
 */
export function checkFilter(expr: unknown, inputs: readonly AbiParameter[], path: string): string | null {
  if (isObject(expr) && Object.keys(expr).length === 0) return null;
  return checkNode(expr, inputs, path);
}

function checkNode(expr: unknown, inputs: readonly AbiParameter[], path: string): string | null {
  if (!isObject(expr)) return `${path}: a filter is an object with one operator (${OPERATORS.join(', ')})`;
  const keys = Object.keys(expr);
  if (keys.length !== 1) return `${path}: a filter has exactly one operator, found ${keys.length ? keys.join(', ') : 'none'}`;
  const op = keys[0]!;
  const at = `${path}.${op}`;
  if (!(OPERATORS as readonly string[]).includes(op)) return `${at}: unknown operator (one of ${OPERATORS.join(', ')})`;
  const body = expr[op];
  if ((LOGICAL as readonly string[]).includes(op)) {
    if (!Array.isArray(body) || body.length < 2) return `${at}: needs an array of at least 2 filters`;
    for (let i = 0; i < body.length; i++) {
      const err = checkNode(body[i], inputs, `${at}.${i}`);
      if (err) return err;
    }
    return null;
  }
  if (!Array.isArray(body) || body.length !== 2) return `${at}: needs [parameter, value]`;
  const [name, value] = body as [unknown, unknown];
  if (typeof name !== 'string') return `${at}.0: a parameter name`;
  const field = resolve(name, inputs);
  if (typeof field === 'string') return `${at}.0: ${field}`;
  if ((ORDERED as readonly string[]).includes(op) && field.kind.kind !== 'int')
    return `${at}.0: ${op} compares numbers, ${show(name)} is ${field.kind.type}`;
  if (op === 'in' || op === 'nin') {
    if (!Array.isArray(value)) return `${at}.1: needs an array of values`;
    for (let i = 0; i < value.length; i++) {
      const v = parseValue(value[i], field.kind);
      if (typeof v === 'string') return `${at}.1.${i}: ${v}`;
    }
    return null;
  }
  const v = parseValue(value, field.kind);
  return typeof v === 'string' ? `${at}.1: ${v}` : null;
}

/**
 * Compiles a filter into a predicate over viem's `decodeEventLog(...).args` (plus the stream
 * variables in `ctx`). Values are parsed once here so each evaluation only normalizes the
 * decoded value and compares. Throws TypeError with checkFilter's message on an invalid filter.
 */
export function compileFilter(expr: FilterExpr, inputs: readonly AbiParameter[]): CompiledFilter {
  const err = checkFilter(expr, inputs, 'filter');
  if (err) throw new TypeError(err);
  if (Object.keys(expr).length === 0) return () => true;
  return compileNode(expr as Record<string, unknown>, inputs);
}

function compileNode(expr: Record<string, unknown>, inputs: readonly AbiParameter[]): CompiledFilter {
  const op = Object.keys(expr)[0] as Operator;
  const body = expr[op] as unknown[];
  if (op === 'and' || op === 'or') {
    const parts = body.map((e) => compileNode(e as Record<string, unknown>, inputs));
    return op === 'and' ? (a, c) => parts.every((p) => p(a, c)) : (a, c) => parts.some((p) => p(a, c));
  }
  const field = resolve(body[0] as string, inputs) as Field;
  const { kind, read } = field;
  const parse = (v: unknown): Key => (parseValue(v, kind) as { key: Key }).key;
  if (op === 'in' || op === 'nin') {
    // Set membership uses SameValueZero, which compares bigints by value.
    const set = new Set((body[1] as unknown[]).map(parse));
    const want = op === 'in';
    return (a, c) => {
      const x = normalize(read(a, c), kind);
      return (x !== undefined && set.has(x)) === want;
    };
  }
  const b = parse(body[1]);
  switch (op) {
    // A value missing from the args equals nothing, so ne (and nin) hold for it.
    case 'eq':
      return (a, c) => normalize(read(a, c), kind) === b;
    case 'ne':
      return (a, c) => normalize(read(a, c), kind) !== b;
    default: {
      const cmp = ORDER[op];
      return (a, c) => {
        const x = normalize(read(a, c), kind);
        return typeof x === 'bigint' && cmp(x, b as bigint);
      };
    }
  }
}

const ORDER: Record<(typeof ORDERED)[number], (x: bigint, y: bigint) => boolean> = {
  lt: (x, y) => x < y,
  gt: (x, y) => x > y,
  lte: (x, y) => x <= y,
  gte: (x, y) => x >= y,
};
