/**
 * The chain registry: every chain the interface names, with its ids, slug,
 * family, confirmation depth and block time. Depths follow the hosted
 * service's documented defaults (CONVENTIONS.md): eth 12, bsc 18, arbitrum 18,
 * polygon 100, base 100, optimism 500, avalanche 100, others 12; Bitcoin 2
 * blocks, Solana 100 slots.
 */
export type ChainFamily = 'evm' | 'bitcoin' | 'solana' | 'aptos';

export interface Chain {
  /** Canonical key: the hex id for EVM chains, the family name otherwise (`aptos:testnet`). */
  readonly key: string;
  /** Hex id (`0x1`); for Aptos the network's own chain id; null where the chain has none. */
  readonly hexId: string | null;
  readonly decimalId: number | null;
  /** The slug clients send in `chain=` and node-access paths (`eth`, `base`, `devnet`). */
  readonly slug: string;
  /** Other names the hosted service accepts for the same chain. */
  readonly aliases: readonly string[];
  readonly name: string;
  readonly family: ChainFamily;
  readonly testnet: boolean;
  readonly confirmations: number;
  readonly blockTimeMs: number;
}

type EvmRow = [
  decimalId: number,
  slug: string,
  name: string,
  confirmations: number,
  blockTimeMs: number,
  testnet: boolean,
  aliases?: string[],
];

// Decimal id, slug, name, confirmations, block time (ms), testnet, aliases.
const EVM: EvmRow[] = [
  [1, 'eth', 'Ethereum', 12, 12_000, false, ['ethereum', 'mainnet']],
  [5, 'goerli', 'Goerli', 12, 12_000, true],
  [10, 'optimism', 'Optimism', 500, 2_000, false],
  [25, 'cronos', 'Cronos', 12, 6_000, false],
  [56, 'bsc', 'BNB Smart Chain', 18, 3_000, false, ['binance']],
  [97, 'bsc testnet', 'BNB Smart Chain testnet', 18, 3_000, true, ['bsc-testnet']],
  [100, 'gnosis', 'Gnosis', 12, 5_000, false],
  [137, 'polygon', 'Polygon', 100, 2_000, false, ['matic']],
  [250, 'fantom', 'Fantom', 12, 1_000, false],
  [338, 'cronos testnet', 'Cronos testnet', 12, 6_000, true, ['cronos-testnet']],
  [369, 'pulse', 'PulseChain', 12, 10_000, false],
  [420, 'optimism goerli', 'Optimism Goerli', 500, 2_000, true, ['optimism-goerli']],
  [747, 'flow', 'Flow EVM', 12, 1_000, false],
  [545, 'flow-testnet', 'Flow EVM testnet', 12, 1_000, true],
  [1135, 'lisk', 'Lisk', 12, 2_000, false],
  [1284, 'moonbeam', 'Moonbeam', 12, 6_000, false],
  [1285, 'moonriver', 'Moonriver', 12, 6_000, false],
  [1287, 'moonbase', 'Moonbase Alpha', 12, 6_000, true],
  [1337, 'devnet', 'chainpost devnet (anvil)', 12, 1_000, true, ['local', 'localdevchain', 'dev']],
  [2020, 'ronin', 'Ronin', 12, 3_000, false],
  [2021, 'ronin-testnet', 'Ronin Saigon', 12, 3_000, true],
  [4202, 'lisk-sepolia', 'Lisk Sepolia', 12, 2_000, true, ['lisk sepolia']],
  [8453, 'base', 'Base', 100, 2_000, false],
  [10200, 'gnosis testnet', 'Gnosis Chiado', 12, 5_000, true, ['chiado', 'gnosis-testnet']],
  [17000, 'holesky', 'Holesky', 12, 12_000, true],
  [42161, 'arbitrum', 'Arbitrum One', 18, 250, false],
  [43113, 'avalanche testnet', 'Avalanche Fuji', 100, 2_000, true, ['fuji', 'avalanche-testnet']],
  [43114, 'avalanche', 'Avalanche C-Chain', 100, 2_000, false],
  [59141, 'linea sepolia', 'Linea Sepolia', 12, 2_000, true, ['linea-sepolia']],
  [59144, 'linea', 'Linea', 12, 2_000, false],
  [80001, 'mumbai', 'Polygon Mumbai', 100, 2_000, true],
  [80002, 'polygon amoy', 'Polygon Amoy', 100, 2_000, true, ['amoy', 'polygon-amoy']],
  [84531, 'base goerli', 'Base Goerli', 100, 2_000, true, ['base-goerli']],
  [84532, 'base sepolia', 'Base Sepolia', 100, 2_000, true, ['base-sepolia']],
  [88882, 'chiliz testnet', 'Chiliz Spicy', 12, 3_000, true, ['chiliz-testnet']],
  [88888, 'chiliz', 'Chiliz', 12, 3_000, false],
  [11155111, 'sepolia', 'Sepolia', 12, 12_000, true],
];

