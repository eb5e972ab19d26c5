import { randomAlphanumeric } from '../random.js';
import type { Kv } from '../ports.js';

/** Per-tenant streams settings: the secret that signs webhooks (made at first use) and the region. */
export interface Settings {
  secretKey: string;
  region: string;
}

/** Where a tenant's first settings are written: the control plane (engine/streams/control-plane.ts, which imports this file). */
export interface SettingsWriter {
  write(change: { kind: 'settings.set'; tenant: string; settings: Settings; first: true }): Promise<Settings>;
}

/**
 * The tenant's settings, made at their first use by a settings change through the control plane: the writer picks
 * the secret and applying it keeps what the tenant has already, so two nodes making them at once both answer the
 * first in the log's order, and every node signs with the same secret.
 */
export async function settingsOf(kv: Kv, plane: SettingsWriter, tenant: string): Promise<Settings> {
  return (
    kv.get<Settings>('settings', tenant) ??
    plane.write({ kind: 'settings.set', tenant, settings: { secretKey: randomAlphanumeric(32), region: 'us-east-1' }, first: true })
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
