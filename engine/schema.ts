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
  // An array over its size (the batches of size-limits.ts), also as the list branch of "one or a list": the limit too, for a client to split by.
  const over = tooLong(issue);
  if (over !== undefined) throw new ApiError(400, `${field}: ${over.message}`, { field, limit: Number(over.maximum) });
  throw new ApiError(400, `${field}: ${issue.message}`, { field });
}

type Issue = z.core.$ZodIssue;

function tooLong(issue: Issue): (Issue & { maximum: number | bigint }) | undefined {
  if (issue.code === 'too_big' && issue.origin === 'array') return issue;
  if (issue.code !== 'invalid_union') return undefined;
  for (const branch of issue.errors) {
    const found = branch.find((i) => i.path.length === 0 && i.code === 'too_big' && i.origin === 'array');
    if (found !== undefined) return found as Issue & { maximum: number | bigint };
  }
  return undefined;
}
