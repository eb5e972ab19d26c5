/** anvil's JSON-RPC at `url`, as a test's own client (not through a node): the result, or throws with the error. */
export async function anvilRpc<T>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: T; error?: unknown };
  if (body.error !== undefined) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result as T;
}

/** A JSON-RPC client's call (http/clients/rpc.ts jsonRpcUpstream, or the like). */
interface Caller {
  call<T>(method: string, params: unknown[]): Promise<T>;
}

/**
 * The receipt of a transaction sent to anvil, once it is mined: with automine, anvil may answer eth_sendTransaction
 * before the block is, so a receipt asked at once can be null. Throws after `withinMs`.
 */
export async function minedReceipt<R extends { blockNumber: string } = { blockNumber: string; contractAddress: string | null }>(
  rpc: Caller,
  hash: string,
  withinMs = 30_000,
): Promise<R> {
  const until = performance.now() + withinMs;
  for (;;) {
    const receipt = await rpc.call<R | null>('eth_getTransactionReceipt', [hash]);
    if (receipt !== null) return receipt;
    if (performance.now() > until) throw new Error(`transaction ${hash} not mined within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}
