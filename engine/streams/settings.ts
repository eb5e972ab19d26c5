import { randomAlphanumeric } from '../random.js';
import type { Kv } from '../ports.js';

/** Per-tenant streams settings: the secret that signs webhooks (made at first use) and the region. */
export interface Settings {
  secretKey: string;
  region: string;
}

/**
 * The tenant's settings, made at their first use. That write is the control plane's settings change applied
 * here at once (applySettings, in its own transaction): the dispatcher reads the secret synchronously to sign.
 */
export function settingsOf(kv: Kv, tenant: string): Settings {
  const found = kv.get<Settings>('settings', tenant);
  if (found !== undefined) return found;
  return kv.transact(() =>
    applySettings(kv, { tenant, settings: { secretKey: randomAlphanumeric(32), region: 'us-east-1' }, first: true }),
  );
}

/** The control plane's settings change (engine/streams/control-plane.ts): the settings written; with `first`, only if the tenant has none (what it has is answered). */
export function applySettings(kv: Kv, change: { tenant: string; settings: Settings; first?: true }): Settings {
  if (change.first === true) {
    const had = kv.get<Settings>('settings', change.tenant);
    if (had !== undefined) return had;
  }
  kv.put('settings', change.tenant, change.settings);
  return change.settings;
}
