/**
 * The gas a forwarded call may burn on the chain's node. A node runs eth_call and its kin with whatever gas
 * the caller names, and anvil mines nothing meanwhile: one call with a huge gas and a state override making
 * a loop froze a devnet for minutes. So every call that executes code is given at most the cap (the chain's
 * block gas limit, or CHAINPOST_RPC_GAS_CAP when lower): a gas above it, or none (the node's default may be
 * higher), becomes the cap. An eth_simulateV1 gets the cap for all its calls together, as geth's RPC gas cap
 * works there: its calls may be many, each with a cap of its own would multiply it.
 */

/** Methods whose first parameter is one transaction call the node executes. */
const ONE_CALL = new Set(['eth_call', 'eth_estimateGas', 'eth_createAccessList']);

/** Whether the method executes code on the node (its params go through capGas). */
export const executesCalls = (method: string): boolean => ONE_CALL.has(method) || method === 'eth_simulateV1';

/**
 * The params with every call's gas at most `cap`. A gas at or under the cap is left as sent; above it, missing
 * or not a number the node would read, it is the cap. Params of another shape are left for the node to refuse.
 */
export function capGas(method: string, params: readonly unknown[], cap: bigint): unknown[] {
  const [first, ...rest] = params;
  if (!isObject(first)) return [...params];
  if (ONE_CALL.has(method)) return [withGas(first, cap), ...rest];
  if (method !== 'eth_simulateV1' || !Array.isArray(first['blockStateCalls'])) return [...params];
  return [{ ...first, blockStateCalls: simulated(first['blockStateCalls'], cap) }, ...rest];
}

/**
 * eth_simulateV1's blocks with the cap shared by all their calls: a call's own gas is kept while the calls
 * before it leave that much, else it gets what they leave; the calls without gas share what is left after
 * those with gas equally.
 */
function simulated(blocks: readonly unknown[], cap: bigint): unknown[] {
  const calls = blocks.flatMap((b) => (isObject(b) && Array.isArray(b['calls']) ? b['calls'].filter(isObject) : []));
  let left = cap;
  const given = new Map<Record<string, unknown>, bigint>();
  for (const c of calls) {
    const gas = gasOf(c['gas']);
    if (gas === undefined) continue;
    const g = gas < left ? gas : left;
    given.set(c, g);
    left -= g;
  }
  const unnamed = calls.length - given.size;
  const share = unnamed === 0 ? 0n : left / BigInt(unnamed);
  return blocks.map((b) => {
    if (!isObject(b) || !Array.isArray(b['calls'])) return b;
    return { ...b, calls: b['calls'].map((c: unknown) => (isObject(c) ? withGas(c, given.get(c) ?? share) : c)) };
  });
}

/** The call with a gas of at most `cap`: its own when that is within it (kept as sent), else `cap`. */
function withGas(call: Record<string, unknown>, cap: bigint): Record<string, unknown> {
  const gas = gasOf(call['gas']);
  return gas !== undefined && gas <= cap ? call : { ...call, gas: `0x${cap.toString(16)}` };
}

/** A gas as nodes read it: a hex quantity, a decimal string or a JSON number (anvil takes all three); else undefined. */
export function gasOf(v: unknown): bigint | undefined {
  if (typeof v === 'number') return Number.isSafeInteger(v) && v >= 0 ? BigInt(v) : undefined;
  if (typeof v !== 'string') return undefined;
  if (/^0[xX][0-9a-fA-F]{1,64}$/.test(v) || /^\d{1,78}$/.test(v)) return BigInt(v.replace(/^0X/, '0x'));
  return undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
