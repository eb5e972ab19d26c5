import { findChain } from '../chains/registry.js';
import { badRequest } from '../errors.js';
import { FilterSet } from '../match/filter-set.js';
import type { BuildWebhook } from '../match/build.js';
import type { ReplayFamily } from '../match/block-replay.js';
import { compileSolanaFilter, walkSolanaProbe } from './filter.js';
import { SOLANA_CHAIN, type SolanaStreamRecord } from './stream.js';

/** A definition to match a slot with (POST /streams/solana/:chainId/block/:n; notes §2.1). */
export interface SolanaBlockRequest {
  tag: string;
  allAddresses: boolean;
  addresses: string[];
  programIds: string[];
  mintAddresses: string[];
}

/** The request's definition as a stream of no id, and its addresses. */
export const solanaDefinition = (req: SolanaBlockRequest): [SolanaStreamRecord, string[]] => [
  {
    id: '',
    tag: req.tag,
    allAddresses: req.allAddresses,
    programIds: req.programIds,
    mintAddresses: req.mintAddresses,
  } as SolanaStreamRecord,
  req.addresses,
];

/** Solana's block endpoints (engine/match/block-replay.ts): slot numbers, the stream's three selectors. */
export const solanaReplay = (build: BuildWebhook<SolanaStreamRecord>): ReplayFamily<SolanaStreamRecord> => ({
  chain: SOLANA_CHAIN,
  checkChain,
  filter: (stream, addresses) =>
    new FilterSet(
      compileSolanaFilter(0, [
        { index: 0, addresses, programIds: stream.programIds, mintAddresses: stream.mintAddresses, allAddresses: stream.allAddresses },
      ]),
      walkSolanaProbe,
    ),
  build,
});

/** The path's chainId: Solana mainnet by its registry names, or `mainnet` and `solana_mainnet` as the hosted service writes it. */
function checkChain(chainId: string): void {
  const id = chainId.toLowerCase();
  if (id !== 'mainnet' && id !== 'solana_mainnet' && findChain(chainId)?.key !== SOLANA_CHAIN)
    throw badRequest(
      'chainId',
      `${chainId} is not Solana mainnet (mainnet, solana_mainnet, solana, sol or solana-mainnet): only Solana mainnet is followed`,
    );
}
