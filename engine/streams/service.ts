import type { Clock } from '../clock.js';
import { chainFor } from '../chains/lifecycle.js';
import { uuidV4 } from '../delivery/ids.js';
import { type Dispatcher, type Stats, emptyStats, streamKey } from '../delivery/dispatcher.js';
import { countOf, historyRange, historyView, logRange, logView, markDelivered, type DeliveryLog, type HistoryRecord, type StoredHistory, type StoredLog } from '../delivery/records.js';
import { ownBytes } from '../delivery/body.js';
import { testWebhook } from '../delivery/webhook.js';
import { ApiError, badRequest, notFound } from '../errors.js';
import { counted, page, rangePage, type Page } from '../page.js';
import type { Kv } from '../ports.js';
import { streamResponse, type StreamDefinition, type StreamRecord } from './model.js';
import { checkFilter } from '../evm/advanced-filter.js';
import { abiEvents } from './schemas.js';
import { settingsOf } from './settings.js';
import { ownerMaySet } from './transitions.js';

/** Stream resources per tenant: create, update, list, status, addresses, settings, stats, history, replay. */
export const MAX_ADDRESSES_PER_STREAM = 1_000_000;

/** Told of every change to what streams watch (the matcher's watchlist, engine/match/watchlist.ts). */
export interface StreamWatch {
  stream(s: StreamRecord): void;
  removed(id: string): void;
  addressesChanged(id: string, added: readonly string[], removed: readonly string[]): void;
}

export class StreamsService {
  constructor(
    private readonly kv: Kv,
    private readonly clock: Clock,
    private readonly dispatcher: Dispatcher,
    private readonly watch?: StreamWatch,
  ) {}

  async create(tenant: string, def: StreamDefinition, ownerEmail: string | undefined): Promise<Record<string, unknown>> {
    const checked = this.check(def);
    const now = this.clock.now();
    const id = uuidV4();
    await this.testWebhook(tenant, id, checked);
    const s: StreamRecord = { ...checked, id, tenantId: tenant, status: 'active', statusMessage: '', createdAt: now, updatedAt: now, amountOfAddresses: 0 };
    if (ownerEmail !== undefined) s.ownerEmail = ownerEmail;
    this.kv.put('streams', streamKey(tenant, id), s);
    this.dispatcher.track(s);
    this.watch?.stream(s);
    return streamResponse(s, this.clock.now());
  }

  async update(tenant: string, id: string, changes: Partial<StreamDefinition>): Promise<Record<string, unknown>> {
    const s = this.get(tenant, id);
    const merged = this.check({ ...definitionOf(s), ...stripUndefined(changes) });
    await this.testWebhook(tenant, id, merged);
    const changed = Object.keys(stripUndefined(changes)) as Array<keyof StreamDefinition>;
    const updated = this.kv.transact(() => {
      // Re-read after the test webhook's wait: only the fields this update names change.
      const cur = this.get(tenant, id);
      const next: StreamRecord = { ...cur, ...Object.fromEntries(changed.map((k) => [k, merged[k]])), updatedAt: this.clock.now() };
      // A stream listing a removed chain is reported invalid until updated; an update that fixes it clears that.
      if (next.status !== 'error' && next.status !== 'terminated') next.statusMessage = '';
      this.kv.put('streams', streamKey(tenant, id), next);
      return next;
    });
    this.dispatcher.changed(id);
    this.watch?.stream(updated);
    return streamResponse(updated, this.clock.now());
  }

  get(tenant: string, id: string): StreamRecord {
    const s = this.kv.get<StreamRecord>('streams', streamKey(tenant, id));
    if (s === undefined) throw notFound(`no stream ${id}`);
    return s;
  }

  /** The stream as the API answers it. */
  describe(tenant: string, id: string): Record<string, unknown> {
    return streamResponse(this.get(tenant, id), this.clock.now());
  }

  list(tenant: string, limit: number, cursor: string | null): Page<Record<string, unknown>> {
    return page<StreamRecord, Record<string, unknown>>(this.kv, 'streams', `${tenant}/`, { limit, cursor, map: (s) => streamResponse(s, this.clock.now()) });
  }

  remove(tenant: string, id: string): Record<string, unknown> {
    const s = this.get(tenant, id);
    this.kv.transact(() => {
      this.kv.remove('streams', streamKey(tenant, id));
      for (const { key } of this.kv.range('streamAddresses', { start: `${id}/`, end: `${id}/\uffff` })) this.kv.remove('streamAddresses', key);
      this.dispatcher.dropQueue(id);
    });
    this.dispatcher.forget(id);
    this.watch?.removed(id);
    return streamResponse(s, this.clock.now());
  }

