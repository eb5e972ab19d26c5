import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  createPublicClient,
  createWalletClient,
  getAddress,
  http,
  parseAbi,
  type Abi,
  type Chain,
  type Hex,
  type LocalAccount,
  type PublicClient,
  type TransactionReceipt,
  type Transport,
  type WalletClient,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { anvil } from 'viem/chains';

/**
 * The Solidity contracts of test/contracts, compiled with solc-js and deployed
 * on an anvil devnet (see startAnvil), for end-to-end tests of EVM streams.
 */

export const CONTRACT_NAMES = [
  'TestToken',
  'TestNFT',
  'TestMulti',
  'Forwarder',
  'TestReceiver',
  'TestMarket',
  'TestEmitter',
  'TestENSRegistry',
  'TestENSResolver',
  'TestReverseRegistrar',
  'TestV2Factory',
  'TestV2Pair',
  'TestV2Router',
  'TestV3Factory',
  'TestV3Pool',
  'TestFakePair',
  'TestV4PoolManager',
  'TestPositionManager',
  'TestSpin',
] as const;
export type ContractName = (typeof CONTRACT_NAMES)[number];

export interface Compiled {
  abi: Abi;
  bytecode: Hex;
}

const SOURCES = new URL('./contracts/', import.meta.url);

interface SolcOutput {
  errors?: { severity: 'error' | 'warning' | 'info'; formattedMessage: string }[];
  contracts?: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>;
}

let compiled: Record<ContractName, Compiled> | undefined;

/** Compiles every .sol file of test/contracts, once per process; throws with solc's errors. */
export function compileContracts(): Record<ContractName, Compiled> {
  if (compiled !== undefined) return compiled;
  const dir = fileURLToPath(SOURCES);
  const sources: Record<string, { content: string }> = {};
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.sol'))
    .sort())
    sources[file] = { content: readFileSync(join(dir, file), 'utf8') };
  const input = {
    language: 'Solidity',
    sources,
    settings: {
      optimizer: { enabled: true, runs: 200 },
      // Pinned: solc's default target can be newer than the hardfork of the node under test.
      evmVersion: 'cancun',
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
    },
  };
  const output = JSON.parse(solcOutput(JSON.stringify(input))) as SolcOutput;
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(`solc failed:\n${errors.map((e) => e.formattedMessage).join('\n')}`);
  const found: Partial<Record<ContractName, Compiled>> = {};
  for (const contracts of Object.values(output.contracts ?? {})) {
    for (const [name, c] of Object.entries(contracts)) {
      if (!(CONTRACT_NAMES as readonly string[]).includes(name)) continue;
      if (found[name as ContractName] !== undefined) throw new Error(`contract ${name} is defined twice in ${dir}`);
      found[name as ContractName] = { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
    }
  }
  const missing = CONTRACT_NAMES.filter((n) => found[n] === undefined);
  if (missing.length > 0) throw new Error(`no contract ${missing.join(', ')} in ${dir}`);
  return (compiled = found as Record<ContractName, Compiled>);
}

const require = createRequire(import.meta.url);

/**
 * solc's answer to `input`, kept on disk by the hash of the input and the compiler's version: some twenty test
 * files compile the same sources, each in a process of its own, and solc-js takes seconds each time. The version is
 * solc's package's (one compiler release each): loading the compiler itself costs most of a CPU-second, so it is
 * loaded only when the answer is not on disk yet.
 */
function solcOutput(input: string): string {
  const version = (require('solc/package.json') as { version: string }).version;
  const dir = join(tmpdir(), 'chainpost-solc');
  const file = join(dir, `${createHash('sha256').update(`solc ${version}`).update(input).digest('hex')}.json`);
  try {
    return readFileSync(file, 'utf8');
  } catch {}
  const solc = require('solc') as { compile(input: string): string };
  const output = solc.compile(input);
  mkdirSync(dir, { recursive: true });
  // Written aside, then renamed: a process reading it at the same time sees all of it or none.
  const part = `${file}.${process.pid}`;
  writeFileSync(part, output);
  renameSync(part, file);
  return output;
}

/** anvil's first three dev accounts (its well-known test mnemonic), all funded with 10,000 ETH. */
export const DEV_ACCOUNTS = [
  privateKeyToAccount('0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80'),
  privateKeyToAccount('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d'),
  privateKeyToAccount('0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a'),
] as const;

