import { afterAll, beforeAll, beforeEach } from 'vitest';
import { startChainpost, stopAndClean, type Running } from './helpers.js';
import { startReceiver, startSmtp } from './receiver.js';

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;
export type Smtp = Awaited<ReturnType<typeof startSmtp>>;

export interface DeliveryEnv {
  s: Running;
  rx: Receiver;
  smtp: Smtp;
}

/**
 * For the enclosing describe: the real server on the test clock (no chain), a
 * webhook receiver and an SMTP server for its alerts (to ops@example.org), given
 * to `use` once started; each test starts with the receiver answering 200.
 */
export function deliveryEnv(use: (env: DeliveryEnv) => void): void {
  let env: DeliveryEnv | undefined;
  beforeAll(async () => {
    const rx = await startReceiver();
    const smtp = await startSmtp();
    const s = await startChainpost({ CHAINPOST_TEST_CLOCK: '1', CHAINPOST_NOW: '2026-11-22T12:00:00Z', CHAINPOST_RATE_LIMIT: '0', CHAINPOST_SMTP_URL: smtp.url, CHAINPOST_ALERT_EMAIL: 'ops@example.org' });
    env = { s, rx, smtp };
    use(env);
  });
  afterAll(async () => {
    await stopAndClean(env?.s);
    await env?.rx.close();
    await env?.smtp.close();
  });
  beforeEach(() => {
    env!.rx.state.answer = () => 200;
    env!.rx.state.answerTests = () => 200;
  });
}
