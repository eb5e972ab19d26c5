// jose's subpaths of the 4 functions used: its entry would load all of jose at the server's start.
import type { JWK } from 'jose';
import { SignJWT } from 'jose/jwt/sign';
import { exportJWK } from 'jose/key/export';
import { generateKeyPair } from 'jose/key/generate/keypair';
import { importJWK } from 'jose/key/import';

type SigningKey = Awaited<ReturnType<typeof importJWK>>;
import type { Kv } from '../ports.js';
import { signingKeyOf, type AuthChanges, type StoredSigningKey } from './changes.js';

/**
 * The token a verified sign-in carries: an EdDSA (Ed25519) JWT signed by this
 * server, whose public key is served at /.well-known/jwks.json so a third-party
 * API can check it. The key is made once and kept in the store, one for every
 * tenant: what binds a token to its tenant and its site is its issuer (one per
 * tenant) and its audience (the signed message's domain), which a backend pins.
 */

export interface TokenClaims {
  sub: string;
  address: string;
  chain?: string;
  network?: string;
}

/** What a token is for: the tenant whose key verified the sign-in, and the domain the user signed in to. */
export interface TokenScope {
  tenantId: string;
  domain: string;
}

export class TokenIssuer {
  private constructor(
    private readonly stored: StoredSigningKey,
    private readonly key: SigningKey,
    private readonly issuer: string,
  ) {}

  /** The `iss` of a tenant's tokens: the server's issuer and the tenant id (public: it grants nothing, unlike a key). */
  issuerOf(tenantId: string): string {
    return `${this.issuer}/tenants/${tenantId}`;
  }

  /** Reads the key from `kv`; without one there, writes a fresh one through `changes`. */
  static async open(kv: Kv, changes: AuthChanges, issuer = 'chainpost'): Promise<TokenIssuer> {
    let stored = signingKeyOf(kv);
    if (stored === undefined) {
      const { privateKey, publicKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
      const publicJwk = await exportJWK(publicKey);
      const fresh: StoredSigningKey = { kid: `${issuer}-${publicJwk.x!.slice(0, 16)}`, privateJwk: await exportJWK(privateKey), publicJwk };
      // Another process or node may have raced us here: the first key applied wins, and every one signs with it.
      stored = await changes.write({ kind: 'auth.signingKey', key: fresh });
    }
    return new TokenIssuer(stored, await importJWK({ ...stored.privateJwk, alg: 'EdDSA' }, 'EdDSA'), issuer);
  }

  jwks(): { keys: JWK[] } {
    return { keys: [{ ...this.stored.publicJwk, kid: this.stored.kid, alg: 'EdDSA', use: 'sig' }] };
  }

  /** Signs `claims` for `scope`, issued at `nowMs` (service time) and expiring at `exp` (s since the epoch). */
  sign(claims: TokenClaims, scope: TokenScope, nowMs: number, exp: number): Promise<string> {
    const { sub, ...rest } = claims;
    return new SignJWT(rest)
      .setProtectedHeader({ alg: 'EdDSA', kid: this.stored.kid, typ: 'JWT' })
      .setIssuer(this.issuerOf(scope.tenantId))
      .setAudience(scope.domain)
      .setSubject(sub)
      .setIssuedAt(Math.floor(nowMs / 1000))
      .setExpirationTime(exp)
      .sign(this.key);
  }
}
