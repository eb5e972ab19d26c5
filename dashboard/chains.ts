import { api, ApiError } from './api.js';
import { html, type VNode } from './preact.js';
import { duration, Panel, Problem, usePoll } from './ui.js';

/** A chain's entry of GET /health (docs/api.md, "Operations"): the fields the panel shows. */
interface Chain {
  chain: string;
  head: number;
  confirmed: number;
  nodeHead: number;
  upstream: 'ok' | 'failing';
  upstreamErrors?: number;
  lastError?: string;
  node?: string;
  stalled?: boolean;
  indexed?: number | null;
  backfill?: { from: number; to: number; done: boolean; blocksPerSec: number | null; etaSeconds: number | null } | null;
}

interface Health {
  status: string;
  starting?: string[];
  chains?: Chain[];
}

/** /health answers 503 while the server starts, with the same body: read either. */
const readHealth = async (): Promise<Health> => {
  try {
    return await api<Health>('health');
  } catch (err) {
    if (err instanceof ApiError && err.status === 503) return { status: 'starting' };
    throw err;
  }
};

const Backfill = ({ b, head }: { b: Chain['backfill']; head: number }): VNode => {
  if (b === undefined || b === null) return html`<span class="muted">none</span>`;
  if (b.done) return html`<span>done (${b.from}–${b.to})</span>`;
  const span = Math.max(1, b.to - b.from);
  const at = Math.min(span, Math.max(0, head - b.from));
  const eta = b.etaSeconds === null ? 'ETA unknown yet' : `ETA ${duration(b.etaSeconds)}`;
  return html`<progress max=${span} value=${at}></progress>
    <span> ${Math.floor((100 * at) / span)} % of ${b.from}–${b.to}, ${eta}</span>`;
};

const Row = ({ c }: { c: Chain }): VNode => html`<tr data-chain=${c.chain}>
  <td>${c.chain}</td>
  <td class="head">${c.head}</td>
  <td>${c.confirmed}</td>
  <td>${c.nodeHead}</td>
  <td>
    <span class=${c.upstream === 'ok' ? 'ok' : 'problem'}>${c.upstream}</span>
    ${c.stalled === true ? html` <span class="problem">stalled</span>` : null}
    ${c.node === undefined ? null : html`<div class="muted">${c.node}</div>`}
    ${c.lastError === undefined ? null : html`<div class="problem">${c.lastError}</div>`}
  </td>
  <td><${Backfill} b=${c.backfill} head=${c.head} /></td>
  <td>${c.indexed === undefined ? '' : c.indexed === null ? 'not yet' : `${Math.max(0, c.head - c.indexed)} blocks`}</td>
</tr>`;

/** Each followed chain: its head, confirmed height, node, backfill and index lag, read every 2 s. */
export const Chains = (): VNode => {
  const health = usePoll(readHealth, 2_000);
  const h = health.data;
  let body: unknown = null;
  if (h !== undefined && h.chains === undefined)
    body =
      h.status === 'starting'
        ? html`<p>The server is starting${h.starting === undefined ? '' : `: ${h.starting.join(', ')}`}.</p>`
        : html`<p class="muted">The operator closed the chains' details to this page (CHAINPOST_METRICS_KEY is set).</p>`;
  else if (h?.chains !== undefined)
    body = html`<table>
      <thead><tr><th>chain</th><th>head</th><th>confirmed</th><th>node's head</th><th>node</th><th>backfill</th><th>index lag</th></tr></thead>
      <tbody>${h.chains.map((c) => html`<${Row} key=${c.chain} c=${c} />`)}</tbody>
    </table>`;
  return html`<${Panel} id="chains" title="Chains">
    <${Problem} text=${health.error} />
    ${body}
  </${Panel}>`;
};
