/** Deliveries in flight at once, all tenants. */
export const MAX_IN_FLIGHT = 512;

/** A tenant's share of the 512 slots: one tenant's receivers that hang leave three quarters to the others. */
/** Webhooks in flight to one receiver origin at most: as many as the sender keeps connections to it. */
export const DEFAULT_ORIGIN_SLOTS = 64;
export const DEFAULT_TENANT_SLOTS = 128;

/** A tenant's slots to receivers that have not answered it: those that hang hold no more, the rest of its share goes on. */
export const DEFAULT_UNANSWERED_SLOTS = 16;

/** How many webhooks may be in flight at once (Slots). */
export interface SlotLimits {
  /** In all. */
  max: number;
  /** To one receiver origin: no more than the HTTP client's connections to it. */
  perOrigin: number;
  /** For one tenant. */
  perTenant: number;
  /** For one tenant, to the origins that have not answered it (Slots). */
  unanswered: number;
}

/** What an attempt heard from its receiver: an answer (any status), or none within the delivery timeout. */
export type Heard = 'answer' | 'silence';

/** What an attempt tells of its receiver's origin: any answer proves it, no answer in time does not, an error says nothing. */
export const heard = (res: { status?: number; timedOut?: true } | undefined): Heard | undefined =>
  res?.status !== undefined ? 'answer' : res?.timedOut === true ? 'silence' : undefined;

/** Streams waiting for a slot to one origin, in arrival order; `turn` orders the lines of a tenant (lowest: next). */
interface Line {
  origin: string;
  ids: Set<string>;
  turn: number;
}

/** One tenant's share: the slots it holds, the origins that answered it, and its streams in line. */
class Tenant {
  held = 0;
  /** Slots held to origins that have not answered this tenant. */
  heldUnanswered = 0;
  readonly busy = new Map<string, number>();
  /** Origins whose latest attempt from this tenant was answered. */
  readonly answering = new Set<string>();
  /** Lines to answering origins, and to the others, each in turn order. */
  readonly lines = new Map<string, Line>();
  readonly unansweredLines = new Map<string, Line>();

  linesTo(origin: string): Map<string, Line> {
    return this.answering.has(origin) ? this.lines : this.unansweredLines;
  }

  get hasLines(): boolean {
    return this.lines.size + this.unansweredLines.size > 0;
  }
}

/**
 * Delivery slots, shared fairly between tenants. At most `max` webhooks in flight in all; `perOrigin` to one
 * receiver (scheme, host and port), so a POST goes out at once instead of waiting in the client's queue; `perTenant`
 * for one tenant, so one tenant's receivers never hold every slot; and `unanswered` of one tenant's to the origins
 * that have not answered it (none of its webhooks to the origin answered yet, or the latest got no answer within the
 * delivery timeout), so receivers that hang hold few of a tenant's slots and its answering receivers go on.
 *
 * Streams that find no slot wait in line, a line per tenant and origin: a freed slot goes to the tenants in turn,
 * within a tenant to its origins in turn, and within an origin to its streams in arrival order.
 */
export class Slots {
  private total = 0;
  private readonly busy = new Map<string, number>();
  private readonly tenants = new Map<string, Tenant>();
  /** Tenants with streams in line, in turn order. */
  private readonly waiting = new Map<string, Tenant>();
  private count = 0;
  private turns = 0;

  constructor(private readonly limits: SlotLimits) {}

  /** Whether tenant `tenant` may take a slot to `origin` now. */
  free(tenant: string, origin: string): boolean {
    if (this.total >= this.limits.max || !this.originFree(origin)) return false;
    const t = this.tenants.get(tenant);
    return t === undefined || (t.held < this.limits.perTenant && (t.answering.has(origin) || t.heldUnanswered < this.limits.unanswered));
  }

  /** Takes a slot to `origin` for stream `id` of `tenant`, or puts the stream in line for one. */
  take(tenant: string, origin: string, id: string): boolean {
    if (!this.free(tenant, origin)) {
      this.wait(tenant, origin, id);
      return false;
    }
    const t = this.tenant(tenant);
    this.total++;
    this.busy.set(origin, (this.busy.get(origin) ?? 0) + 1);
    t.held++;
    t.busy.set(origin, (t.busy.get(origin) ?? 0) + 1);
    if (!t.answering.has(origin)) t.heldUnanswered++;
    return true;
  }

