import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface Received {
  headers: IncomingHttpHeaders;
  raw: string;
  body: any;
  /** The test webhook sent before a create, update or resume (chainId "", or Solana's empty body). */
  test: boolean;
}

/**
 * A real webhook receiver on 127.0.0.1. `answer` decides each status (default
 * 200); test webhooks get 200 unless `answerTests` says otherwise.
 */
export async function startReceiver() {
  const received: Received[] = [];
  const state = {
    answer: (_r: Received): number | 'hang' => 200,
    answerTests: (_r: Received): number => 200,
    /** The answer's body (a receiver's error text, say). */
    text: (_r: Received): string => '',
    /** How long the answer is held back (ms), or until the promise settles. */
    delay: (_r: Received): number | Promise<unknown> => 0,
    /** Called once an answer was handed to the connection (the sender may not have read it yet). */
    answered: (_r: Received): void => {},
  };
  let open = 0;
  const server = createServer((req, res) => {
    open++;
    res.on('close', () => open--);
    const chunks: Buffer[] = [];
    // A sender killed halfway through a POST (the crash tests) resets the connection: that POST never arrived.
    req.on('error', () => {});
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: any;
      try {
        body = JSON.parse(raw);
      } catch {
        body = raw;
      }
      const r: Received = { headers: req.headers, raw, body, test: raw === '' || body?.chainId === '' };
      received.push(r);
      const status = r.test ? state.answerTests(r) : state.answer(r);
      if (status === 'hang') return; // never answers: the sender's timeout decides
      const answer = (): void => void res.writeHead(status, { 'content-type': 'text/plain' }).end(state.text(r), () => state.answered(r));
      const delay = state.delay(r);
      if (typeof delay !== 'number') void delay.then(answer);
      else if (delay > 0) setTimeout(answer, delay);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    webhooks: () => received.filter((r) => !r.test),
    /** Requests not answered yet on connections still open: a hanging one counts until the sender gives up on it. */
    open: () => open,
    state,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface Mail {
  from: string;
  to: string[];
  data: string;
}

/**
 * A real SMTP server on 127.0.0.1 that keeps what it receives; with `auth`, only a client logged in with it may send.
 * `state.hold(data)` answering a promise holds that mail's answer until it settles, then refuses it (451), unkept:
 * a mail whose sender is killed meanwhile is never delivered.
 */
export async function startSmtp(auth?: { user: string; pass: string }) {
  const mails: Mail[] = [];
  const state: { hold?: (data: string) => Promise<void> | undefined } = {};
  const server = new SMTPServer({
    authOptional: auth === undefined,
    // No TLS on loopback: AUTH PLAIN in the clear, as the test's own server allows.
    allowInsecureAuth: true,
    onAuth(a, _session, callback) {
      if (auth !== undefined && a.username === auth.user && a.password === auth.pass) callback(null, { user: a.username });
      else callback(new Error('invalid credentials'));
    },
    disabledCommands: ['STARTTLS'],
    onData(stream, session, callback) {
      let data = '';
      stream.on('data', (c: Buffer) => (data += c.toString()));
      stream.on('end', () => {
        const held = state.hold?.(data);
        if (held !== undefined) {
          void held.then(() => callback(Object.assign(new Error('held, then refused'), { responseCode: 451 })));
          return;
        }
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          data,
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  const login = auth === undefined ? '' : `${encodeURIComponent(auth.user)}:${encodeURIComponent(auth.pass)}@`;
  return {
    url: `smtp://${login}127.0.0.1:${port}`,
    mails,
    state,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
