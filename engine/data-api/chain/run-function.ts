import { decodeFunctionResult, encodeFunctionData } from 'viem/utils';
import type { AbiFunction, AbiParameter, Hex } from 'viem';
import { z } from 'zod';
import { ApiError, badRequest } from '../../errors.js';
import { jsonValue } from '../common/abi-values.js';
import type { DataDeps } from '../common/deps.js';
import { fromNode } from '../common/node-reads.js';
import { readBlock } from '../common/read-at.js';
import { blockNumber, evmAddress } from '../common/params.js';

/**
 * POST /:address/function (runContractFunction): the ABI's function called by
 * eth_call at `to_block` (the stored head when none is given), its params
 * given by input name (by position for an unnamed one), the result decoded by the ABI: one output as its value,
 * several as an array; integers as decimal strings.
 */

export const runFunctionQuery = z.object({
  address: evmAddress,
  function_name: z.string().min(1, 'required'),
  to_block: blockNumber.optional(),
});

/** The answer: `jsonValue` of what the ABI's outputs decode. */
export const runFunctionAnswer = z.union([z.string(), z.boolean(), z.array(z.unknown()), z.record(z.string(), z.unknown())]).meta({
  description: "The function's result decoded by its outputs: one output as its value, several as an array; integers as decimal strings",
});

/** An ABI parameter: a type and an optional name, a tuple with its components (checked here, so no item makes a 500). */
const abiParam: z.ZodType<{ type: string; name?: string | undefined; components?: unknown[] | undefined }> = z.lazy(() =>
  z
    .object({ type: z.string().min(1, 'a type'), name: z.string().optional(), components: z.array(abiParam).optional() })
    .passthrough()
    .refine((p) => !p.type.startsWith('tuple') || p.components !== undefined, 'a tuple needs its components'),
);
const abiItem = z
  .object({ type: z.string(), name: z.string().optional(), inputs: z.array(abiParam).optional(), outputs: z.array(abiParam).optional() })
  .passthrough()
  // A function's inputs are read below: an item without them has none.
  .transform((i) => (i.type === 'function' ? { ...i, inputs: i.inputs ?? [], outputs: i.outputs ?? [] } : i));
export const runFunctionBody = z.object({
  abi: z.array(abiItem, 'an ABI: an array of items'),
  params: z.record(z.string(), z.unknown()).optional(),
});

/** A JSON param as the ABI type wants it (integers from strings or numbers, tuples from objects), or a 400 naming it. */
function coerce(p: AbiParameter, v: unknown, field: string): unknown {
  const array = /^(.*)\[(\d*)\]$/.exec(p.type);
  if (array !== null) {
    const list = typeof v === 'string' ? parseJson(v, field) : v;
    if (!Array.isArray(list)) throw badRequest(field, `expected an array for ${p.type}`);
    return list.map((x, i) => coerce({ ...p, type: array[1]! } as AbiParameter, x, `${field}.${i}`));
  }
  if (p.type === 'tuple') {
    const parts = (p as { components: readonly AbiParameter[] }).components;
    const obj = typeof v === 'string' ? parseJson(v, field) : v;
    if (Array.isArray(obj)) return parts.map((c, i) => coerce(c, obj[i], `${field}.${i}`));
    if (obj === null || typeof obj !== 'object') throw badRequest(field, 'expected an object or array for a tuple');
    return Object.fromEntries(parts.map((c) => [c.name, coerce(c, (obj as Record<string, unknown>)[c.name ?? ''], `${field}.${c.name}`)]));
  }
  if (/^u?int\d*$/.test(p.type)) {
    if ((typeof v !== 'string' && typeof v !== 'number') || !/^-?(\d+|0x[0-9a-fA-F]+)$/.test(String(v)))
      throw badRequest(field, `expected an integer for ${p.type}`);
    return String(v).startsWith('-') ? -BigInt(String(v).slice(1)) : BigInt(String(v));
  }
  if (p.type === 'bool') {
    if (v === true || v === 'true') return true;
    if (v === false || v === 'false') return false;
    throw badRequest(field, 'expected true or false');
  }
  if (typeof v !== 'string') throw badRequest(field, `expected a string for ${p.type}`);
  return v;
}

function parseJson(v: string, field: string): unknown {
  try {
    return JSON.parse(v);
  } catch {
    throw badRequest(field, 'expected JSON');
  }
}

export async function runFunction(
  deps: Pick<DataDeps, 'kv' | 'reads'>,
  chain: string,
  q: z.output<typeof runFunctionQuery>,
  body: z.output<typeof runFunctionBody>,
) {
  const params = body.params ?? {};
  const candidates = body.abi.filter((i) => i.type === 'function' && i.name === q.function_name) as unknown as AbiFunction[];
  if (candidates.length === 0) throw badRequest('function_name', `the ABI has no function ${q.function_name}`);
  // An input without a name (a public mapping's getter) is given by its position.
  const nameOf = (p: AbiParameter, i: number): string => (p.name === undefined || p.name === '' ? String(i) : p.name);
  // Overloads: the one whose inputs are the params given.
  const fn =
    candidates.find((f) => f.inputs.length === Object.keys(params).length && f.inputs.every((p, i) => nameOf(p, i) in params)) ??
    candidates[0]!;
  const args = fn.inputs.map((p, i) => {
    const name = nameOf(p, i);
    if (!(name in params)) throw badRequest(`params.${name}`, `required by ${q.function_name}`);
    return coerce(p, params[name], `params.${name}`);
  });
  let data: Hex;
  try {
    data = encodeFunctionData({ abi: [fn], functionName: fn.name, args });
  } catch (err) {
    throw badRequest('params', (err as Error).message.split('\n')[0]!);
  }
  const out = await fromNode(() => deps.reads.call(chain, q.address, data, readBlock(deps.kv, chain, q.to_block)));
  if (out === null)
    throw new ApiError(400, `function_name: the call of ${q.function_name} on ${q.address} reverted`, { field: 'function_name' });
  let decoded: unknown;
  try {
    decoded = decodeFunctionResult({ abi: [fn], functionName: fn.name, data: out });
  } catch (err) {
    throw new ApiError(
      400,
      `abi: the answer of ${q.function_name} does not decode with its outputs (${(err as Error).message.split('\n')[0]})`,
      { field: 'abi' },
    );
  }
  return jsonValue(decoded);
}