  wait(tenant: string, origin: string, id: string): void {
    const t = this.tenant(tenant);
    const lines = t.linesTo(origin);
    let line = lines.get(origin);
    if (line === undefined) lines.set(origin, (line = { origin, ids: new Set(), turn: ++this.turns }));
    if (line.ids.has(id)) return;
    line.ids.add(id);
    this.count++;
    if (!this.waiting.has(tenant)) this.waiting.set(tenant, t);
  }

  /** Frees the slot; what the attempt `heard` moves the origin among the tenant's answering ones or out of them. */
  release(tenant: string, origin: string, heard?: Heard): void {
    const t = this.tenants.get(tenant)!;
    this.total--;
    decrement(this.busy, origin);
    t.held--;
    if (!t.answering.has(origin)) t.heldUnanswered--;
    const still = decrement(t.busy, origin);
    if (heard === undefined || t.answering.has(origin) === (heard === 'answer')) return;
    const from = t.linesTo(origin);
    if (heard === 'answer') {
      t.answering.add(origin);
      t.heldUnanswered -= still;
    } else {
      t.answering.delete(origin);
      t.heldUnanswered += still;
    }
    // Its line moves along, to the end of the turn.
    const line = from.get(origin);
    if (line === undefined) return;
    from.delete(origin);
    line.turn = ++this.turns;
    t.linesTo(origin).set(origin, line);
  }

  /** The next stream in line that may take a free slot, out of its line; undefined when none. */
  next(): string | undefined {
    if (this.total >= this.limits.max) return undefined;
    for (const [name, t] of this.waiting) {
      if (t.held >= this.limits.perTenant) continue;
      const id = this.pick(t);
      if (id === undefined) continue;
      // The tenant served goes last in turn.
      this.waiting.delete(name);
      if (t.hasLines) this.waiting.set(name, t);
      return id;
    }
    return undefined;
  }

  /** Slots held (webhooks in flight). */
  get inFlight(): number {
    return this.total;
  }

  /** Streams in line. */
  get inLine(): number {
    return this.count;
  }

  /** Empties every line (a stop: nothing more starts). */
  clear(): void {
    for (const t of this.waiting.values()) {
      t.lines.clear();
      t.unansweredLines.clear();
    }
    this.waiting.clear();
    this.count = 0;
  }

  private tenant(name: string): Tenant {
    let t = this.tenants.get(name);
    if (t === undefined) this.tenants.set(name, (t = new Tenant()));
    return t;
  }

  private originFree(origin: string): boolean {
    return (this.busy.get(origin) ?? 0) < this.limits.perOrigin;
  }

  /** The tenant's next stream: from the line whose turn it is among those that may take a slot. */
  private pick(t: Tenant): string | undefined {
    const answering = this.first(t.lines);
    // While the unanswered origins hold their share, their lines are not even looked at.
    const unanswered = t.heldUnanswered < this.limits.unanswered ? this.first(t.unansweredLines) : undefined;
    const line = unanswered === undefined || (answering !== undefined && answering.turn < unanswered.turn) ? answering : unanswered;
    if (line === undefined) return undefined;
    const lines = line === answering ? t.lines : t.unansweredLines;
    const id = line.ids.values().next().value!;
    line.ids.delete(id);
    this.count--;
    lines.delete(line.origin);
    if (line.ids.size > 0) {
      line.turn = ++this.turns;
      lines.set(line.origin, line);
    }
    return id;
  }

  /** The first line (in turn order) whose origin has a free slot. */
  private first(lines: Map<string, Line>): Line | undefined {
    for (const line of lines.values()) if (this.originFree(line.origin)) return line;
    return undefined;
  }
}

/** Counts one down; answers what is left (a zero is removed). */
function decrement(counts: Map<string, number>, key: string): number {
  const n = counts.get(key)! - 1;
  if (n === 0) counts.delete(key);
  else counts.set(key, n);
  return n;
}
