import { formatUnits } from 'viem/utils';

/**
 * How the Data API writes chain values (the hosted service's conventions),
 * shared by every endpoint group: quantities as decimal strings, the zero
 * address of mints and burns, and the native currency where a token is named.
 */

/** A hex quantity (a node's `0x…`) as the decimal string the Data API answers. */
export const dec = (hex: string): string => BigInt(hex).toString();

/** The sender of a mint and the receiver of a burn. */
export const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';

/** The native currency where the hosted service names a token (the registry names none per chain, so Ether's). */
export const NATIVE = { address: '0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee', name: 'Ether', symbol: 'ETH', decimals: 18 } as const;

/** An amount in the token's units; decimals() is optional in ERC-20, a token without it counts whole units. */
export const formatted = (raw: bigint, decimals: number | null): string => formatUnits(raw, decimals ?? 0);
