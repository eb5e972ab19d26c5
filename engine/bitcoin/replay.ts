import { badRequest } from '../errors.js';
import { findChain } from '../chains/registry.js';
import { FilterSet } from '../match/filter-set.js';
import type { BuildWebhook } from '../match/build.js';
import type { ReplayFamily } from '../match/block-replay.js';
import { compileBitcoinFilter, walkBitcoinProbe } from './filter.js';
import { BITCOIN_CHAIN, type BitcoinStreamRecord } from './stream.js';
import type { XpubWindows } from './xpub-windows.js';

/** A definition to match a block with (POST /streams/bitcoin/:chainId/block/:n; notes §1.2): addresses in their stored forms. */
export interface BlockRequest {
  tag: string;
  allAddresses: boolean;
  includeInputs: boolean;
  includeOutputs: boolean;
  addresses: string[];
}

/** The request's definition as a stream of no id (no xpubs) and its addresses. */
export const bitcoinDefinition = (req: BlockRequest): [BitcoinStreamRecord, string[]] => [
  {
    id: '',
    tag: req.tag,
    includeInputs: req.includeInputs,
    includeOutputs: req.includeOutputs,
    allAddresses: req.allAddresses,
  } as BitcoinStreamRecord,
  req.addresses,
];

/** Bitcoin's block endpoints (engine/match/block-replay.ts): a stream's addresses and the addresses its xpubs derive. */
export const bitcoinReplay = (build: BuildWebhook<BitcoinStreamRecord>, windows: XpubWindows): ReplayFamily<BitcoinStreamRecord> => ({
  chain: BITCOIN_CHAIN,
  checkChain,
  filter: (stream, addresses) =>
    new FilterSet(
      compileBitcoinFilter(0, [{ index: 0, addresses, derived: windows.keysOf(stream.id), allAddresses: stream.allAddresses }]),
      walkBitcoinProbe,
    ),
  build,
});

/**
 * The path's chainId: Bitcoin mainnet by any of its registry names, or `mainnet` as the hosted service's
 * examples write it (a name the registry gives Ethereum, so it is taken here, under /streams/bitcoin only).
 */
function checkChain(chainId: string): void {
  if (chainId.toLowerCase() !== 'mainnet' && findChain(chainId)?.key !== BITCOIN_CHAIN)
    throw badRequest(
      'chainId',
      `${chainId} is not Bitcoin mainnet (mainnet, bitcoin, btc, btc-mainnet or bitcoin-mainnet): only Bitcoin mainnet is followed`,
    );
}
