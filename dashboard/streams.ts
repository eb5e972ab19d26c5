import { api, type Page } from './api.js';
import { html, useState, type VNode } from './preact.js';
import { attempt, type Outcome, OutcomeLine, Panel, Problem, usePoll, when } from './ui.js';

export type Family = 'evm' | 'bitcoin' | 'solana';
export const FAMILIES: readonly Family[] = ['evm', 'bitcoin', 'solana'];
const FAMILY_NAMES: Record<Family, string> = { evm: 'EVM', bitcoin: 'Bitcoin', solana: 'Solana' };

/** What the panel reads of a stream record, of any family. */
export interface Stream {
  id: string;
  webhookUrl: string;
  description: string;
  tag: string;
  status: string;
  statusMessage: string;
  updatedAt?: string;
}

/**
 * GET /stats/:streamId: the counters, and the stream's delivery state: its URL's success rate (100 at the start, below
 * 70 the stream goes to error), its queue (undelivered webhooks, those waiting for a retry included) and its last
 * failed attempt. Any other field the server adds is listed by its name.
 */
type Stats = Record<string, unknown> & {
  totalWebhooksDelivered?: number;
  totalWebhooksFailed?: number;
  successRate?: number;
  queueSize?: number;
  lastError?: { message: string; at: string } | null;
};

const SHOWN = new Set([
  'streamId',
  'webhookUrl',
  'totalWebhooksDelivered',
  'totalWebhooksFailed',
  'successRate',
  'queueSize',
  'lastError',
  'createdAt',
  'updatedAt',
]);

/** Each family's streams (a page of 100), each with its stats. */
async function readStreams(): Promise<Array<{ family: Family; stream: Stream; stats: Stats | undefined }>> {
  const lists = await Promise.all(
    FAMILIES.map(async (family) => ({ family, page: await api<Page<Stream>>(`streams/${family}?limit=100`) })),
  );
  const rows = lists.flatMap(({ family, page }) => page.result.map((stream) => ({ family, stream })));
  return Promise.all(rows.map(async (r) => ({ ...r, stats: await api<Stats>(`stats/${r.stream.id}`).catch(() => undefined) })));
}

/** A stats value as text: numbers and strings as they are, anything else as its JSON. */
const valueText = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : JSON.stringify(v));

const StatsCell = ({ stats }: { stats: Stats | undefined }): VNode => {
  if (stats === undefined) return html`<td class="muted">—</td>`;
  const ok = stats.totalWebhooksDelivered ?? 0;
  const failed = stats.totalWebhooksFailed ?? 0;
  const extra = Object.entries(stats).filter(([k, v]) => !SHOWN.has(k) && v !== undefined);
  const stat = (name: string, label: string, value: unknown) =>
    value === undefined ? null : html`<div class="stat" data-stat=${name}>${label} <b>${valueText(value)}</b></div>`;
  return html`<td class="stats">
    <div>delivered <b class="delivered">${ok}</b>, failed <b class="failed">${failed}</b></div>
    ${stat('queueSize', 'queue', stats.queueSize)}
    ${stat('successRate', "URL's success rate", stats.successRate)}
    ${
      stats.lastError === undefined || stats.lastError === null
        ? null
        : html`<div class="stat last-error" data-stat="lastError">last error, ${when(stats.lastError.at)}: <span class="error-text">${stats.lastError.message}</span></div>`
    }
    ${extra.map(([k, v]) => stat(k, `${k}:`, v))}
  </td>`;
};

const StreamRow = ({
  family,
  stream,
  stats,
  changed,
}: {
  family: Family;
  stream: Stream;
  stats: Stats | undefined;
  changed: () => void;
}): VNode => {
  const [outcome, setOutcome] = useState<Outcome | undefined>(undefined);
  const act = async (action: () => Promise<string>): Promise<void> => {
    setOutcome(await attempt(action));
    changed();
  };
  const setStatus = (status: 'active' | 'paused') =>
    act(async () => {
      await api(`streams/${family}/${stream.id}/status`, { method: 'POST', json: { status } });
      return status === 'paused' ? 'paused' : 'resumed';
    });
  const replayAll = () =>
    act(async () => {
      const r = await api<{ replayed: number; remaining?: number; results: Array<{ delivered: boolean }> }>(`history/replay/${stream.id}`, {
        method: 'POST',
      });
      const delivered = r.results.filter((x) => x.delivered).length;
      return `replayed ${r.replayed}: ${delivered} delivered${(r.remaining ?? 0) > 0 ? `, ${r.remaining} left for another replay` : ''}`;
    });
  return html`<tr data-stream=${stream.id}>
    <td>${FAMILY_NAMES[family]}</td>
    <td>
      <div class="tag">${stream.tag}</div>
      <div class="description">${stream.description}</div>
      <div class="muted mono">${stream.id}</div>
    </td>
    <td class="mono url">${stream.webhookUrl}</td>
    <td>
      <span class=${`status status-${stream.status}`}>${stream.status}</span>
      ${stream.statusMessage === '' ? null : html`<div class="status-message">${stream.statusMessage}</div>`}
    </td>
    <${StatsCell} stats=${stats} />
    <td class="actions">
      ${
        stream.status === 'paused'
          ? html`<button type="button" class="resume" onClick=${() => setStatus('active')}>Resume</button>`
          : html`<button type="button" class="pause" onClick=${() => setStatus('paused')}>Pause</button>`
      }
      <button type="button" class="replay-all" onClick=${replayAll}>Replay failed</button>
      <${OutcomeLine} outcome=${outcome} />
    </td>
  </tr>`;
};

