/**
 * What delivery reads of a stream (its URL, status and tag) and of its tenant (the secret that signs its webhooks),
 * and the state it changes (error, terminated): a port, so that delivery knows no streams service. The streams
 * side implements it over the store (engine/streams/delivery-streams.ts).
 */
export type StreamStatus = 'active' | 'paused' | 'error' | 'terminated';

export interface DeliveryStream {
  readonly id: string;
  readonly tenantId: string;
  readonly webhookUrl: string;
  readonly tag: string;
  /** Alerts go there (else CHAINPOST_ALERT_EMAIL). */
  readonly ownerEmail?: string;
  status: StreamStatus;
  statusMessage: string;
  /** When it entered error (service time, ms). */
  errorSince?: number;
  updatedAt: number;
}

export interface DeliveryStreams {
  /** Every stream (at start). */
  all(): Iterable<DeliveryStream>;
  /** The stream as last committed, or undefined when it is gone. */
  get(tenant: string, id: string): DeliveryStream | undefined;
  /** Writes a record this port answered, with the state delivery changed on it; inside a write transaction. */
  putState(s: DeliveryStream): void;
  /**
   * A state written by putState (error, terminated) committed: a cluster node writes it through the control log as
   * well, so every node shows it; none in one process.
   */
  stateCommitted?(s: DeliveryStream): void;
  /** The secret that signs the tenant's webhooks (made at the tenant's first use: a write). */
  secret(tenant: string): Promise<string>;
}

/** The key of a stream's record, and of its stats row. */
export const streamKey = (tenant: string, id: string): string => `${tenant}/${id}`;

/** Whether a stream in this state sends webhooks. */
export const sends = (s: StreamStatus): boolean => s === 'active';

/** What happens to a new webhook of a stream in this state. */
export function onNewWebhook(s: StreamStatus): 'queue' | 'history' | 'drop' {
  if (s === 'active') return 'queue';
  // In error the stream keeps saving webhooks in history; paused and terminated streams process no blocks.
  if (s === 'error') return 'history';
  return 'drop';
}

/**
 * The streams as delivery last read them, in front of the port: a record read for sending is kept until it is
 * written again (`changed`), each stream's tenant from its registration, each tenant's secret once (made once,
 * never changed: POST /settings changes the region only).
 */
export class StreamReads {
  private readonly tenants = new Map<string, string>();
  private readonly live = new Map<string, DeliveryStream>();
  private readonly secrets = new Map<string, string>();

  constructor(readonly port: DeliveryStreams) {}

  track(s: Pick<DeliveryStream, 'id' | 'tenantId'>): void {
    this.tenants.set(s.id, s.tenantId);
  }

  tenantOf(id: string): string | undefined {
    return this.tenants.get(id);
  }

  /** The stream's record, read once until it changes. */
  read(id: string): DeliveryStream | undefined {
    let s = this.live.get(id);
    if (s !== undefined) return s;
    const tenant = this.tenants.get(id);
    s = tenant === undefined ? undefined : this.port.get(tenant, id);
    if (s !== undefined) this.live.set(id, s);
    return s;
  }

  /** The record was written: the next read reads it again. */
  changed(id: string): void {
    this.live.delete(id);
  }

  forget(id: string): void {
    this.tenants.delete(id);
    this.live.delete(id);
  }

  async secret(tenant: string): Promise<string> {
    let s = this.secrets.get(tenant);
    if (s === undefined) this.secrets.set(tenant, (s = await this.port.secret(tenant)));
    return s;
  }
}