  async setStatus(tenant: string, id: string, status: 'active' | 'paused'): Promise<Record<string, unknown>> {
    const s = this.get(tenant, id);
    ownerMaySet(s.status, status);
    if (status === 'active' && s.status !== 'active') await this.testWebhook(tenant, id, s);
    const updated = this.kv.transact(() => {
      const cur = this.get(tenant, id);
      ownerMaySet(cur.status, status);
      const was = cur.status;
      cur.status = status;
      cur.statusMessage = '';
      delete cur.errorSince;
      cur.updatedAt = this.clock.now();
      this.kv.put('streams', streamKey(tenant, id), cur);
      return { cur, was };
    });
    this.dispatcher.changed(id);
    if (status === 'active' && updated.was !== 'active') this.dispatcher.resumed(updated.cur, updated.was);
    return streamResponse(updated.cur, this.clock.now());
  }

  addAddresses(tenant: string, id: string, addresses: string[]): { streamId: string; address: string | string[] } {
    return this.changeAddresses(tenant, id, addresses, true);
  }

  removeAddresses(tenant: string, id: string, addresses: string[]): { streamId: string; address: string | string[] } {
    return this.changeAddresses(tenant, id, addresses, false);
  }

  listAddresses(tenant: string, id: string, limit: number, cursor: string | null): Page<{ address: string }> {
    this.get(tenant, id);
    return page<number, { address: string }>(this.kv, 'streamAddresses', `${id}/`, { limit, cursor, map: (_v, key) => ({ address: key.slice(id.length + 1) }) });
  }

  settings(tenant: string): { region: string; secretKey: string } {
    const s = settingsOf(this.kv, tenant);
    return { region: s.region, secretKey: s.secretKey };
  }

  setRegion(tenant: string, region: string): { region: string } {
    const s = settingsOf(this.kv, tenant);
    this.kv.put('settings', tenant, { ...s, region });
    return { region };
  }

  stats(tenant: string, streamId?: string): Stats & { streamId?: string } {
    if (streamId !== undefined) this.get(tenant, streamId);
    const key = streamId === undefined ? tenant : streamKey(tenant, streamId);
    const iso = new Date(this.clock.now()).toISOString();
    const st = this.kv.get<Stats>('stats', key) ?? emptyStats(iso);
    return streamId === undefined ? st : { ...st, streamId };
  }

  /** Newest first; a page reads limit + 2 records at most, and `total` is the range's counter. */
  history(tenant: string, limit: number, cursor: string | null, excludePayload: boolean): Page<Partial<HistoryRecord>> {
    const range = historyRange(tenant);
    const p = rangePage<StoredHistory>(this.kv, 'history', range.prefix, { list: 'history', limit, reverse: true, cursor });
    return counted(p, countOf(this.kv, range), limit, (h) => historyView(h, !excludePayload));
  }

  /** Successes and failures (stored apart, kept for different times) newest first, as one list. */
  logs(tenant: string, limit: number, cursor: string | null): Page<DeliveryLog> {
    const ranges = [logRange(tenant, 'success'), logRange(tenant, 'failed')];
    const p = rangePage<StoredLog>(this.kv, 'deliveryLogs', ranges.map((r) => r.prefix), { list: 'history/logs', limit, reverse: true, cursor });
    return counted(p, countOf(this.kv, ranges[0]!) + countOf(this.kv, ranges[1]!), limit, (row, key) => logView(key, row));
  }

  /**
   * Re-sends a failed webhook now; answers the record and whether it was delivered. The stream's state
   * does not change; a delivery marks the record delivered (deliveredAt: the first delivery).
   */
  async replay(tenant: string, historyId: string, streamId?: string): Promise<HistoryRecord & { delivered: boolean; status?: number; errorMessage: string }> {
    const stored = this.kv.get<StoredHistory>('history', historyRange(tenant).prefix + historyId);
    if (stored === undefined || (streamId !== undefined && stored.streamId !== streamId)) throw notFound(`no history record ${historyId}${streamId === undefined ? '' : ` of stream ${streamId}`}`);
    // The very bytes last sent.
    const body = ownBytes(stored.body);
    const h = historyView({ ...stored, body }, true) as HistoryRecord;
    const res = await this.dispatcher.post(tenant, h.webhookUrl, body, this.dispatcher.queueSize(h.streamId));
    const deliveredAt = res.delivered ? (this.kv.transact(() => markDelivered(this.kv, tenant, historyId, this.clock.now())) ?? h.deliveredAt) : h.deliveredAt;
    const out = { ...h, delivered: res.delivered, deliveredAt, errorMessage: res.delivered ? '' : (res.error ?? h.errorMessage) };
    return res.status === undefined ? out : { ...out, status: res.status };
  }

