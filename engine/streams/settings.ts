import { randomAlphanumeric } from '../random.js';
import type { Kv } from '../ports.js';

/** Per-tenant streams settings: the secret that signs webhooks (made at first use) and the region. */
export interface Settings {
  secretKey: string;
  region: string;
}

export function settingsOf(kv: Kv, tenant: string): Settings {
  const found = kv.get<Settings>('settings', tenant);
  if (found !== undefined) return found;
  return kv.transact(() => {
    const again = kv.get<Settings>('settings', tenant);
    if (again !== undefined) return again;
    const made: Settings = { secretKey: randomAlphanumeric(32), region: 'us-east-1' };
    kv.put('settings', tenant, made);
    return made;
  });
}