const evm = (row: EvmRow): Chain => {
  const [decimalId, slug, name, confirmations, blockTimeMs, testnet, aliases = []] = row;
  const hexId = `0x${decimalId.toString(16)}`;
  return { key: hexId, hexId, decimalId, slug, aliases, name, family: 'evm', testnet, confirmations, blockTimeMs };
};

export const CHAINS: readonly Chain[] = [
  ...EVM.map(evm),
  {
    key: 'bitcoin',
    hexId: null,
    decimalId: null,
    slug: 'bitcoin',
    aliases: ['btc', 'bitcoin-mainnet', 'btc-mainnet'],
    name: 'Bitcoin',
    family: 'bitcoin',
    testnet: false,
    confirmations: 2,
    blockTimeMs: 600_000,
  },
  {
    key: 'solana',
    hexId: null,
    decimalId: null,
    slug: 'solana',
    aliases: ['sol', 'solana-mainnet'],
    name: 'Solana',
    family: 'solana',
    testnet: false,
    confirmations: 100,
    blockTimeMs: 400,
  },
  {
    key: 'solana:devnet',
    hexId: null,
    decimalId: null,
    slug: 'solana-devnet',
    aliases: [],
    name: 'Solana devnet',
    family: 'solana',
    testnet: true,
    confirmations: 100,
    blockTimeMs: 400,
  },
  {
    key: 'solana:testnet',
    hexId: null,
    decimalId: null,
    slug: 'solana-testnet',
    aliases: [],
    name: 'Solana testnet',
    family: 'solana',
    testnet: true,
    confirmations: 100,
    blockTimeMs: 400,
  },
  {
    key: 'aptos',
    hexId: '0x1',
    decimalId: 1,
    slug: 'aptos',
    aliases: ['aptos-mainnet'],
    name: 'Aptos mainnet',
    family: 'aptos',
    testnet: false,
    confirmations: 0,
    blockTimeMs: 250,
  },
  {
    key: 'aptos:testnet',
    hexId: '0x2',
    decimalId: 2,
    slug: 'aptos-testnet',
    aliases: [],
    name: 'Aptos testnet',
    family: 'aptos',
    testnet: true,
    confirmations: 0,
    blockTimeMs: 250,
  },
];

const byName = new Map<string, Chain>();
for (const c of CHAINS) {
  // EVM ids are global; Aptos ids (1, 2) would collide with Ethereum's, so Aptos is found by slug only.
  if (c.family === 'evm') {
    byName.set(c.hexId!, c);
    byName.set(String(c.decimalId), c);
  }
  byName.set(c.key, c);
  byName.set(c.slug, c);
  for (const a of c.aliases) byName.set(a, c);
}

/**
 * Finds a chain by hex id (`0x1`, any case, leading zeros allowed), decimal id
 * (`1` or 1) or slug (`eth`). Returns undefined for anything it does not know.
 */
export function findChain(value: string | number): Chain | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? byName.get(String(value)) : undefined;
  const v = value.trim().toLowerCase();
  if (/^0x[0-9a-f]+$/.test(v)) return byName.get(`0x${BigInt(v).toString(16)}`);
  return byName.get(v);
}

/** The EVM chain for `value`, or undefined (Bitcoin, Solana and Aptos are not EVM). */
export function findEvmChain(value: string | number): Chain | undefined {
  const c = findChain(value);
  return c?.family === 'evm' ? c : undefined;
}
