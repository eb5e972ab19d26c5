import { createServer, type IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';

/**
 * A loopback proxy in front of a real node (anvil) that counts the JSON-RPC
 * methods reaching the node, can hold a method's requests until released, and
 * can answer every request with an HTTP error instead. WebSocket upgrades (the
 * follower's newHeads) are piped to the node untouched.
 */
export interface NodeProxy {
  url: string;
  /** How many calls of `method` reached the node so far (batch elements count one each). */
  calls(method: string): number;
  /** The params of each call of `method` that reached the proxy so far, in arrival order. */
  params(method: string): unknown[][];
  /** Holds requests carrying `method` (after letting `after` more through) until the returned function is called. */
  hold(method: string, after?: number): () => void;
  /** Answers every HTTP request with this status (a node behind a failing gateway); undefined: forward again. */
  failWith(status: number | undefined): void;
  close(): Promise<void>;
}

export async function nodeProxy(target: string): Promise<NodeProxy> {
  const node = new URL(target);
  const counts = new Map<string, number>();
  const paramsOf = new Map<string, unknown[][]>();
  const held = new Map<string, { gate: Promise<void>; pass: number }>();
  let failing: number | undefined;
  const sockets = new Set<Socket>();

  const callsOf = (body: string): Array<{ method: string; params: unknown[] }> => {
    try {
      const parsed = JSON.parse(body) as { method?: unknown; params?: unknown } | Array<{ method?: unknown; params?: unknown }>;
      return (Array.isArray(parsed) ? parsed : [parsed]).map((c) => ({
        method: String(c?.method),
        params: Array.isArray(c?.params) ? c.params : [],
      }));
    } catch {
      return [];
    }
  };
  const read = (req: IncomingMessage): Promise<string> =>
    new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => resolve(Buffer.concat(chunks).toString()));
      req.on('error', reject);
    });

  const server = createServer((req, res) => {
    void (async () => {
      const body = await read(req);
      if (failing !== undefined) {
        res.writeHead(failing, { 'content-type': 'text/plain' }).end('bad gateway');
        return;
      }
      const calls = callsOf(body);
      for (const { method, params } of calls) {
        counts.set(method, (counts.get(method) ?? 0) + 1);
        let seen = paramsOf.get(method);
        if (seen === undefined) paramsOf.set(method, (seen = []));
        seen.push(params);
      }
      const methods = calls.map((c) => c.method);
      await Promise.all(
        methods.map((m) => {
          const h = held.get(m);
          if (h === undefined || h.pass-- > 0) return undefined;
          return h.gate;
        }),
      );
      const answer = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(await answer.text());
    })().catch((err: unknown) => res.writeHead(500).end(String(err)));
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('upgrade', (req, socket, head) => {
    const upstream = connect(Number(node.port), node.hostname, () => {
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
      upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on('close', () => {
      sockets.delete(upstream);
      socket.destroy();
    });
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
    socket.on('close', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    calls: (method) => counts.get(method) ?? 0,
    params: (method) => paramsOf.get(method) ?? [],
    hold(method, after = 0) {
      let release!: () => void;
      held.set(method, { gate: new Promise<void>((r) => (release = r)), pass: after });
      return () => {
        held.delete(method);
        release();
      };
    },
    failWith: (status) => void (failing = status),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
