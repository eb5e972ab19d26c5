import { buildProbe } from '../../../../engine/evm/probe.js';

/**
 * The EVM probe column (engine/evm/probe.ts, as the follower writes it: version 2, with each key's hash lanes) of a
 * block whose one transaction `address` sent, to nobody: what the matcher tests of the watched set probe.
 */
export function probeOf(address: string): Uint8Array {
  return buildProbe({ header: {}, txs: [{ tx: { from: address }, receipt: {}, logs: [] }] as never, internal: null });
}
