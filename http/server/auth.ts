import type { AuthService } from '../../engine/auth/service.js';
import { bindRemove, bindRequest, bindVerify, challengeRequest, profileId, signedMessage } from '../../engine/auth/schemas.js';
import type { TokenIssuer } from '../../engine/auth/token.js';
import type { Family } from '../../engine/auth/message.js';
import { validate } from '../../engine/schema.js';
import { json, type Request, type Route } from './route.js';

/** The Authentication API: challenges, bind and unbind, profiles; success is 201 as the hosted service answers. */
export function authRoutes(auth: AuthService, tokens: TokenIssuer): Route[] {
  const tenant = (req: Request): string => req.caller!.tenantId;
  const post = (pattern: string, handle: Route['handle']): Route => ({
    method: 'POST',
    pattern,
    area: 'auth',
    auth: 'key',
    body: true,
    handle,
  });
  const families: Family[] = ['evm', 'solana', 'aptos'];
  return [
    ...families.flatMap((family) => [
      post(`/challenge/request/${family}`, async (req) =>
        json(201, await auth.requestChallenge(tenant(req), family, validate(challengeRequest[family], req.body))),
      ),
      post(`/challenge/verify/${family}`, async (req) =>
        json(201, await auth.verifyChallenge(tenant(req), family, validate(signedMessage, req.body))),
      ),
    ]),
    post('/bind/request', async (req) => json(201, await auth.requestBind(tenant(req), validate(bindRequest, req.body).addresses))),
    post('/bind/request/verify', async (req) =>
      json(201, await auth.verifyBind(tenant(req), validate(bindVerify, req.body).verifications)),
    ),
    post('/bind/remove', async (req) => json(201, await auth.removeBind(tenant(req), validate(bindRemove, req.body)))),
    post('/bind/remove/verify', async (req) => json(201, await auth.verifyRemoveBind(tenant(req), validate(signedMessage, req.body)))),
    {
      method: 'GET',
      pattern: '/profile/:profileId/addresses',
      area: 'auth',
      auth: 'key',
      handle: (req) => json(200, auth.addresses(tenant(req), validate(profileId, req.params['profileId'], 'profileId'))),
    },
    { method: 'GET', pattern: '/.well-known/jwks.json', area: 'auth', auth: 'none', handle: () => json(200, tokens.jwks()) },
  ];
}
