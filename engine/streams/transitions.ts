import { ApiError } from '../errors.js';
import type { StreamStatus } from './model.js';

/**
 * The interface's States and transitions table. The owner may pause, resume,
 * and set an error stream active again; error and terminated are entered by the
 * service only; terminated is final.
 */
export function ownerMaySet(from: StreamStatus, to: 'active' | 'paused'): void {
  if (from === 'terminated') throw new ApiError(400, 'status: a terminated stream stays terminated; create a new stream', { field: 'status' });
  if (from === 'error' && to === 'paused') throw new ApiError(400, 'status: a stream in error can only be set active', { field: 'status' });
}

/** Whether a stream in this state sends webhooks. */
export const sends = (s: StreamStatus): boolean => s === 'active';

/** What happens to a new webhook of a stream in this state. */
export function onNewWebhook(s: StreamStatus): 'queue' | 'history' | 'drop' {
  if (s === 'active') return 'queue';
  // In error the stream keeps saving webhooks in history; paused and terminated streams process no blocks.
  if (s === 'error') return 'history';
  return 'drop';
}