/** A list field (one per line or comma separated) as an array. */
const listOf = (text: string): string[] =>
  text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter((s) => s !== '');

/** The form's fields as the create body of `family`. */
function createBody(family: Family, f: FormData): Record<string, unknown> {
  const text = (name: string): string => String(f.get(name) ?? '');
  const on = (name: string): boolean => f.get(name) === 'on';
  const common = { webhookUrl: text('webhookUrl'), description: text('description'), tag: text('tag') };
  if (family === 'evm')
    return {
      ...common,
      chainIds: listOf(text('chainIds')),
      includeNativeTxs: on('includeNativeTxs'),
      includeContractLogs: on('includeContractLogs'),
      includeInternalTxs: on('includeInternalTxs'),
    };
  if (family === 'bitcoin') return { ...common, includeInputs: on('includeInputs'), includeOutputs: on('includeOutputs') };
  return { ...common, programIds: listOf(text('programIds')), mintAddresses: listOf(text('mintAddresses')) };
}

const FamilyFields = ({ family }: { family: Family }): VNode => {
  const check = (name: string, label: string, checked: boolean) =>
    html`<label class="check"><input type="checkbox" name=${name} defaultChecked=${checked} /> ${label}</label>`;
  if (family === 'evm')
    return html`<label>Chain ids (comma separated) <input name="chainIds" required placeholder="0x1, 0x539" /></label>
      <div>${check('includeNativeTxs', 'native transactions', true)} ${check('includeContractLogs', 'contract logs', false)}
      ${check('includeInternalTxs', 'internal transactions', false)}</div>`;
  if (family === 'bitcoin') return html`<div>${check('includeInputs', 'inputs', true)} ${check('includeOutputs', 'outputs', true)}</div>`;
  return html`<label>Program ids <input name="programIds" placeholder="base58, comma separated" /></label>
    <label>Mint addresses <input name="mintAddresses" placeholder="base58, comma separated" /></label>`;
};

/** Creates a stream of the chosen family, then adds the addresses given (each family's /address). */
const CreateStream = ({ created }: { created: () => void }): VNode => {
  const [family, setFamily] = useState<Family>('evm');
  const [outcome, setOutcome] = useState<Outcome | undefined>(undefined);
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const f = new FormData(form);
    setOutcome(
      await attempt(async () => {
        const stream = await api<Stream>(`streams/${family}`, { method: 'PUT', json: createBody(family, f) });
        const addresses = listOf(String(f.get('addresses') ?? ''));
        if (addresses.length > 0) await api(`streams/${family}/${stream.id}/address`, { method: 'POST', json: { address: addresses } });
        form.reset();
        return `created ${FAMILY_NAMES[family]} stream ${stream.id}${addresses.length > 0 ? ` with ${addresses.length} address(es)` : ''}`;
      }),
    );
    created();
  };
  return html`<form id="create-stream" class="create" onSubmit=${submit}>
    <h3>New stream</h3>
    <label>Family
      <select name="family" value=${family} onChange=${(e: Event) => setFamily((e.currentTarget as HTMLSelectElement).value as Family)}>
        ${FAMILIES.map((f) => html`<option value=${f}>${FAMILY_NAMES[f]}</option>`)}
      </select>
    </label>
    <label>Webhook URL <input name="webhookUrl" type="url" required placeholder="https://…" /></label>
    <label>Description <input name="description" maxlength="1000" /></label>
    <label>Tag <input name="tag" maxlength="200" /></label>
    <${FamilyFields} family=${family} key=${family} />
    <label>Addresses (one per line) <textarea name="addresses" rows="2"></textarea></label>
    <button type="submit">Create stream</button>
    <${OutcomeLine} outcome=${outcome} />
  </form>`;
};

/** The tenant's streams of every family with their stats, read every 3 s; pause, resume, replay, create. */
export const Streams = (): VNode => {
  const streams = usePoll(readStreams, 3_000);
  const rows = streams.data ?? [];
  return html`<${Panel} id="streams" title="Streams">
    <${Problem} text=${streams.error} />
    ${
      rows.length === 0
        ? html`<p class="muted">${streams.data === undefined ? 'Reading…' : 'No stream yet.'}</p>`
        : html`<table>
            <thead><tr><th>family</th><th>tag, description, id</th><th>webhook URL</th><th>status</th><th>deliveries</th><th></th></tr></thead>
            <tbody>${rows.map((r) => html`<${StreamRow} key=${r.stream.id} ...${r} changed=${streams.refresh} />`)}</tbody>
          </table>`
    }
    <${CreateStream} created=${streams.refresh} />
  </${Panel}>`;
};
