import { ApiError } from '../errors.js';
import type { StreamStatus } from './model.js';

/**
 * The interface's States and transitions table. The owner may pause, resume,
 * and set an error stream active again; error and terminated are entered by the
 * service only; terminated is final.
 */
export function ownerMaySet(from: StreamStatus, to: 'active' | 'paused'): void {
  if (from === 'terminated')
    throw new ApiError(400, 'status: a terminated stream stays terminated; create a new stream', { field: 'status' });
  if (from === 'error' && to === 'paused') throw new ApiError(400, 'status: a stream in error can only be set active', { field: 'status' });
}

// What a stream in each state does with its webhooks is delivery's rule.
export { onNewWebhook, sends } from '../delivery/stream-port.js';