  // ---- helpers --------------------------------------------------------------

  /** Checks what a schema cannot: chains against the registry at the service date, topic0 against the abi. */
  private check(def: StreamDefinition): StreamDefinition {
    const now = this.clock.now();
    const chainIds = def.chainIds.map((c, i) => chainFor(c, 'streams', now, { field: `chainIds.${i}` }).key);
    if (new Set(chainIds).size !== chainIds.length) throw badRequest('chainIds', 'a chain is listed twice');
    if (def.abi !== null && def.topic0 !== null) {
      const events = abiEvents(def.abi);
      def.topic0.forEach((t, i) => {
        if (!events.has(t)) throw badRequest(`topic0.${i}`, `${t} is not an event of the abi`);
      });
    }
    def.advancedOptions?.forEach((o, i) => checkAdvancedOption(o, def.abi, `advancedOptions.${i}`));
    if (def.allAddresses && (def.abi === null || def.topic0 === null || def.topic0.length === 0)) {
      throw badRequest('allAddresses', 'applies only when abi and topic0 are provided');
    }
    return { ...def, chainIds };
  }

  /** The test webhook: the change is refused with 400 unless the receiver answers 200 within 10 s. */
  private async testWebhook(tenant: string, id: string, def: StreamDefinition): Promise<void> {
    const res = await this.dispatcher.post(tenant, def.webhookUrl, new TextEncoder().encode(JSON.stringify(testWebhook(id, def.tag))), 0);
    if (!res.delivered) throw new ApiError(400, `webhookUrl: the test webhook to ${def.webhookUrl} was not accepted (${res.error ?? 'no answer'}); it must answer 200 within 10 s`, { field: 'webhookUrl' });
  }

  private changeAddresses(tenant: string, id: string, addresses: string[], add: boolean): { streamId: string; address: string | string[] } {
    const lower = [...new Set(addresses.map((a) => a.toLowerCase()))];
    const changed: string[] = [];
    this.kv.transact(() => {
      const s = this.get(tenant, id);
      let n = s.amountOfAddresses;
      for (const a of lower) {
        const key = `${id}/${a}`;
        const has = this.kv.has('streamAddresses', key);
        if (add && !has) {
          if (n >= MAX_ADDRESSES_PER_STREAM) throw badRequest('address', `a stream holds at most ${MAX_ADDRESSES_PER_STREAM.toLocaleString('en-US')} addresses`);
          this.kv.put('streamAddresses', key, 1);
          changed.push(a);
          n++;
        } else if (!add && has) {
          this.kv.remove('streamAddresses', key);
          changed.push(a);
          n--;
        }
      }
      s.amountOfAddresses = n;
      s.updatedAt = this.clock.now();
      this.kv.put('streams', streamKey(tenant, id), s);
    });
    this.dispatcher.changed(id);
    this.watch?.addressesChanged(id, add ? changed : [], add ? [] : changed);
    return { streamId: id, address: addresses.length === 1 ? lower[0]! : lower };
  }
}

/** An advancedOptions entry names an event of the abi, and its filter fits that event's parameters. */
function checkAdvancedOption(o: Record<string, unknown>, abi: StreamDefinition['abi'], path: string): void {
  const event = abiEvents(abi).get(String(o['topic0']));
  if (event === undefined) throw badRequest(`${path}.topic0`, `${String(o['topic0'])} is not an event of the abi`);
  if (o['filter'] === undefined) return;
  const problem = checkFilter(o['filter'], event.inputs, `${path}.filter`);
  if (problem !== null) throw badRequest(problem.slice(0, problem.indexOf(':')), problem.slice(problem.indexOf(':') + 2));
}

function definitionOf(s: StreamRecord): StreamDefinition {
  const { id: _id, tenantId: _t, status: _s, statusMessage: _m, createdAt: _c, updatedAt: _u, amountOfAddresses: _a, errorSince: _e, ownerEmail: _o, ...def } = s;
  return def;
}

const stripUndefined = <T extends object>(o: T): Partial<T> => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
