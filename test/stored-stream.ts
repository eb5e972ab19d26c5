import type { StoredStream } from '../engine/streams/model.js';

/** A stream record as the control plane's tests write it: active, no addresses, created and updated at `at`. */
export const storedStream = (tenantId: string, id: string, at: number, over: Partial<StoredStream> = {}): StoredStream => ({
  webhookUrl: 'https://example.com/hook',
  description: 'd',
  tag: id,
  demo: false,
  id,
  tenantId,
  status: 'active',
  statusMessage: '',
  createdAt: at,
  updatedAt: at,
  amountOfAddresses: 0,
  ...over,
});
