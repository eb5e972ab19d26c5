import type { Kv } from '../ports.js';
import { START_RATE } from './success-rate.js';

/** The success rates per `tenant/webhookUrl` (engine/delivery/success-rate.ts): read and written inside a write transaction. */
export interface RateStore {
  get(key: string): number | undefined;
  put(key: string, rate: number): void;
}

/** The rates in the store's `rates` table. */
export const kvRates = (kv: Kv): RateStore => ({
  get: (key) => kv.get<number>('rates', key),
  put: (key, rate) => kv.put('rates', key, rate),
});

/** A success rate's key: per tenant and webhook URL. */
export const rateKey = (tenant: string, url: string): string => `${tenant}/${url}`;

/** One transaction's rates: each read once, changed in memory, written once at its close. */
export class RateWrite {
  private readonly rates = new Map<string, number>();

  constructor(private readonly store: RateStore) {}

  rate(key: string): number {
    let r = this.rates.get(key);
    if (r === undefined) {
      r = this.store.get(key) ?? START_RATE;
      this.rates.set(key, r);
    }
    return r;
  }

  set(key: string, rate: number): void {
    this.rates.set(key, rate);
  }

  close(): void {
    for (const [key, r] of this.rates) this.store.put(key, r);
  }
}