// startAnvil picks the chain id (1337 unless told), so ask the node rather than assume viem's anvil (31337). Asked
// each time, not kept by URL: a later anvil in the same process (the shared project) may get the port of one gone.
const chainOf = async (rpcUrl: string): Promise<Chain> => ({
  ...anvil,
  id: await publicClient(rpcUrl).getChainId(),
  rpcUrls: { default: { http: [rpcUrl] } },
});

/** A public client on the node; polls fast, since anvil mines at once. */
export const publicClient = (rpcUrl: string): PublicClient => createPublicClient({ transport: http(rpcUrl), pollingInterval: 50 });

/** A wallet client on the node, signing locally as `account` (the first dev account unless told). */
export const walletClient = async (
  rpcUrl: string,
  account: LocalAccount = DEV_ACCOUNTS[0],
): Promise<WalletClient<Transport, Chain, LocalAccount>> =>
  createWalletClient({ account, chain: await chainOf(rpcUrl), transport: http(rpcUrl) });

export interface Deployed {
  address: Hex;
  abi: Abi;
  receipt: TransactionReceipt;
}

/** Deploys a compiled contract (from the first dev account unless told) and waits for it to be mined. */
export async function deploy(
  rpcUrl: string,
  name: ContractName,
  args: readonly unknown[] = [],
  account: LocalAccount = DEV_ACCOUNTS[0],
): Promise<Deployed> {
  const { abi, bytecode } = compileContracts()[name];
  const hash = await (await walletClient(rpcUrl, account)).deployContract({ abi, bytecode, args });
  const receipt = await mined(rpcUrl, hash);
  if (receipt.contractAddress == null) throw new Error(`deploying ${name} created no contract (tx ${hash})`);
  return { address: getAddress(receipt.contractAddress), abi, receipt };
}

export interface Write {
  address: Hex;
  abi: Abi;
  functionName: string;
  args?: readonly unknown[];
  value?: bigint;
  /** The sender; the first dev account unless told. */
  account?: LocalAccount;
}

/** Sends a contract write and waits for its receipt; throws if it reverted. */
export async function write(rpcUrl: string, w: Write): Promise<TransactionReceipt> {
  const wallet = await walletClient(rpcUrl, w.account);
  const hash = await wallet.writeContract({
    address: w.address,
    abi: w.abi,
    functionName: w.functionName,
    args: w.args ?? [],
    value: w.value,
  });
  return mined(rpcUrl, hash);
}

/** How long a transaction gets to be mined: anvil mines at once; viem's own wait (3 minutes) outlasts a test's hooks. */
const MINED_WITHIN_MS = 30_000;
/** How long the node gets to answer whether it still does, once a transaction was not mined: one try, no retries. */
const ANSWERS_WITHIN_MS = 2_000;

/**
 * Waits for a transaction's receipt; throws if it reverted, or if it was not mined within `withinMs`, saying whether
 * the node still answers (viem's wait polls through a dead node's errors until its timeout). That question is asked
 * once, briefly: with the client's retries a node that takes connections and never answers held it 41 s more.
 */
export async function mined(rpcUrl: string, hash: Hex, withinMs = MINED_WITHIN_MS): Promise<TransactionReceipt> {
  const receipt = await publicClient(rpcUrl)
    .waitForTransactionReceipt({ hash, timeout: withinMs })
    .catch(async (err: Error) => {
      const once = createPublicClient({ transport: http(rpcUrl, { timeout: ANSWERS_WITHIN_MS, retryCount: 0 }) });
      const node = await once.getBlockNumber({ cacheTime: 0 }).then(
        (head) => `the node answers, head ${head}`,
        (e: Error) => `the node does not answer: ${e.message.split('\n')[0]}`,
      );
      throw new Error(
        `transaction ${hash} was not mined within ${withinMs / 1000} s on ${rpcUrl} (${node}): ${err.message.split('\n')[0]}`,
      );
    });
  if (receipt.status !== 'success') throw new Error(`transaction ${hash} reverted`);
  return receipt;
}

/** The ERC-20 events, for decoding token logs in tests. */
export const ERC20_ABI = parseAbi([
  'event Transfer(address indexed from, address indexed to, uint256 value)',
  'event Approval(address indexed owner, address indexed spender, uint256 value)',
]);
