import { decode } from '@msgpack/msgpack';
import { headers, type MsgHdrs } from '@nats-io/transport-node';

/**
 * What every message chainpost publishes carries: its format, in a header (read before the body is decoded) and in
 * the body's `v`. A node meeting a newer major format than it reads stops reading that log (rolling upgrades).
 */
export const FORMAT_HEADER = 'Chainpost-Format';

/** The headers of a message in `format`. */
export function formatHeaders(format: number): MsgHdrs {
  const h = headers();
  h.set(FORMAT_HEADER, String(format));
  return h;
}

/** A message's body (a msgpack map), or its format when newer than `format`, or why it is none of ours. */
export function readFormatted(
  m: { data: Uint8Array; headers?: MsgHdrs | undefined },
  format: number,
): { body: Record<string, unknown> } | { newer: number } | { malformed: string } {
  const header = m.headers?.get(FORMAT_HEADER);
  // The header is read first: a newer format's body may not decode as this version's.
  if (header !== undefined && header !== '') {
    const major = majorOf(header);
    if (major === undefined) return { malformed: `format header ${JSON.stringify(header)}` };
    if (major > format) return { newer: major };
  }
  let body: unknown;
  try {
    body = decode(m.data);
  } catch (err) {
    return { malformed: `not msgpack (${err instanceof Error ? err.message : String(err)})` };
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { malformed: 'not a map' };
  const major = majorOf((body as { v?: unknown }).v);
  if (major === undefined) return { malformed: 'no format' };
  if (major > format) return { newer: major };
  return { body: body as Record<string, unknown> };
}

/** The major version of a format (`1`, `1.2`): its whole part. */
function majorOf(format: unknown): number | undefined {
  const n = typeof format === 'number' ? format : typeof format === 'string' ? Number(format) : Number.NaN;
  return Number.isFinite(n) && n >= 1 ? Math.floor(n) : undefined;
}
