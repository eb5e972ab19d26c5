import type { AuthService } from '../../engine/auth/service.js';
import { bindRemove, bindRequest, bindVerify, challengeRequest, profilePath, signedMessage } from '../../engine/auth/schemas.js';
import {
  bindMessages,
  boundProfile,
  challenge,
  jwks,
  profileAddresses,
  unbindMessage,
  verifiedChallenge,
} from '../../engine/auth/responses.js';
import type { TokenIssuer } from '../../engine/auth/token.js';
import type { Family } from '../../engine/auth/message.js';
import { validate } from '../../engine/schema.js';
import { json, type Request, type Route, type RouteDoc } from './route.js';

const NAME: Record<Family, string> = { evm: 'Evm', solana: 'Solana', aptos: 'Aptos' };

/** The Authentication API: challenges, bind and unbind, profiles; success is 201 as the hosted service answers. */
export function authRoutes(auth: AuthService, tokens: TokenIssuer): Route[] {
  const tenant = (req: Request): string => req.caller!.tenantId;
  const post = (pattern: string, doc: RouteDoc, handle: Route['handle']): Route => ({
    method: 'POST',
    pattern,
    area: 'auth',
    auth: 'key',
    body: true,
    doc,
    handle,
  });
  // A verify (or an unbind) of a message this server has not issued, or no longer holds (verified, expired): 404.
  const NOT_ISSUED = [404];
  const families: Family[] = ['evm', 'solana', 'aptos'];
  return [
    ...families.flatMap((family) => [
      post(
        `/challenge/request/${family}`,
        { operationId: `requestChallenge${NAME[family]}`, body: challengeRequest[family], responses: { 201: challenge } },
        async (req) => json(201, await auth.requestChallenge(tenant(req), family, validate(challengeRequest[family], req.body))),
      ),
      post(
        `/challenge/verify/${family}`,
        {
          operationId: `verifyChallenge${NAME[family]}`,
          body: signedMessage,
          responses: { 201: verifiedChallenge[family] },
          errors: NOT_ISSUED,
        },
        async (req) => json(201, await auth.verifyChallenge(tenant(req), family, validate(signedMessage, req.body))),
      ),
    ]),
    post('/bind/request', { operationId: 'requestBind', body: bindRequest, responses: { 201: bindMessages } }, async (req) =>
      json(201, await auth.requestBind(tenant(req), validate(bindRequest, req.body).addresses)),
    ),
    post(
      '/bind/request/verify',
      { operationId: 'verifyRequestBind', body: bindVerify, responses: { 201: boundProfile }, errors: NOT_ISSUED },
      async (req) => json(201, await auth.verifyBind(tenant(req), validate(bindVerify, req.body).verifications)),
    ),
    // The profile, or the address in it, is not there: 404.
    post('/bind/remove', { operationId: 'removeBind', body: bindRemove, responses: { 201: unbindMessage }, errors: [404] }, async (req) =>
      json(201, await auth.removeBind(tenant(req), validate(bindRemove, req.body))),
    ),
    post(
      '/bind/remove/verify',
      { operationId: 'verifyRemoveBind', body: signedMessage, responses: { 201: boundProfile }, errors: NOT_ISSUED },
      async (req) => json(201, await auth.verifyRemoveBind(tenant(req), validate(signedMessage, req.body))),
    ),
    {
      method: 'GET',
      pattern: '/profile/:profileId/addresses',
      area: 'auth',
      auth: 'key',
      doc: { operationId: 'getAddresses', query: profilePath, responses: { 200: profileAddresses } },
      handle: (req) => json(200, auth.addresses(tenant(req), validate(profilePath, req.params, 'path').profileId)),
    },
    {
      method: 'GET',
      pattern: '/.well-known/jwks.json',
      area: 'auth',
      auth: 'none',
      doc: { summary: 'The public key of the sign-in tokens (JWKS)', responses: { 200: jwks } },
      handle: () => json(200, tokens.jwks()),
    },
  ];
}
