import type { BitcoinStreamDefinition } from '../../engine/bitcoin/stream.js';

/** A Bitcoin mainnet stream's definition with inputs and outputs, watching nothing yet (engine tests). */
export const bitcoinDefinition = (webhookUrl: string, tag: string): BitcoinStreamDefinition => ({
  webhookUrl,
  description: '',
  tag,
  network: ['mainnet'],
  includeInputs: true,
  includeOutputs: true,
  allAddresses: false,
  demo: false,
});
