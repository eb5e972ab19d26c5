import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { ed25519 } from '@noble/curves/ed25519.js';
import { describe, expect, it } from 'vitest';
import { formatMessage } from '../../../../engine/auth/message.js';
import {
  aptosAddressOf,
  aptosSignedForms,
  solanaPublicKey,
  verifyAptos,
  verifyEvm,
  verifySolana,
} from '../../../../engine/auth/signatures.js';
import { verifySignIn } from '../../../../engine/auth/verify.js';
import { ApiError } from '../../../../engine/errors.js';
import { fromSiwe, vectors, type SiweFields } from '../../../vectors.js';

type Verification = SiweFields & { signature: string; time?: string; domainBinding?: string; matchNonce?: string };

/** What the spruceid runner does: build, verify at `time || issuedAt`, bind domain and nonce. */
async function siweVerify(v: Verification): Promise<void> {
  const { signature, time, domainBinding, matchNonce, ...fields } = v;
  const text = formatMessage('evm', fromSiwe(fields));
  const f = await verifySignIn('evm', text, signature, { now: Date.parse(time ?? fields.issuedAt), skewMs: 0 });
  if (domainBinding !== undefined && f.domain !== domainBinding) throw new Error('domain mismatch');
  if (matchNonce !== undefined && f.nonce !== matchNonce) throw new Error('nonce mismatch');
}

describe('SIWE verification (spruceid/siwe vectors)', () => {
  it.each(Object.entries(vectors<Record<string, Verification>>('siwe/verification_positive.json')))('accepts: %s', async (_n, v) => {
    await expect(siweVerify(v)).resolves.toBeUndefined();
  });
  it.each(Object.entries(vectors<Record<string, Verification>>('siwe/verification_negative.json')))('rejects: %s', async (_n, v) => {
    await expect(siweVerify(v)).rejects.toThrow();
  });

  it("cannot check the ERC-1271 contract-wallet cases offline, and says the signature is not the address's own", async () => {
    // eip1271.json needs isValidSignature against mainnet state; an EOA check must refuse them, not crash.
    for (const { message, signature } of Object.values(
      vectors<Record<string, { message: string; signature: string }>>('siwe/eip1271.json'),
    )) {
      await expect(verifySignIn('evm', message, signature, { now: 0, skewMs: 0 }).catch((e: ApiError) => e.status)).resolves.toBe(400);
    }
  });
});

interface Derived<C> {
  signer: Record<string, string>;
  cases: C[];
}

describe('EVM personal_sign (derived vectors)', () => {
  const d = vectors<Derived<{ name: string; message: string; signature: string; expectValid: boolean }>>('derived/evm_personal_sign.json');
  it.each(d.cases.map((c) => [c.name, c] as const))('%s', async (_n, c) => {
    expect(await verifyEvm(c.message, c.signature, d.signer['address']!)).toBe(c.expectValid);
  });
  it('refuses malformed signatures with a reason', async () => {
    await expect(verifyEvm('x', '0x1234', d.signer['address']!)).rejects.toThrow(/65 bytes/);
    await expect(verifyEvm('x', `0x${'11'.repeat(64)}05`, d.signer['address']!)).rejects.toThrow(/recovery byte/);
  });
});

describe('Solana ed25519 (derived vectors)', () => {
  const d =
    vectors<Derived<{ name: string; message: string; signatureBase58: string; expectValid: boolean }>>('derived/solana_ed25519.json');
  it('takes the address as the 32-byte public key', () => {
    expect(bytesToHex(solanaPublicKey(d.signer['address']!)!)).toBe(d.signer['publicKeyHex']);
    expect(solanaPublicKey('0OIl')).toBeUndefined();
    expect(solanaPublicKey('3yZe7d')).toBeUndefined();
  });
  it.each(d.cases.map((c) => [c.name, c] as const))('%s', (_n, c) => {
    expect(verifySolana(c.message, c.signatureBase58, d.signer['address']!)).toBe(c.expectValid);
  });
});

describe('Aptos ed25519 (derived vectors)', () => {
  const d =
    vectors<
      Derived<{
        name: string;
        message: string;
        fullMessage?: string;
        signingMessageHex?: string;
        signatureHex: string;
        expectValid: boolean;
      }>
    >('derived/aptos_ed25519.json');
  const ctx = { address: d.signer['address']!, nonce: 'DbU1DCTmdzR4lg3wi', application: 'https://defi.finance', chainId: 1 };

  it('derives the account address as sha3-256(publicKey ‖ 0x00)', () => {
    expect(aptosAddressOf(d.signer['publicKeyHex']!)).toBe(d.signer['address']);
  });

  /** The bytes a case says were signed. */
  const signedBytes = (c: (typeof d.cases)[number]): Uint8Array =>
    c.signingMessageHex !== undefined ? hexToBytes(c.signingMessageHex.slice(2)) : new TextEncoder().encode(c.fullMessage ?? c.message);

  it.each(d.cases.map((c) => [c.name, c] as const))('ed25519 over the stated bytes: %s', (_n, c) => {
    const key = hexToBytes(d.signer['publicKeyHex']!.slice(2));
    expect(ed25519.verify(hexToBytes(c.signatureHex.slice(2)), signedBytes(c), key)).toBe(c.expectValid);
  });

  it('accepts every wallet form of the challenge, rebuilding the wrapper around the bare message', () => {
    for (const c of d.cases) {
      // The last case carries the full-message signature of case 2 over the bare message:
      // invalid as raw bytes (above), valid once the verifier rebuilds the wrapper.
      expect(verifyAptos(c.message, c.signatureHex, d.signer['publicKeyHex']!, ctx), c.name).toBe(true);
    }
    const tampered = d.cases[1]!.message.replace('Please confirm', 'Please confirn');
    expect(verifyAptos(tampered, d.cases[1]!.signatureHex, d.signer['publicKeyHex']!, ctx)).toBe(false);
    expect(verifyAptos(d.cases[1]!.message, d.cases[1]!.signatureHex, d.signer['publicKeyHex']!, { ...ctx, nonce: 'otherNonce123' })).toBe(
      false,
    );
  });

  it('rebuilds exactly the bytes the vectors say were signed', () => {
    const forms = (m: string) => aptosSignedForms(m, ctx).map((b) => bytesToHex(b));
    for (const c of d.cases) {
      if (c.fullMessage !== undefined) expect(forms(c.message)).toContain(bytesToHex(new TextEncoder().encode(c.fullMessage)));
      if (c.signingMessageHex !== undefined) expect(forms(c.message)).toContain(c.signingMessageHex.slice(2));
    }
  });

  it('refuses a signature by another key', () => {
    const other = ed25519.utils.randomSecretKey();
    const sig = bytesToHex(ed25519.sign(new TextEncoder().encode(d.cases[0]!.message), other));
    expect(verifyAptos(d.cases[0]!.message, sig, d.signer['publicKeyHex']!, ctx)).toBe(false);
    expect(hexToBytes(sig)).toHaveLength(64);
  });
});
