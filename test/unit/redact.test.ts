import { describe, expect, it } from 'vitest';
import { maskKey, nodeAccessPath, unmatchedPath, withoutPassword } from '../../engine/redact.js';

describe('redact', () => {
  it('masks a key to its first four characters', () => {
    expect(maskKey('cpk_0123456789abcdef')).toBe('cpk_…');
  });

  it('masks the key of a node-access path, on either port, and where a key may sit in a path no route took', () => {
    expect(nodeAccessPath('/rpc/eth/cpk_0123456789abcdef', 'cpk_0123456789abcdef')).toBe('/rpc/eth/cpk_…');
    expect(nodeAccessPath('/eth/cpk_0123456789abcdef', 'cpk_0123456789abcdef')).toBe('/eth/cpk_…');
    expect(unmatchedPath('/rpc/eth/cpk_0123456789abcdef/more')).toBe('/rpc/eth/cpk_…/more');
    expect(unmatchedPath('/eth/cpk_0123456789abcdef')).toBe('/eth/cpk_…');
    expect(unmatchedPath('/nothing')).toBe('/nothing');
  });

  it('leaves a URL its user but not its password, and shows no part of what is not a URL', () => {
    expect(withoutPassword('http://user:s3cret@127.0.0.1:8545/')).toBe('http://user:***@127.0.0.1:8545/');
    expect(withoutPassword('smtp://mailer:p%40ss@mail.example.org:587')).toBe('smtp://mailer:***@mail.example.org:587');
    expect(withoutPassword('https://hooks.example.org/in?x=1')).toBe('https://hooks.example.org/in?x=1');
    expect(withoutPassword('https://user@hooks.example.org/')).toBe('https://user@hooks.example.org/');
    expect(withoutPassword('http://user:s3cret@[bad')).toBe('http:(not a URL)');
    expect(withoutPassword('user:s3cret@host')).toBe('user:(not a URL)');
  });
});
