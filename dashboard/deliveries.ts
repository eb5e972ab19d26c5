import { api, type Page } from './api.js';
import { html, useRef, useState, type VNode } from './preact.js';
import { attempt, type Outcome, OutcomeLine, Panel, Problem, usePoll, when } from './ui.js';

/** A failed-delivery history record (GET /history): the body as it was sent and the receiver's error. */
interface HistoryRecord {
  id: string;
  date: string;
  payload?: unknown;
  tinyPayload?: { retries?: number };
  streamId: string;
  tag: string;
  errorMessage: string;
  webhookUrl: string;
  delivered?: boolean;
  deliveredAt?: string | null;
}

/** A replay's answer (POST /history/replay/:historyId). */
interface ReplayAnswer {
  delivered: boolean;
  status?: number;
  errorMessage: string;
}

const replayText = (r: ReplayAnswer): string =>
  r.delivered
    ? `delivered (HTTP ${r.status ?? 200})`
    : `not delivered: ${r.errorMessage}${r.status === undefined ? '' : ` (HTTP ${r.status})`}`;

const FailedRow = ({ h, replayed }: { h: HistoryRecord; replayed: () => void }): VNode => {
  const [outcome, setOutcome] = useState<Outcome | undefined>(undefined);
  const replay = async (): Promise<void> => {
    setOutcome(await attempt(async () => replayText(await api<ReplayAnswer>(`history/replay/${h.id}`, { method: 'POST' }))));
    replayed();
  };
  return html`<li class="failed-delivery" data-history=${h.id} data-stream=${h.streamId}>
    <div class="line">
      <span>${when(h.date)}</span>
      <span class="tag">${h.tag}</span>
      <span class="mono url">${h.webhookUrl}</span>
      ${
        h.delivered === true
          ? html`<span class="ok delivered-mark">delivered ${when(h.deliveredAt)}</span>`
          : html`<span class="problem undelivered-mark">undelivered</span>`
      }
      <span class="muted">retries ${h.tinyPayload?.retries ?? 0}</span>
      <button type="button" class="replay" onClick=${replay}>Replay</button>
    </div>
    <div class="error-text">${h.errorMessage}</div>
    <${OutcomeLine} outcome=${outcome} />
    <details>
      <summary>body</summary>
      <pre class="body">${JSON.stringify(h.payload ?? null, null, 2)}</pre>
    </details>
  </li>`;
};

/** The tenant's failed deliveries, newest first (50), read every 3 s; each with its body and error, replayable. */
export const FailedDeliveries = (): VNode => {
  const history = usePoll(() => api<Page<HistoryRecord>>('history?limit=50'), 3_000);
  const records = history.data?.result ?? [];
  return html`<${Panel} id="failed" title="Failed deliveries">
    <${Problem} text=${history.error} />
    ${history.data === undefined ? null : html`<p class="muted">${history.data.total} in all</p>`}
    ${
      records.length === 0
        ? html`<p class="muted">${history.data === undefined ? 'Reading…' : 'None.'}</p>`
        : html`<ul class="records">${records.map((h) => html`<${FailedRow} key=${h.id} h=${h} replayed=${history.refresh} />`)}</ul>`
    }
  </${Panel}>`;
};

/** A delivery log entry (GET /history/logs): successes and failures, newest first. */
interface DeliveryLog {
  id: string;
  streamId: string;
  chain: string;
  webhookUrl: string;
  tag: string;
  retries: number;
  deliveryStatus: 'success' | 'failed';
  blockNumber: string;
  errorMessage: string;
  createdAt: string;
}

/** The newest 50 deliveries, read every 2 s while the page is open; those new since the page opened are marked. */
export const DeliveryLog = (): VNode => {
  const logs = usePoll(() => api<Page<DeliveryLog>>('history/logs?limit=50'), 2_000);
  // The ids shown at the first read: what comes after is new.
  const seen = useRef<Set<string> | undefined>(undefined);
  const entries = logs.data?.result ?? [];
  if (logs.data !== undefined && seen.current === undefined) seen.current = new Set(entries.map((e) => e.id));
  return html`<${Panel} id="log" title="Delivery log">
    <${Problem} text=${logs.error} />
    ${
      entries.length === 0
        ? html`<p class="muted">${logs.data === undefined ? 'Reading…' : 'No delivery yet.'}</p>`
        : html`<table>
            <thead><tr><th>time</th><th>outcome</th><th>tag</th><th>chain</th><th>block</th><th>retries</th><th>error</th></tr></thead>
            <tbody>
              ${entries.map(
                (
                  e,
                ) => html`<tr key=${e.id} data-log=${e.id} data-stream=${e.streamId} class=${seen.current?.has(e.id) === true ? '' : 'new'}>
                  <td>${when(e.createdAt)}</td>
                  <td class=${e.deliveryStatus === 'success' ? 'ok outcome' : 'problem outcome'}>${e.deliveryStatus}</td>
                  <td class="tag">${e.tag}</td>
                  <td>${e.chain}</td>
                  <td>${e.blockNumber}</td>
                  <td>${e.retries}</td>
                  <td class="error-text">${e.errorMessage}</td>
                </tr>`,
              )}
            </tbody>
          </table>`
    }
  </${Panel}>`;
};
