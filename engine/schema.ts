import type { z } from 'zod';
import { ApiError } from './errors.js';

/**
 * Validates a request body (or query) against its endpoint's schema; the 400
 * names the first bad field so a client can point at it.
 */
export function validate<S extends z.ZodType>(schema: S, value: unknown, where = 'body'): z.infer<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const keys = issue.code === 'unrecognized_keys' ? (issue as { keys: string[] }).keys : [];
  const path = [...issue.path, ...keys.slice(0, 1)].map(String).join('.');
  const field = path === '' ? where : path;
  throw new ApiError(400, `${field}: ${issue.message}`, { field });
}
