import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';

// Ids are made per delivery: draw CSPRNG bytes 4 KiB at a time rather than one call each.
let pool = new Uint8Array(0);
let used = 0;
function random16(): Uint8Array {
  if (used + 16 > pool.length) {
    pool = randomBytes(4096);
    used = 0;
  }
  used += 16;
  return pool.slice(used - 16, used);
}

/** A UUID version 4 from a CSPRNG (stream ids: the interface's pattern). */
export function uuidV4(): string {
  const b = randomBytes(16);
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = bytesToHex(b);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** A UUID version 7: time-ordered, so history and logs page newest first by key. */
export function uuidV7(nowMs: number): string {
  const b = random16();
  const t = Math.floor(nowMs);
  for (let i = 0; i < 6; i++) b[i] = Math.floor(t / 2 ** (8 * (5 - i))) & 0xff;
  b[6] = (b[6]! & 0x0f) | 0x70;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = bytesToHex(b);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** The leading time part of every UUID v7 made at `ms` (`tttttttt-tttt`): any id made earlier sorts before it. */
export function uuidV7Time(ms: number): string {
  const h = Math.floor(ms).toString(16).padStart(12, '0');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}`;
}

/** The service time (ms) a UUID v7 was made at. */
export const uuidV7Ms = (id: string): number => parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
