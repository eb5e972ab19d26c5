import { SignJWT, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';

type SigningKey = Awaited<ReturnType<typeof importJWK>>;
import type { Kv } from '../ports.js';

/**
 * The token a verified sign-in carries: an EdDSA (Ed25519) JWT signed by this
 * server, whose public key is served at /.well-known/jwks.json so a third-party
 * API can check it. The key is made once and kept in the store.
 */
interface StoredKey {
  kid: string;
  privateJwk: JWK;
  publicJwk: JWK;
}

export interface TokenClaims {
  sub: string;
  address: string;
  chain?: string;
  network?: string;
}

export class TokenIssuer {
  private constructor(
    private readonly stored: StoredKey,
    private readonly key: SigningKey,
  ) {}

  static async open(kv: Kv, issuer = 'chainpost'): Promise<TokenIssuer> {
    let stored = kv.get<StoredKey>('meta', 'authSigningKey');
    if (stored === undefined) {
      const { privateKey, publicKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
      const publicJwk = await exportJWK(publicKey);
      const fresh: StoredKey = { kid: `${issuer}-${publicJwk.x!.slice(0, 16)}`, privateJwk: await exportJWK(privateKey), publicJwk };
      // Another process may have raced us here: the first key written wins.
      stored = kv.transact(() => {
        const existing = kv.get<StoredKey>('meta', 'authSigningKey');
        if (existing !== undefined) return existing;
        kv.put('meta', 'authSigningKey', fresh);
        return fresh;
      });
    }
    return new TokenIssuer(stored, await importJWK({ ...stored.privateJwk, alg: 'EdDSA' }, 'EdDSA'));
  }

  jwks(): { keys: JWK[] } {
    return { keys: [{ ...this.stored.publicJwk, kid: this.stored.kid, alg: 'EdDSA', use: 'sig' }] };
  }

  /** Signs `claims`, issued at `nowMs` and expiring at `expMs` (service time). */
  sign(claims: TokenClaims, nowMs: number, expMs: number): Promise<string> {
    const { sub, ...rest } = claims;
    return new SignJWT(rest)
      .setProtectedHeader({ alg: 'EdDSA', kid: this.stored.kid, typ: 'JWT' })
      .setIssuer('chainpost')
      .setSubject(sub)
      .setIssuedAt(Math.floor(nowMs / 1000))
      .setExpirationTime(Math.floor(expMs / 1000))
      .sign(this.key);
  }
}
