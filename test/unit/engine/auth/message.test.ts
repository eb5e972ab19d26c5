import { describe, expect, it } from 'vitest';
import { MessageError, formatMessage, parseMessage, type MessageFields } from '../../../../engine/auth/message.js';
import { fromSiwe, vectors, type SiweFields } from '../../../vectors.js';

const positive = vectors<Record<string, { message: string; fields: SiweFields }>>('siwe/parsing_positive.json');
const negative = vectors<Record<string, string>>('siwe/parsing_negative.json');
const negativeObjects = vectors<Record<string, Partial<SiweFields>>>('siwe/parsing_negative_objects.json');
const siws = vectors<Record<string, { parsed: MessageFields; text: string }>>('siws/sign_in_message_text.json');

describe('EIP-4361 messages (spruceid/siwe vectors)', () => {
  it.each(Object.entries(positive))('parses and rebuilds byte for byte: %s', (_name, { message, fields }) => {
    const parsed = parseMessage('evm', message);
    expect(parsed).toEqual(fromSiwe(fields));
    expect(formatMessage('evm', fromSiwe(fields))).toBe(message);
  });

  it.each(Object.entries(negative))('rejects the message: %s', (_name, message) => {
    expect(() => parseMessage('evm', message)).toThrow(MessageError);
  });

  it.each(Object.entries(negativeObjects))('refuses to build from the fields: %s', (_name, fields) => {
    expect(() => formatMessage('evm', fromSiwe(fields))).toThrow(MessageError);
  });

  it('names the bad field', () => {
    const base = fromSiwe(Object.values(positive)[0]!.fields);
    const field = (f: Partial<MessageFields>) => {
      try {
        formatMessage('evm', { ...base, ...f });
      } catch (e) {
        return (e as MessageError).field;
      }
      return undefined;
    };
    expect(field({ nonce: '1234567' })).toBe('nonce');
    expect(field({ statement: 'a\nb' })).toBe('statement');
    expect(field({ address: base.address.toLowerCase() })).toBe('address');
    expect(field({ issuedAt: '2022-02-31T00:00:00Z' })).toBe('issuedAt');
    expect(field({ resources: ['https://ok', 'not a uri'] })).toBe('resources');
  });
});

describe('Sign In With Solana layout (anza-xyz/wallet-standard cases)', () => {
  it.each(Object.entries(siws))('builds and parses: %s', (_name, { parsed, text }) => {
    expect(formatMessage('solana', parsed)).toBe(text);
    expect(parseMessage('solana', text)).toEqual(parsed);
  });

  it('reads a Moralis-style Solana challenge with its Network line', () => {
    const text = vectors<{ cases: Array<{ message: string }> }>('derived/solana_ed25519.json').cases[0]!.message;
    const f = parseMessage('solana', text);
    expect(f).toMatchObject({
      domain: 'defi.finance',
      statement: 'Please confirm',
      uri: 'https://defi.finance/',
      version: '1',
      chain: 'mainnet',
      nonce: 'PYxxb9msdjVXsMQ9x',
      resources: ['https://docs.moralis.io/'],
    });
    expect(formatMessage('solana', f)).toBe(text);
  });
});

describe('Aptos layout', () => {
  it('reads and rebuilds the Moralis-style Aptos challenge', () => {
    const text = vectors<{ cases: Array<{ message: string }> }>('derived/aptos_ed25519.json').cases[0]!.message;
    const f = parseMessage('aptos', text);
    expect(f).toMatchObject({
      address: '0x63c5215e87770d17b9f4cd47c777e322f4eb152cfd2054c1080fd9d57c48913b',
      chain: '1',
      nonce: 'DbU1DCTmdzR4lg3wi',
    });
    expect(formatMessage('aptos', f)).toBe(text);
  });
});
