/**
 * JSON-RPC 2.0 answers, written as JSON text around a result that is already
 * text: the cache keeps answers serialized and a local answer is serialized
 * once, so no result is parsed or serialized again to wrap it.
 */
export type RpcId = number | string | null;

export interface RpcError {
  code: number;
  message: string;
  data?: unknown;
}

/** JSON-RPC 2.0 codes, and EIP-1474's "limit exceeded" (what nodes answer for too large a log query). */
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INTERNAL_ERROR = -32603;
export const LIMIT_EXCEEDED = -32005;

export const resultText = (id: RpcId, resultJson: string): string => `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${resultJson}}`;

export const errorText = (id: RpcId, error: RpcError): string =>
  `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"error":${JSON.stringify(error)}}`;
