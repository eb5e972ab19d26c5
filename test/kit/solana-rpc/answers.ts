/**
 * Rendered getBlock answers, kept for repeated calls and written into reused buffers: a fresh 4 MB buffer per
 * slot costs several times the copy itself (page faults), which made the stand-in slower than a follower. A
 * buffer goes back to the free list once its answer is dropped from the cache and no response still writes it.
 */
import { type SlotBlock } from './chain.js';
import { blockBytes, type RenderOptions } from './render.js';

interface Answer {
  block: SlotBlock;
  base: Buffer;
  bytes: Buffer;
  /** Responses writing `bytes` now. */
  users: number;
  dropped: boolean;
}

const CHUNK = 1 << 16;
const FREE_BUFFERS = 8;

export class AnswerCache {
  private readonly answers = new Map<string, Answer>();
  private readonly byBytes = new WeakMap<Buffer, Answer>();
  private readonly free: Buffer[] = [];

  constructor(public size: number) {}

  /** The answer for `block`, rendered unless kept (a fork's new block at the same slot is rendered anew). */
  get(block: SlotBlock, opts: RenderOptions): Buffer {
    const key = `${block.slot}/${opts.rewards}/${opts.showVersion}`;
    const hit = this.answers.get(key);
    if (hit && hit.block === block) return hit.bytes;
    if (hit) this.drop(key, hit);
    let base: Buffer | undefined;
    const bytes = blockBytes(block, opts, (n) => (base = this.take(n)).subarray(0, n));
    const answer: Answer = { block, base: base!, bytes, users: 0, dropped: false };
    this.answers.set(key, answer);
    this.byBytes.set(bytes, answer);
    while (this.answers.size > this.size) {
      const [oldest, a] = this.answers.entries().next().value!;
      this.drop(oldest, a);
    }
    return bytes;
  }

  /** Marks `bytes` (if it is a kept answer) as being written; answers the function to call once written. */
  lease(bytes: Buffer): () => void {
    const a = this.byBytes.get(bytes);
    if (!a) return () => {};
    a.users++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      a.users--;
      if (a.dropped && a.users === 0) this.give(a.base);
    };
  }

  private drop(key: string, a: Answer): void {
    this.answers.delete(key);
    a.dropped = true;
    if (a.users === 0) this.give(a.base);
  }

  /** A free buffer of at least `n` bytes, or a new one with 2% to spare (a chain's block sizes differ by a few bytes). */
  private take(n: number): Buffer {
    const at = this.free.findIndex((b) => b.length >= n);
    if (at >= 0) return this.free.splice(at, 1)[0]!;
    return Buffer.allocUnsafeSlow(Math.ceil((n * 1.02) / CHUNK) * CHUNK);
  }

  private give(base: Buffer): void {
    if (this.free.length < FREE_BUFFERS) this.free.push(base);
  }
}
