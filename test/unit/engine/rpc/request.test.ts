import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../../engine/errors.js';
import { MAX_BATCH, parseRequest } from '../../../../engine/rpc/request.js';

/** The edge of node access: one schema for a call, alone or in a batch. */
describe('parseRequest', () => {
  const fails = (body: unknown): ApiError => {
    try {
      parseRequest(body);
    } catch (err) {
      if (err instanceof ApiError) return err;
      throw err;
    }
    throw new Error(`accepted ${JSON.stringify(body)}`);
  };

  it('takes a call with an id of any JSON-RPC kind, params defaulting to none', () => {
    expect(parseRequest({ jsonrpc: '2.0', id: 1, method: 'eth_chainId' })).toEqual({
      batch: false,
      call: { id: 1, method: 'eth_chainId', params: [], notification: false },
    });
    expect(parseRequest({ jsonrpc: '2.0', id: 'a', method: 'm', params: [1, null] })).toMatchObject({
      call: { id: 'a', params: [1, null] },
    });
    expect(parseRequest({ jsonrpc: '2.0', id: null, method: 'm' })).toMatchObject({ call: { id: null, notification: false } });
    // No id: a notification, run and not answered.
    expect(parseRequest({ jsonrpc: '2.0', method: 'm' })).toMatchObject({ call: { id: null, notification: true } });
  });

  it.each([
    [{ jsonrpc: '1.0', id: 1, method: 'm' }, 'jsonrpc: must be "2.0"'],
    [{ id: 1, method: 'm' }, 'jsonrpc: must be "2.0"'],
    [{ jsonrpc: '2.0', id: 1 }, 'method: must be a string'],
    [{ jsonrpc: '2.0', id: 1, method: '' }, 'method: must not be empty'],
    [{ jsonrpc: '2.0', id: 1, method: 'm', params: {} }, 'params: must be an array'],
    [{ jsonrpc: '2.0', id: [1], method: 'm' }, 'id: must be a number, a string or null'],
    ['x', 'request: must be a JSON-RPC request object'],
    [undefined, 'request: must be a JSON-RPC request object'],
  ])('refuses %j with a 400 naming the field', (body, message) => {
    const err = fails(body);
    expect(err.status).toBe(400);
    expect(err.message).toBe(message);
  });

  it('answers a bad batch element on its own, keeping its id where it has one', () => {
    const parsed = parseRequest([
      { jsonrpc: '2.0', id: 1, method: 'a' },
      { jsonrpc: '2.0', id: 2, method: 3 },
      7,
      { jsonrpc: '2.0', id: {}, method: 'b' },
    ]);
    expect(parsed.batch).toBe(true);
    const items = (parsed as { items: unknown[] }).items as Array<Record<string, any>>;
    expect(items[0]).toEqual({ id: 1, method: 'a', params: [], notification: false });
    expect([items[1]!['id'], items[1]!['invalid'].message]).toEqual([2, 'method: must be a string']);
    expect([items[2]!['id'], items[2]!['invalid'].message]).toEqual([null, 'request: must be a JSON-RPC request object']);
    expect(items[3]!['id']).toBeNull();
  });

  it('refuses an empty batch and one over the limit as a whole', () => {
    expect(fails([]).message).toBe('request: an empty batch');
    const call = { jsonrpc: '2.0', id: 1, method: 'm' };
    expect(fails(Array.from({ length: MAX_BATCH + 1 }, () => call)).message).toBe(
      `request: a batch of ${MAX_BATCH + 1} calls is over the limit of ${MAX_BATCH} per batch`,
    );
    expect(parseRequest(Array.from({ length: MAX_BATCH }, () => call))).toMatchObject({ batch: true });
  });
});
