import { decodeFunctionResult, encodeFunctionData, hexToString, parseAbi } from 'viem/utils';
import type { Hex } from 'viem';
import type { Kv } from '../ports.js';

/**
 * What a webhook says about a token contract: name, symbol and decimals, its
 * standard, and whether it looks like spam. Read once per contract by eth_call
 * and kept in the store, so a restart does not ask again.
 */
export interface TokenInfo {
  name: string;
  symbol: string;
  /** null when the contract has no decimals() (NFTs). */
  decimals: number | null;
  /** By ERC-165: ERC1155, ERC721, or '' when the contract says neither. */
  nftStandard: 'ERC721' | 'ERC1155' | '';
  possibleSpam: boolean;
}

/** eth_call on a chain's node (with `gas` when given): the return data, or null when the call reverts or the node refuses it. */
export type ChainCall = (
  chain: string,
  to: string,
  data: Hex,
  block: number | 'latest',
  from?: string,
  gas?: bigint,
) => Promise<Hex | null>;
/** eth_getCode on a chain's node: '0x' for an account without code, null when the node cannot say. */
export type ChainCode = (chain: string, address: string, block: 'latest') => Promise<Hex | null>;

/** Reads made while the contract had no code are kept in memory up to this many; past it they are all forgotten (read again when asked). */
const MAX_CODELESS = 10_000;

const ABI = parseAbi([
  'function name() view returns (string)',
  'function symbol() view returns (string)',
  'function decimals() view returns (uint8)',
  'function supportsInterface(bytes4) view returns (bool)',
]);
const ERC721_ID = '0x80ac58cd';
const ERC1155_ID = '0xd9b67a26';

/**
 * Possible spam from the token's own metadata: a name or symbol that advertises
 * a link or a claim (the airdrop-scam pattern). The hosted service also uses
 * labels it does not publish; this is the part that can be decided locally.
 */
function looksLikeSpam(name: string, symbol: string): boolean {
  return /https?:\/\/|www\.|\.(com|io|org|net|xyz|app|site|top|gift|claims?)\b|\bclaim|\bvisit\b|\brewards?\b|\bairdrop/i.test(
    `${name} ${symbol}`,
  );
}

/**
 * A read where eth_getCode finds no code (an address asked about before its contract is deployed, a pricing
 * registry's token named before it exists on a devnet) is not stored: kept in memory and answered as read
 * until the contract appears in an indexed block (`appeared`), then read again; else its empty name and
 * missing decimals would stay for good.
 */
export class TokenMetadata {
  private readonly cache = new Map<string, Promise<TokenInfo>>();
  /** Keys of `cache` whose read found no code. */
  private readonly codeless = new Set<string>();

  /** `code`: without it (stand-ins with no node) every read is stored. */
  constructor(
    private readonly kv: Kv,
    private readonly call: ChainCall,
    private readonly code?: ChainCode,
  ) {}

  /** The contract took part in an indexed block (emitted a log, or was created): a read made while it had no code is made again. */
  appeared(chain: string, contract: string): void {
    if (this.codeless.size === 0) return;
    const key = `${chain}/${contract.toLowerCase()}`;
    if (this.codeless.delete(key)) this.cache.delete(key);
  }

  /** What the store holds of a contract, without asking its node: undefined when it was never read. */
  stored(chain: string, contract: string): TokenInfo | undefined {
    return this.kv.get<TokenInfo>('tokens', `${chain}/${contract.toLowerCase()}`);
  }

  get(chain: string, contract: string): Promise<TokenInfo> {
    const key = `${chain}/${contract.toLowerCase()}`;
    let info = this.cache.get(key);
    if (info === undefined) {
      const stored = this.stored(chain, contract);
      info = stored !== undefined ? Promise.resolve(stored) : this.read(chain, contract, key);
      this.cache.set(key, info);
      // A failed read (node unreachable) is not cached: the next block asks again.
      info.catch(() => this.cache.delete(key));
    }
    return info;
  }

  private async read(chain: string, contract: string, key: string): Promise<TokenInfo> {
    const [name, symbol, decimals, is1155, is721, code] = await Promise.all([
      this.text(chain, contract, 'name'),
      this.text(chain, contract, 'symbol'),
      this.view(chain, contract, 'decimals', []),
      this.view(chain, contract, 'supportsInterface', [ERC1155_ID]),
      this.view(chain, contract, 'supportsInterface', [ERC721_ID]),
      this.code?.(chain, contract, 'latest'),
    ]);
    const info: TokenInfo = {
      name,
      symbol,
      decimals: typeof decimals === 'number' ? decimals : null,
      nftStandard: is1155 === true ? 'ERC1155' : is721 === true ? 'ERC721' : '',
      possibleSpam: looksLikeSpam(name, symbol),
    };
    if (code === '0x') this.keepCodeless(key);
    // Committed off the event loop: a catch-up meets hundreds of new contracts, each a commit and its fsync.
    else await this.kv.transactAsync(() => this.kv.put('tokens', key, info));
    return info;
  }

  private keepCodeless(key: string): void {
    if (this.codeless.size >= MAX_CODELESS) {
      for (const k of this.codeless) this.cache.delete(k);
      this.codeless.clear();
    }
    this.codeless.add(key);
  }

  private async view(
    chain: string,
    contract: string,
    functionName: 'decimals' | 'supportsInterface' | 'name' | 'symbol',
    args: readonly unknown[],
  ): Promise<unknown> {
    const out = await this.call(chain, contract, encodeFunctionData({ abi: ABI, functionName, args } as never), 'latest');
    if (out === null || out === '0x') return undefined;
    try {
      return decodeFunctionResult({ abi: ABI, functionName, data: out } as never);
    } catch {
      return functionName === 'name' || functionName === 'symbol' ? bytes32Text(out) : undefined;
    }
  }

  /** name() and symbol(): a string, or a bytes32 on old tokens (MKR, SAI); '' when neither. */
  private async text(chain: string, contract: string, functionName: 'name' | 'symbol'): Promise<string> {
    const v = await this.view(chain, contract, functionName, []);
    return typeof v === 'string' ? v : '';
  }
}

function bytes32Text(out: Hex): string | undefined {
  if (out.length !== 66) return undefined;
  try {
    return hexToString(out, { size: 32 }).replace(/\0+$/, '');
  } catch {
    return undefined;
  }
}
