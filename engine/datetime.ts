/** RFC 3339 date-time with a real calendar date and clock time (no 02-31, no 24:00, no leap second: Date.parse cannot read :60). */
export function isDateTime(v: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/.exec(v);
  if (m === null) return false;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const days = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  return mo >= 1 && mo <= 12 && d >= 1 && d <= days && h <= 23 && mi <= 59 && s <= 59;
}

/** Unix seconds (a block's timestamp) as the Data API writes them: ISO 8601 with milliseconds, UTC. */
export const unixIso = (seconds: number): string => new Date(seconds * 1000).toISOString();
