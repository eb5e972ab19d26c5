/**
 * A hierarchical timer wheel on service time (ms): four levels of 256 slots
 * (1 ms, 256 ms, 65.5 s and 4.66 h per slot, about 49.7 days in all), and an
 * overflow list beyond. Timers keep their exact due time, so a timer fires at
 * its own millisecond however far the clock jumps. Timers live in typed arrays
 * (struct of arrays, linked per slot), a few dozen bytes each, and bitmaps let
 * a long jump skip empty slots instead of walking them.
 */
const BITS = 8;
const SLOTS = 1 << BITS;
const LEVELS = 4;
const SPAN = [1, 2 ** 8, 2 ** 16, 2 ** 24, 2 ** 32] as const; // ms per slot at each level, and the wheel's reach
const FREE = -1;
const READY = -2;
const OVERFLOW = -3;

export class TimerWheel {
  private at = new Float64Array(1024);
  private data = new Float64Array(1024);
  private next = new Int32Array(1024);
  private prev = new Int32Array(1024);
  /** level * SLOTS + slot, or READY, OVERFLOW, FREE. */
  private where = new Int32Array(1024).fill(FREE);
  private readonly heads = new Int32Array(LEVELS * SLOTS + 2).fill(-1);
  private readonly bitmap = new Uint32Array((LEVELS * SLOTS) / 32);
  private freeHead = -1;
  private used = 0;
  private count = 0;
  private current: number;

  constructor(now: number) {
    this.current = Math.floor(now);
  }

  get size(): number {
    return this.count;
  }

  /** Bytes held by the wheel's own arrays. */
  get bytes(): number {
    return (
      this.at.byteLength +
      this.data.byteLength +
      this.next.byteLength +
      this.prev.byteLength +
      this.where.byteLength +
      this.heads.byteLength +
      this.bitmap.byteLength
    );
  }

  /** Schedules `data` to fire at `at` (ms); returns a handle for cancel. */
  schedule(at: number, data: number): number {
    const h = this.alloc();
    this.at[h] = Math.floor(at);
    this.data[h] = data;
    this.place(h);
    this.count++;
    return h;
  }

  /** Cancels a pending timer (a handle that fired or was cancelled must not be cancelled again). */
  cancel(h: number): void {
    if (this.where[h] === FREE) return;
    this.unlink(h);
    this.release(h);
    this.count--;
  }

  /** Moves the wheel's time to `to`, firing every timer due by then in due order. */
  advance(to: number, fire: (data: number, at: number) => void): void {
    to = Math.floor(to);
    this.fireList(READY_LIST, fire);
    for (;;) {
      const t = this.nextEvent();
      if (t === undefined || t > to) break;
      this.current = t;
      // Slots whose time starts now move down, highest level first.
      if (t % SPAN[LEVELS]! === 0) this.cascadeOverflow();
      for (let level = LEVELS - 1; level >= 1; level--) {
        if (t % SPAN[level]! === 0) this.cascade(level, slotOf(t, level));
      }
      this.fireList(slotOf(t, 0), fire);
      this.fireList(READY_LIST, fire);
    }
    if (to > this.current) this.current = to;
  }

  /** The exact due time of the earliest pending timer. */
  nextAt(): number | undefined {
    if (this.heads[READY_LIST] !== -1) return this.current;
    const t = this.nextEvent();
    if (t === undefined) return undefined;
    // The earliest non-empty slot holds the earliest timer; in level 0 its time is exact.
    let min = Infinity;
    for (let level = 0; level < LEVELS; level++) {
      const s = this.findSlot(level);
      if (s === undefined) continue;
      for (let h = this.heads[level * SLOTS + s]!; h !== -1; h = this.next[h]!) min = Math.min(min, this.at[h]!);
      if (min !== Infinity) break;
    }
    if (min === Infinity) for (let h = this.heads[OVERFLOW_LIST]!; h !== -1; h = this.next[h]!) min = Math.min(min, this.at[h]!);
    return min;
  }

  // ---- internals ----------------------------------------------------------

  /** The next instant at which a slot fires or cascades. */
  private nextEvent(): number | undefined {
    let best: number | undefined;
    for (let level = 0; level < LEVELS; level++) {
      const s = this.findSlot(level);
      if (s === undefined) continue;
      const blockStart = Math.floor(this.current / SPAN[level + 1]!) * SPAN[level + 1]!;
      const t = blockStart + s * SPAN[level]!;
      if (best === undefined || t < best) best = t;
    }
    // Overflow timers come into the wheel when time reaches the next block of its reach.
    if (this.heads[OVERFLOW_LIST] !== -1) {
      const boundary = (Math.floor(this.current / SPAN[LEVELS]!) + 1) * SPAN[LEVELS]!;
      if (best === undefined || boundary < best) best = boundary;
    }
    return best;
  }

