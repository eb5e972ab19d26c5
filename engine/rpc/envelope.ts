import { z } from 'zod';

/**
 * JSON-RPC 2.0 answers, written as JSON text around a result that is already
 * text: the cache keeps answers serialized and a local answer is serialized
 * once, so no result is parsed or serialized again to wrap it.
 */
export type RpcId = number | string | null;

const rpcId = z.union([z.number(), z.string(), z.null()]);

/** A JSON-RPC error object: chainpost's own, or the node's passed on as it sent it (hence loose). */
const rpcError = z.looseObject({ code: z.number().int(), message: z.string(), data: z.unknown().optional() });
export type RpcError = z.output<typeof rpcError>;

/** The answer to one call: its result (what the node or the store gives, any JSON) or its error. */
const rpcAnswer = z.union([
  z.object({ jsonrpc: z.literal('2.0'), id: rpcId, result: z.unknown() }),
  z.object({ jsonrpc: z.literal('2.0'), id: rpcId, error: rpcError }),
]);

/**
 * What node access answers with 200: the answer to a call, or to a batch the answers to its calls (notifications
 * have none), in order. A call or batch of notifications alone is answered with an empty body.
 */
export const rpcAnswers = z.union([rpcAnswer, z.array(rpcAnswer)]);

/** JSON-RPC 2.0 codes, and EIP-1474's "limit exceeded" (what nodes answer for too large a log query). */
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INTERNAL_ERROR = -32603;
export const LIMIT_EXCEEDED = -32005;

export const resultText = (id: RpcId, resultJson: string): string => `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${resultJson}}`;

export const errorText = (id: RpcId, error: RpcError): string =>
  `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"error":${JSON.stringify(error)}}`;
