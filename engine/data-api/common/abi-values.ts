/** A value viem decoded by an ABI, as the Data API answers it in JSON: integers as decimal strings (viem decodes small ones as numbers), addresses lower case. */
export function jsonValue(v: unknown): unknown {
  if (typeof v === 'bigint' || typeof v === 'number') return v.toString();
  if (typeof v === 'string') return /^0x[0-9a-fA-F]{40}$/.test(v) ? v.toLowerCase() : v;
  if (Array.isArray(v)) return v.map(jsonValue);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, jsonValue(x)]));
  return v;
}
