import { describe, expect, it } from 'vitest';
import { maskKey, nodeAccessKey, nodeAccessPath, unmatchedPath, withoutCredentials, withoutPassword } from '../../../engine/redact.js';

describe('redact', () => {
  it('masks a key to its first four characters', () => {
    expect(maskKey('cpk_0123456789abcdef')).toBe('cpk_…');
  });

  it('masks the key of a node-access path, on either port, and where a key may sit in a path no route took', () => {
    expect(nodeAccessPath('/rpc/eth/cpk_0123456789abcdef', '/rpc')).toBe('/rpc/eth/cpk_…');
    expect(nodeAccessPath('/eth/cpk_0123456789abcdef', '')).toBe('/eth/cpk_…');
    expect(unmatchedPath('/rpc/eth/cpk_0123456789abcdef/more')).toBe('/rpc/eth/cpk_…/more');
    expect(unmatchedPath('/eth/cpk_0123456789abcdef')).toBe('/eth/cpk_…');
    expect(unmatchedPath('/rpc/cpk_0123456789abcdef')).toBe('/rpc/cpk_…');
    expect(unmatchedPath('/nothing')).toBe('/nothing');
  });

  it('reads a node-access key past doubled slashes and percent-encoding, and masks exactly what it read', () => {
    const key = 'cpk_0123456789abcdef';
    const encoded = [...key].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('');
    const cases: Array<[path: string, prefix: string, read: string, logged: string]> = [
      [`/rpc/0x539/${key}`, '/rpc', key, '/rpc/0x539/cpk_…'],
      [`/rpc//0x539/${key}`, '/rpc', key, '/rpc//0x539/cpk_…'],
      [`/rpc/0x539/${encoded}`, '/rpc', key, '/rpc/0x539/cpk_…'],
      [`/rpc/0x539/${key}%20`, '/rpc', `${key} `, '/rpc/0x539/cpk_…'],
      [`/rpc/0x539/${key}%23x`, '/rpc', `${key}#x`, '/rpc/0x539/cpk_…'],
      [`/rpc/0x539/${key}%0a`, '/rpc', `${key}\n`, '/rpc/0x539/cpk_…'],
      [`/rpc/0x539/${key}%zz`, '/rpc', `${key}%zz`, '/rpc/0x539/cpk_…'],
      [`//0x539/${key}`, '', key, '//0x539/cpk_…'],
      [`/0x539//${key}`, '', key, '/0x539//cpk_…'],
      [`/0x539/${key}/`, '', key, '/0x539/cpk_…/'],
    ];
    for (const [path, prefix, read, logged] of cases) {
      expect(nodeAccessKey(path, prefix)?.key, path).toBe(read);
      expect(nodeAccessPath(path, prefix), path).toBe(logged);
      expect(unmatchedPath(path), path).toBe(logged);
    }
    expect(nodeAccessKey('/rpc/0x539/', '/rpc')).toBeUndefined();
    expect(nodeAccessKey(`/streams/0x539/${key}`, '/rpc')).toBeUndefined();
  });

  it('leaves a URL its user but not its password, and shows no part of what is not a URL', () => {
    expect(withoutPassword('http://user:s3cret@127.0.0.1:8545/')).toBe('http://user:***@127.0.0.1:8545/');
    expect(withoutPassword('smtp://mailer:p%40ss@mail.example.org:587')).toBe('smtp://mailer:***@mail.example.org:587');
    expect(withoutPassword('https://hooks.example.org/in?x=1')).toBe('https://hooks.example.org/in?x=1');
    expect(withoutPassword('https://user@hooks.example.org/')).toBe('https://user@hooks.example.org/');
    expect(withoutPassword('http://user:s3cret@[bad')).toBe('http:(not a URL)');
    expect(withoutPassword('user:s3cret@host')).toBe('user:(not a URL)');
  });

  it("hides a NATS URL's user name as well as its password: the user name may be a token", () => {
    expect(withoutCredentials('nats://t0ken-s3cret@127.0.0.1:4222')).toBe('nats://***@127.0.0.1:4222');
    expect(withoutCredentials('tls://alice:s3cret@nats.example.org:4222')).toBe('tls://***:***@nats.example.org:4222');
    expect(withoutCredentials('nats://:s3cret@127.0.0.1:4222')).toBe('nats://:***@127.0.0.1:4222');
    expect(withoutCredentials('nats://127.0.0.1:4222')).toBe('nats://127.0.0.1:4222');
    expect(withoutCredentials('nats://t0ken-s3cret@[bad')).toBe('nats:(not a URL)');
  });
});
