import { describe, expect, it } from 'vitest';
import { parseServers, redactedServers } from '../../../bus/connect.js';

describe('the NATS servers of a node', () => {
  it('reads a comma-separated list into host:port, with the credentials of the URLs apart', () => {
    expect(parseServers('nats://node:p%40ss@10.0.0.1:4222, nats://node:p%40ss@10.0.0.2:4223')).toEqual({
      servers: ['10.0.0.1:4222', '10.0.0.2:4223'],
      tls: false,
      credentials: { user: 'node', pass: 'p@ss' },
    });
    expect(parseServers('tls://tok3n@nats.internal,nats.internal:5222')).toEqual({
      servers: ['nats.internal:4222', 'nats.internal:5222'],
      tls: true,
      credentials: { token: 'tok3n' },
    });
  });

  it('refuses a list it cannot read without repeating what it was given', () => {
    expect(() => parseServers(' , ')).toThrow('no NATS server given');
    expect(() => parseServers('nats://a:secret1@h1:4222,nats://a:secret2@h2:4222')).toThrow(
      'the NATS servers carry different credentials: give the same to each, or to none',
    );
    expect(() => parseServers('http://a:secret@h1:4222')).toThrow('NATS server 1 of 1: http: is neither nats: nor tls:');
    expect(() => parseServers('nats://a:secret@h1:99999')).toThrow('NATS server 1 of 1 is not a URL (nats://host:port)');
  });

  it('shows the servers without credentials: a password, a user name and a token alike', () => {
    expect(redactedServers('nats://node:secret@10.0.0.1:4222,nats://10.0.0.2:4222,tls://tok3n@nats.internal:4222')).toBe(
      'nats://***@10.0.0.1:4222,nats://10.0.0.2:4222,tls://***@nats.internal:4222',
    );
    expect(redactedServers('nats://a:sec ret@[bad')).toBe('(not a URL)');
  });
});
