import { z } from 'zod';
import { MAX_LIMIT } from '../../page.js';

/**
 * Query and path pieces the Data API's endpoint schemas share (one schema per
 * endpoint is made of these): the names and defaults of the hosted service's
 * OpenAPI document. Values arrive as strings; an empty one counts as absent.
 */

/** An EVM address (0x and 40 hex digits, any case), answered lower case. */
export const evmAddress = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, 'not an address (0x and 40 hex digits)')
  .transform((a) => a.toLowerCase());

/** A DEX pool: a pair's address, or a Uniswap V4 pool's PoolId (0x and 64 hex digits), answered lower case. */
export const poolAddress = z
  .string()
  .regex(/^0x([0-9a-fA-F]{40}|[0-9a-fA-F]{64})$/, 'not a pair address (0x and 40 hex digits) or V4 PoolId (0x and 64)')
  .transform((a) => a.toLowerCase());

/** A 32-byte hash (transaction, block). */
export const hash32 = z
  .string()
  .regex(/^0x[0-9a-fA-F]{64}$/, 'not a hash (0x and 64 hex digits)')
  .transform((h) => h.toLowerCase());

/** `limit`: 1 … 100; 0 and absent mean the endpoint's default (`fallback`). */
export const limit = (fallback = MAX_LIMIT) =>
  z
    .string()
    .regex(/^\d+$/, `a whole number from 0 to ${MAX_LIMIT}`)
    .transform(Number)
    .refine((n) => n <= MAX_LIMIT, `at most ${MAX_LIMIT}`)
    .optional()
    .transform((n) => (n === undefined || n === 0 ? fallback : n));

export const cursor = z
  .string()
  .optional()
  .transform((c) => c ?? null);

export const order = z.enum(['ASC', 'DESC'], 'ASC or DESC').default('DESC');

export const bool = (fallback: boolean) =>
  z
    .enum(['true', 'false'], 'true or false')
    .optional()
    .transform((v) => (v === undefined ? fallback : v === 'true'));

/** A block number (decimal, or hex with 0x). */
export const blockNumber = z
  .string()
  .regex(/^(\d{1,15}|0x[0-9a-fA-F]{1,13})$/, 'not a block number')
  .transform(Number);

/**
 * A date: seconds since the epoch, or anything Date.parse reads (ISO 8601); answered as Unix seconds. The
 * hosted service takes both.
 */
export const date = z.string().transform((v, ctx) => {
  const ms = /^\d{1,12}$/.test(v) ? Number(v) * 1000 : Date.parse(v);
  if (!Number.isFinite(ms)) {
    ctx.addIssue({ code: 'custom', message: 'not a date (Unix seconds or ISO 8601)' });
    return z.NEVER;
  }
  return Math.floor(ms / 1000);
});

/** from_block, to_block, from_date, to_date (the range's blocks: the dates are turned into blocks by the endpoint). */
export const blockRange = {
  from_block: blockNumber.optional(),
  to_block: blockNumber.optional(),
  from_date: date.optional(),
  to_date: date.optional(),
};