  /** The first non-empty slot of `level` still ahead in its block (level 0 includes the current slot). */
  private findSlot(level: number): number | undefined {
    const pos = slotOf(this.current, level) + (level === 0 ? 0 : 1);
    const base = level * SLOTS;
    for (let s = pos; s < SLOTS; ) {
      const word = this.bitmap[(base + s) >>> 5]! >>> (s & 31);
      if (word !== 0) return s + (31 - Math.clz32(word & -word));
      s = (s | 31) + 1;
    }
    return undefined;
  }

  private place(h: number): void {
    const at = this.at[h]!;
    if (at <= this.current) return this.link(h, READY_LIST, READY);
    for (let level = 0; level < LEVELS; level++) {
      if (Math.floor(at / SPAN[level + 1]!) === Math.floor(this.current / SPAN[level + 1]!)) {
        const list = level * SLOTS + slotOf(at, level);
        return this.link(h, list, list);
      }
    }
    this.link(h, OVERFLOW_LIST, OVERFLOW);
  }

  private cascade(level: number, slot: number): void {
    const list = level * SLOTS + slot;
    let h = this.heads[list]!;
    this.heads[list] = -1;
    this.bitmap[list >>> 5]! &= ~(1 << (list & 31));
    while (h !== -1) {
      const n = this.next[h]!;
      this.place(h);
      h = n;
    }
  }

  private cascadeOverflow(): void {
    let h = this.heads[OVERFLOW_LIST]!;
    this.heads[OVERFLOW_LIST] = -1;
    while (h !== -1) {
      const n = this.next[h]!;
      this.place(h);
      h = n;
    }
  }

  private fireList(list: number, fire: (data: number, at: number) => void): void {
    let h = this.heads[list]!;
    if (h === -1) return;
    this.heads[list] = -1;
    if (list < LEVELS * SLOTS) this.bitmap[list >>> 5]! &= ~(1 << (list & 31));
    // Insertion order within one instant; collect first so fire() may schedule.
    const due: number[] = [];
    while (h !== -1) {
      due.push(h);
      h = this.next[h]!;
    }
    for (let i = due.length - 1; i >= 0; i--) {
      const d = due[i]!;
      const data = this.data[d]!;
      const at = this.at[d]!;
      this.release(d);
      this.count--;
      fire(data, at);
    }
  }

  private link(h: number, list: number, where: number): void {
    const head = this.heads[list]!;
    this.next[h] = head;
    this.prev[h] = -1;
    if (head !== -1) this.prev[head] = h;
    this.heads[list] = h;
    this.where[h] = where;
    if (list < LEVELS * SLOTS) this.bitmap[list >>> 5]! |= 1 << (list & 31);
  }

  private unlink(h: number): void {
    const w = this.where[h]!;
    const list = w === READY ? READY_LIST : w === OVERFLOW ? OVERFLOW_LIST : w;
    const p = this.prev[h]!;
    const n = this.next[h]!;
    if (p === -1) this.heads[list] = n;
    else this.next[p] = n;
    if (n !== -1) this.prev[n] = p;
    if (this.heads[list] === -1 && list < LEVELS * SLOTS) this.bitmap[list >>> 5]! &= ~(1 << (list & 31));
  }

  private alloc(): number {
    if (this.freeHead !== -1) {
      const h = this.freeHead;
      this.freeHead = this.next[h]!;
      return h;
    }
    if (this.used === this.at.length) this.grow();
    return this.used++;
  }

  private release(h: number): void {
    this.where[h] = FREE;
    this.next[h] = this.freeHead;
    this.freeHead = h;
  }

  private grow(): void {
    const n = this.at.length * 2;
    const f64 = (a: Float64Array) => {
      const b = new Float64Array(n);
      b.set(a);
      return b;
    };
    const i32 = (a: Int32Array, fill: number) => {
      const b = new Int32Array(n).fill(fill);
      b.set(a);
      return b;
    };
    this.at = f64(this.at);
    this.data = f64(this.data);
    this.next = i32(this.next, -1);
    this.prev = i32(this.prev, -1);
    this.where = i32(this.where, FREE);
  }
}

const READY_LIST = LEVELS * SLOTS;
const OVERFLOW_LIST = LEVELS * SLOTS + 1;

const slotOf = (t: number, level: number): number => Math.floor(t / SPAN[level]!) % SLOTS;
