/** Milliseconds per unit of a duration as the CLI takes it (`90s`, `30m`, `24h`, `7d`). */
const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** A duration written as a whole number and a unit (s, m, h, d), or `0`, in ms; undefined when it is not one. */
export function parseDuration(text: string): number | undefined {
  if (text === '0') return 0;
  const m = /^(\d{1,9})([smhd])$/.exec(text);
  return m === null ? undefined : Number(m[1]) * UNIT_MS[m[2] as keyof typeof UNIT_MS];
}
