import { decodeEventLog, decodeFunctionData, parseAbi } from 'viem/utils';
import type { Abi, AbiParameter, Hex } from 'viem';

/**
 * The `decoded_event` and `decoded_call` of verbose items, for the standard
 * token ABIs only (ERC-20, ERC-721, ERC-1155): no ABI registry is kept here, so
 * anything else decodes to null. ERC-20's and ERC-721's Transfer share a
 * selector and differ in which arguments are indexed: each ABI is tried in turn.
 */

const EVENT_ABIS: readonly Abi[] = [
  parseAbi([
    'event Transfer(address indexed from, address indexed to, uint256 value)',
    'event Approval(address indexed owner, address indexed spender, uint256 value)',
  ]),
  parseAbi([
    'event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)',
    'event Approval(address indexed owner, address indexed approved, uint256 indexed tokenId)',
  ]),
  parseAbi([
    'event ApprovalForAll(address indexed owner, address indexed operator, bool approved)',
    'event TransferSingle(address indexed operator, address indexed from, address indexed to, uint256 id, uint256 value)',
    'event TransferBatch(address indexed operator, address indexed from, address indexed to, uint256[] ids, uint256[] values)',
  ]),
];

const CALL_ABI = parseAbi([
  'function transfer(address to, uint256 value)',
  'function transferFrom(address from, address to, uint256 value)',
  'function approve(address spender, uint256 value)',
  'function setApprovalForAll(address operator, bool approved)',
  'function safeTransferFrom(address from, address to, uint256 tokenId)',
  'function safeTransferFrom(address from, address to, uint256 tokenId, bytes data)',
  'function safeTransferFrom(address from, address to, uint256 id, uint256 value, bytes data)',
  'function safeBatchTransferFrom(address from, address to, uint256[] ids, uint256[] values, bytes data)',
]);

export interface Decoded {
  signature: string;
  label: string;
  type: 'event' | 'function';
  params: Array<{ name: string; value: string; type: string }>;
}

const show = (v: unknown): string => (Array.isArray(v) ? v.map(show).join(',') : typeof v === 'string' ? v : String(v));

function decoded(type: Decoded['type'], label: string, inputs: readonly AbiParameter[], args: unknown): Decoded {
  const values = Array.isArray(args) ? args : inputs.map((p) => (args as Record<string, unknown>)[p.name ?? '']);
  return {
    signature: `${label}(${inputs.map((p) => p.type).join(',')})`,
    label,
    type,
    params: inputs.map((p, i) => ({ name: p.name ?? '', value: show(values[i]), type: p.type })),
  };
}

export function decodeLog(log: { topics: string[]; data: string }): Decoded | null {
  for (const abi of EVENT_ABIS) {
    try {
      const { eventName, args } = decodeEventLog({ abi, data: log.data as Hex, topics: log.topics as [Hex, ...Hex[]], strict: true });
      const event = abi.find((x) => x.type === 'event' && x.name === eventName);
      if (event?.type === 'event') return decoded('event', eventName!, event.inputs, args);
    } catch {
      // not this ABI
    }
  }
  return null;
}

export function decodeCall(input: string): Decoded | null {
  if (input.length < 10) return null;
  try {
    const { functionName, args } = decodeFunctionData({ abi: CALL_ABI, data: input as Hex });
    const fn = CALL_ABI.find((x) => x.name === functionName && x.inputs.length === (args?.length ?? 0));
    return fn === undefined ? null : decoded('function', functionName, fn.inputs, args);
  } catch {
    return null;
  }
}
