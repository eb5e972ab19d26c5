import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonRpcUpstream } from '../../../../http/clients/rpc.js';
import { NodeError } from '../../../../engine/ports.js';

/** A node answering as Bitcoin Core does: basic auth, RPC errors with HTTP 500 (404 for no such method) and the error in the body. */
let server: Server;
let port = 0;
const seen: Array<string | undefined> = [];

const body = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => resolve(text));
  });

beforeAll(async () => {
  server = createServer(async (req, res) => {
    seen.push(req.headers.authorization);
    const { method, id } = JSON.parse(await body(req)) as { method: string; id: number };
    if (req.headers.authorization !== `Basic ${Buffer.from('alice:s3cret/=').toString('base64')}`) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="jsonrpc"' }).end();
      return;
    }
    const reply = (status: number, payload: object): void =>
      void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ ...payload, id }));
    if (method === 'getblockcount') reply(200, { result: 7, error: null });
    else if (method === 'getblockhash') reply(500, { result: null, error: { code: -8, message: 'Block height out of range' } });
    else if (method === 'busy') reply(429, { result: null, error: { code: -32005, message: 'slow down' } });
    else reply(404, { result: null, error: { code: -32601, message: 'Method not found' } });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('the JSON-RPC client', () => {
  it("sends the URL's credentials as basic auth, decoded, and not in the URL", async () => {
    const node = jsonRpcUpstream(`http://alice:s3cret%2F%3D@127.0.0.1:${port}`);
    try {
      expect(await node.call<number>('getblockcount', [])).toBe(7);
      expect(seen.at(-1)).toBe(`Basic ${Buffer.from('alice:s3cret/=').toString('base64')}`);
    } finally {
      await node.close();
    }
  });

  it("takes an error in the body of a 500 or 404 as the node's answer, and a 401 or a 429 as not reached", async () => {
    const node = jsonRpcUpstream(`http://alice:s3cret%2F%3D@127.0.0.1:${port}`);
    const wrong = jsonRpcUpstream(`http://alice:guess@127.0.0.1:${port}`);
    try {
      const outOfRange = await node.call('getblockhash', [99]).catch((e: unknown) => e);
      expect(outOfRange).toBeInstanceOf(NodeError);
      expect(outOfRange).toMatchObject({ code: -8, message: 'getblockhash: Block height out of range' });
      expect(await node.callRaw('nosuch', []).catch((e: unknown) => e)).toMatchObject({ code: -32601 });
      const busy = await node.call('busy', []).catch((e: unknown) => e);
      expect(busy).not.toBeInstanceOf(NodeError);
      expect(String(busy)).toContain('HTTP 429');
      const refused = await wrong.call('getblockcount', []).catch((e: unknown) => e);
      expect(refused).not.toBeInstanceOf(NodeError);
      expect(String(refused)).toContain('HTTP 401');
    } finally {
      await node.close();
      await wrong.close();
    }
  });
});

describe("the JSON-RPC client's timeout", () => {
  it('closes its connection to a node that has not answered in time, so a node that stops a call whose client hangs up stops it', async () => {
    let closed: (() => void) | undefined;
    const gone = new Promise<void>((resolve) => (closed = resolve));
    // Reads the call and never answers (a node running a long call).
    const silent = createServer((req) => void req.socket.once('close', () => closed?.()));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const node = jsonRpcUpstream(`http://127.0.0.1:${(silent.address() as AddressInfo).port}`, { timeoutMs: 200 });
    try {
      const failed = await node.call('eth_call', []).catch((e: unknown) => e);
      expect(String(failed)).toMatch(/Headers Timeout/);
      // The node saw the connection end with the timeout, not at the client's close.
      await gone;
    } finally {
      await node.close();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});
