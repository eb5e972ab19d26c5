import { api, errorText, session } from './api.js';
import { Chains } from './chains.js';
import { DeliveryLog, FailedDeliveries } from './deliveries.js';
import { Keys } from './keys.js';
import { html, render, useState, type VNode } from './preact.js';
import { Streams } from './streams.js';

/**
 * The operator's dashboard (GET /dashboard): one tenant's view, signed in with one of its API keys. The key is tried
 * with a call before it is kept (in sessionStorage only); every call sends it in x-api-key.
 */

const SignIn = ({ signedIn }: { signedIn: () => void }): VNode => {
  const [problem, setProblem] = useState<string | undefined>(undefined);
  const submit = async (e: Event): Promise<void> => {
    e.preventDefault();
    const key = String(new FormData(e.currentTarget as HTMLFormElement).get('key') ?? '').trim();
    try {
      await api('stats', { key });
      session.signIn(key);
      signedIn();
    } catch (err) {
      setProblem(errorText(err));
    }
  };
  return html`<form id="sign-in" class="panel" onSubmit=${submit}>
    <h2>Sign in</h2>
    <p>With one of the tenant's API keys. It stays in this tab alone (session storage) and is sent in a header.</p>
    <label>API key <input name="key" type="password" autocomplete="off" required /></label>
    <button type="submit">Sign in</button>
    ${problem === undefined ? null : html`<p class="problem" role="alert">${problem}</p>`}
  </form>`;
};

const Dashboard = ({ signOut }: { signOut: () => void }): VNode => html`
  <nav><button type="button" id="sign-out" onClick=${signOut}>Sign out</button></nav>
  <${Chains} />
  <${Streams} />
  <${FailedDeliveries} />
  <${DeliveryLog} />
  <${Keys} />
`;

const App = (): VNode => {
  const [signedIn, setSignedIn] = useState(session.key() !== null);
  const signOut = (): void => {
    session.signOut();
    setSignedIn(false);
  };
  return html`<header><h1>chainpost</h1></header>
    <main>${signedIn ? html`<${Dashboard} signOut=${signOut} />` : html`<${SignIn} signedIn=${() => setSignedIn(true)} />`}</main>`;
};

render(html`<${App} />`, document.getElementById('app')!);
