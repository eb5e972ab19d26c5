import { api, ApiError, session } from './api.js';
import { html, useState, type VNode } from './preact.js';
import { attempt, type Outcome, OutcomeLine, Panel, Problem, usePoll, when } from './ui.js';

/** A key of the tenant's (GET /keys): never the key itself. */
interface Key {
  id: string;
  name: string;
  email: string | null;
  createdAt: string;
  expiresAt: string | null;
  replacedBy: string | null;
  current: boolean;
}

/** A key made by create or rotate: shown once, here. */
const NewKey = ({ shown }: { shown: Shown | undefined }): VNode | null =>
  shown === undefined
    ? null
    : html`<div class="new-key" role="status">
        <p>The new key of <b>${shown.name}</b>, shown this once: keep it now.</p>
        <code class="secret">${shown.key}</code>
      </div>`;

/** A key just made: its name and the key itself. */
interface Shown {
  name: string;
  key: string;
}

const KeyRow = ({
  k,
  changed,
  made,
  revoked,
}: {
  k: Key;
  changed: () => void;
  made: (m: Shown) => void;
  /** A key of this name was revoked: its key, if shown, is shown no more. */
  revoked: (name: string) => void;
}): VNode => {
  const [outcome, setOutcome] = useState<Outcome | undefined>(undefined);
  const [confirming, setConfirming] = useState(false);
  const [grace, setGrace] = useState('0');
  const rotate = async (): Promise<void> => {
    setOutcome(
      await attempt(async () => {
        const r = await api<{ key: string; id: string; name: string; oldExpiresAt: string }>(`keys/${k.id}/rotate`, {
          method: 'POST',
          json: { graceSeconds: Number(grace) },
        });
        // The page's own key rotated: it goes on with the new one.
        if (k.current) session.signIn(r.key);
        made({ name: r.name, key: r.key });
        return `rotated: the old key works until ${when(r.oldExpiresAt)}`;
      }),
    );
    changed();
  };
  const revoke = async (): Promise<void> => {
    setConfirming(false);
    setOutcome(
      await attempt(async () => {
        await api(`keys/${k.id}`, { method: 'DELETE' });
        revoked(k.name);
        return 'revoked';
      }),
    );
    changed();
  };
  return html`<tr data-key=${k.id}>
    <td class="name">${k.name}${k.current ? html` <span class="current">(this page's)</span>` : null}</td>
    <td>${k.email ?? ''}</td>
    <td>${when(k.createdAt)}</td>
    <td>${k.expiresAt === null ? '' : when(k.expiresAt)}${k.replacedBy === null ? '' : ' (rotated)'}</td>
    <td class="actions">
      <label class="grace">grace s <input type="number" min="0" max="604800" value=${grace}
        onInput=${(e: Event) => setGrace((e.currentTarget as HTMLInputElement).value)} /></label>
      <button type="button" class="rotate" onClick=${rotate}>Rotate</button>
      ${
        confirming
          ? html`<button type="button" class="confirm-revoke" onClick=${revoke}>Confirm revoke</button>
              <button type="button" class="cancel" onClick=${() => setConfirming(false)}>Cancel</button>`
          : html`<button type="button" class="revoke" onClick=${() => setConfirming(true)}>Revoke</button>`
      }
      <${OutcomeLine} outcome=${outcome} />
    </td>
  </tr>`;
};

/** The tenant's keys in use: list, create, rotate (with a grace period), revoke. */
export const Keys = (): VNode => {
  const keys = usePoll(async () => {
    try {
      return await api<{ result: Key[]; total: number }>('keys');
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return null;
      throw err;
    }
  }, 10_000);
  const [made, setMade] = useState<Shown | undefined>(undefined);
  const [outcome, setOutcome] = useState<Outcome | undefined>(undefined);
  const create = async (e: Event): Promise<void> => {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const f = new FormData(form);
    const email = String(f.get('email') ?? '');
    setOutcome(
      await attempt(async () => {
        const r = await api<{ key: string; id: string; name: string }>('keys', {
          method: 'POST',
          json: { name: String(f.get('name') ?? ''), ...(email === '' ? {} : { email }) },
        });
        setMade({ name: r.name, key: r.key });
        form.reset();
        return `created ${r.name}`;
      }),
    );
    keys.refresh();
  };
  const list = keys.data;
  return html`<${Panel} id="keys" title="API keys">
    <${Problem} text=${keys.error} />
    <${NewKey} shown=${made} />
    ${
      list === undefined
        ? html`<p class="muted">Reading…</p>`
        : list === null
          ? html`<p class="muted">This server has no key endpoints (GET /keys); the CLI manages keys.</p>`
          : html`<table>
            <thead><tr><th>name</th><th>e-mail</th><th>created</th><th>expires</th><th></th></tr></thead>
            <tbody>${list.result.map(
              (k) => html`<${KeyRow}
                key=${k.id}
                k=${k}
                changed=${keys.refresh}
                made=${setMade}
                revoked=${(name: string) => setMade((m: Shown | undefined) => (m?.name === name ? undefined : m))}
              />`,
            )}</tbody>
          </table>
          <form id="create-key" class="create" onSubmit=${create}>
            <h3>New key</h3>
            <label>Name <input name="name" required pattern="[A-Za-z0-9][A-Za-z0-9_.\\-]{0,63}" /></label>
            <label>E-mail (alerts) <input name="email" type="email" /></label>
            <button type="submit">Create key</button>
            <${OutcomeLine} outcome=${outcome} />
          </form>`
    }
  </${Panel}>`;
};
