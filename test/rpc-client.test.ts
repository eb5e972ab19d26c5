import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnvil, type Anvil } from '../http/clients/anvil.js';
import { jsonRpcUpstream } from '../http/clients/rpc.js';
import { NodeError } from '../engine/ports.js';

/** The JSON-RPC client's batches: what the follower reads a block with (one round trip for its three calls). */
describe('JSON-RPC batches to a node', () => {
  let anvil: Anvil;
  beforeAll(async () => {
    anvil = await startAnvil({});
  });
  afterAll(async () => {
    await anvil.stop();
  });

  it('settles each call of a batch on its own, the node’s errors as NodeError', async () => {
    const rpc = jsonRpcUpstream(anvil.url);
    try {
      const [head, missing, block] = await rpc.batch!([
        ['eth_blockNumber', []],
        ['no_suchMethod', []],
        ['eth_getBlockByNumber', ['0x0', false]],
      ]);
      expect(head).toEqual({ status: 'fulfilled', value: await rpc.call('eth_blockNumber', []) });
      expect(missing!.status).toBe('rejected');
      expect((missing as PromiseRejectedResult).reason).toBeInstanceOf(NodeError);
      expect((missing as PromiseRejectedResult).reason.message).toMatch(/^no_suchMethod: /);
      expect(block).toMatchObject({ status: 'fulfilled', value: { number: '0x0' } });
    } finally {
      await rpc.close();
    }
  });

  it('calls one by one from then on when the node refuses batches', async () => {
    let batches = 0;
    const node: Server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as { id: number; method: string } | unknown[];
        res.writeHead(200, { 'content-type': 'application/json' });
        if (Array.isArray(body)) {
          batches++;
          res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'batches are not supported' } }));
        } else {
          res.end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result: body.method }));
        }
      });
    });
    await new Promise<void>((resolve) => node.listen(0, '127.0.0.1', resolve));
    const rpc = jsonRpcUpstream(`http://127.0.0.1:${(node.address() as AddressInfo).port}`);
    try {
      for (let i = 0; i < 2; i++) {
        expect(await rpc.batch!([['a', []], ['b', []]])).toEqual([
          { status: 'fulfilled', value: 'a' },
          { status: 'fulfilled', value: 'b' },
        ]);
      }
      expect(batches).toBe(1);
    } finally {
      await rpc.close();
      node.close();
    }
  });
});
