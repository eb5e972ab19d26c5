import autocannon from 'autocannon';

/** One autocannon run's figures. */
export interface CannonRun {
  reqPerSec: number;
  p99Ms: number;
  maxMs: number;
  non2xx: number;
}

export interface CannonRequest {
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  headers?: Record<string, string>;
}

/**
 * autocannon on 127.0.0.1:`port` for `seconds` over `requests` drawn beforehand, split between the connections, each
 * going round its own share (the connections never ask the same thing at once). autocannon writes a connection's
 * first request as it makes the connection, then makes the next ones, turning each one's requests into bytes: the
 * first requests wait for that, so a connection is given only its share (with every request for every connection,
 * the slowest request measured the making of the connections, not the server).
 */
export async function cannon(
  port: number,
  requests: readonly CannonRequest[],
  opts: { seconds: number; connections: number; key: string },
): Promise<CannonRun> {
  const share = Math.ceil(requests.length / opts.connections);
  const shares = Array.from({ length: opts.connections }, (_, i) => requests.slice(i * share, (i + 1) * share));
  let clients = 0;
  const r = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: opts.connections,
    duration: opts.seconds,
    headers: { 'x-api-key': opts.key },
    // Every connection starts from these (made into bytes as it is made); setupClient gives it its own share.
    requests: shares[0]!.slice(0, 1),
    setupClient: (client) => client.setRequests(shares[clients++ % opts.connections]!),
  });
  return { reqPerSec: r.requests.average, p99Ms: r.latency.p99, maxMs: r.latency.max, non2xx: r.non2xx + r.errors };
}
