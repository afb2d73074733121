import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { InvalidRequestError, OAuthError, ServerError, InvalidClientError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { z } from 'zod';
import { resolveCredential } from '../accounts/credentials.ts';
import { verifyPassword } from '../accounts/passwords.ts';
import { createSession } from '../accounts/sessions.ts';
import { findUserByEmail } from '../accounts/users.ts';
import type { Deps } from '../deps-types.ts';
import { SESSION_COOKIE } from '../http/auth.ts';
import type { ZApp } from '../http/types.ts';
import { SchemaValidationError } from '../http/validation.ts';
import { authenticateClient, invalidRedirectUri, registerClient } from './clients.ts';
import { allowCrossOrigin } from './cors.ts';
import { authorizationServerMetadata, mcpProtectedResourceMetadata, OAUTH_PATHS } from './endpoints.ts';
import {
  checkAuthorizationRequest,
  DirectAuthorizeError,
  exchangeCode,
  issueCode,
  redirectWith,
  RedirectAuthorizeError,
  refreshTokens,
  revokeToken,
  type AuthorizationRequest,
  type OAuthCtx,
} from './grants.ts';
import { consentPage, errorPage, PAGE_HEADERS } from './page.ts';
import {
  AuthorizationServerMetadata,
  AuthorizeForm,
  AuthorizeQuery,
  OAuthErrorBody,
  ProtectedResourceMetadata,
  RegisterClientRequest,
  RegisterClientResponse,
  RevokeForm,
  TokenForm,
  TokenResponse,
} from './schemas.ts';

const oauthStatus = (e: OAuthError): number => (e instanceof ServerError ? 500 : e instanceof InvalidClientError ? 401 : 400);

/** OAuth endpoints answer errors as `{error, error_description}`, never cached (RFC 6749 §5.2). */
function sendOAuthError(err: unknown, req: FastifyRequest, reply: FastifyReply, onSchema: (e: SchemaValidationError) => OAuthError) {
  let e: OAuthError;
  if (err instanceof OAuthError) e = err;
  else if (err instanceof SchemaValidationError) e = onSchema(err);
  else if ((err as FastifyError).code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') e = new InvalidRequestError('Send an application/x-www-form-urlencoded body');
  else if ((err as FastifyError).code === 'FST_ERR_CTP_BODY_TOO_LARGE') e = new InvalidRequestError('Request body is too large');
  else {
    req.log.error({ err }, 'OAuth endpoint failed');
    e = new ServerError(`Internal server error (request id ${req.id})`);
  }
  reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
  if (e instanceof InvalidClientError && /^Basic\s/i.test(req.headers.authorization ?? '')) reply.header('www-authenticate', 'Basic realm="oauth"');
  return reply.code(oauthStatus(e)).send(e.toResponseObject());
}

const describeIssues = (e: SchemaValidationError): string => e.issues.map((i) => `${i.path.length > 0 ? i.path.join('.') : 'body'}: ${i.message}`).join('; ');

export function registerOAuthRoutes(app: ZApp, deps: Deps): void {
  const ctx = (): OAuthCtx => ({ db: deps.database.db, config: deps.config, now: deps.clock.now() });
  allowCrossOrigin(app, [OAUTH_PATHS.asMetadata, OAUTH_PATHS.mcpResourceMetadata, OAUTH_PATHS.token, OAUTH_PATHS.register, OAUTH_PATHS.revoke]);

  app.get(OAUTH_PATHS.asMetadata, {
    schema: { operationId: 'getOAuthAuthorizationServerMetadata', tags: ['oauth'], response: { 200: AuthorizationServerMetadata } },
    handler: async () => authorizationServerMetadata(deps.config),
  });

  app.get(OAUTH_PATHS.mcpResourceMetadata, {
    schema: { operationId: 'getMcpProtectedResourceMetadata', tags: ['oauth'], response: { 200: ProtectedResourceMetadata } },
    handler: async () => mcpProtectedResourceMetadata(deps.config),
  });

  app.post(OAUTH_PATHS.register, {
    schema: {
      operationId: 'registerOAuthClient',
      tags: ['oauth'],
      description: 'RFC 7591 dynamic client registration (public clients use token_endpoint_auth_method "none").',
      body: RegisterClientRequest,
      response: { 201: RegisterClientResponse, 400: OAuthErrorBody },
    },
    errorHandler: (err, req, reply) =>
      sendOAuthError(err, req, reply, (e) => {
        const msg = describeIssues(e);
        return e.issues.some((i) => i.path[0] === 'redirect_uris') ? invalidRedirectUri(msg) : new OAuthClientMetadataError(msg);
      }),
    handler: async (req, reply) => {
      const client = await registerClient(deps.database.db, req.body, deps.clock.now());
      return reply.code(201).header('cache-control', 'no-store').send(client);
    },
  });

  // --- authorize: the page and the form ---------------------------------------------------------

  /** The signed-in browser user, from the session cookie only (never a Bearer header here). */
  const browserUser = async (req: FastifyRequest) => {
    const token = req.cookies?.[SESSION_COOKIE];
    if (!token) return null;
    try {
      const p = await resolveCredential(deps.database.db, token, deps.clock.now());
      return p.kind === 'session' ? p.user : null;
    } catch {
      return null;
    }
  };

  const providers = (req: FastifyRequest) =>
    deps.config.identityProviders.map((p) => ({
      label: p.label,
      href: `/api/auth/oauth/start?provider=${encodeURIComponent(p.name)}&next=${encodeURIComponent(req.url)}`,
    }));

  const showPage = (
    reply: FastifyReply,
    status: number,
    areq: AuthorizationRequest,
    req: FastifyRequest,
    signedInAs: string | null,
    error: string | null,
    email = '',
  ) => {
    // The sign-in links come back to the GET form of this very request.
    const getUrl = `${OAUTH_PATHS.authorize}?${new URLSearchParams({
      response_type: 'code',
      client_id: areq.client.id,
      redirect_uri: areq.redirectUri,
      code_challenge: areq.codeChallenge,
      code_challenge_method: 'S256',
      scope: areq.scope,
      state: areq.state,
      resource: areq.resource,
    }).toString()}`;
    const provs = providers({ ...req, url: getUrl } as FastifyRequest);
    return reply
      .code(status)
      .headers(PAGE_HEADERS)
      .send(consentPage({ req: areq, action: OAUTH_PATHS.authorize, signedInAs, error, email, providers: provs }));
  };

  const authorizeFailure = (err: unknown, reply: FastifyReply, redirectStatus: 302 | 303) => {
    if (err instanceof DirectAuthorizeError) {
      return reply.code(400).headers(PAGE_HEADERS).send(errorPage(err.oauth.errorCode, err.oauth.message));
    }
    if (err instanceof RedirectAuthorizeError) {
      return reply
        .code(redirectStatus)
        .header('cache-control', 'no-store')
        .redirect(redirectWith(err.redirectUri, { error: err.oauth.errorCode, error_description: err.oauth.message, state: err.state }), redirectStatus);
    }
    throw err;
  };

  app.get(OAUTH_PATHS.authorize, {
    schema: { operationId: 'getOAuthAuthorize', tags: ['oauth'], querystring: AuthorizeQuery, description: 'Sign-in and consent page (HTML).' },
    handler: async (req, reply) => {
      let areq: AuthorizationRequest;
      try {
        areq = await checkAuthorizationRequest(ctx(), { ...req.query, response_type: req.query.response_type ?? '' });
      } catch (err) {
        return authorizeFailure(err, reply, 302);
      }
      const user = await browserUser(req);
      return showPage(reply, 200, areq, req, user?.email ?? null, null);
    },
  });

  app.post(OAUTH_PATHS.authorize, {
    schema: {
      operationId: 'postOAuthAuthorize',
      tags: ['oauth'],
      description: 'The consent form: approve redirects with code and state, deny with error=access_denied.',
      body: AuthorizeForm,
    },
    errorHandler: (err, req, reply) => {
      if (err instanceof SchemaValidationError) {
        return reply
          .code(400)
          .headers(PAGE_HEADERS)
          .send(errorPage('invalid_request', describeIssues(err)));
      }
      req.log.error({ err }, 'authorize failed');
      return reply
        .code(500)
        .headers(PAGE_HEADERS)
        .send(errorPage('server_error', `Internal server error (request id ${req.id})`));
    },
    handler: async (req, reply) => {
      const form = req.body;
      let areq: AuthorizationRequest;
      try {
        areq = await checkAuthorizationRequest(ctx(), form);
      } catch (err) {
        return authorizeFailure(err, reply, 303);
      }
      // A cross-site form post must not approve anything on the user's behalf.
      const origin = req.headers.origin;
      if (origin !== undefined && origin !== 'null' && origin !== new URL(deps.config.publicBaseUrl).origin) {
        return reply.code(403).headers(PAGE_HEADERS).send(errorPage('access_denied', 'The form was posted from another site'));
      }
      if (form.action === 'deny') {
        return reply
          .header('cache-control', 'no-store')
          .redirect(redirectWith(areq.redirectUri, { error: 'access_denied', error_description: 'The user denied access', state: areq.state }), 303);
      }
      if (form.action !== 'approve') {
        return authorizeFailure(
          new RedirectAuthorizeError(new InvalidRequestError('action must be approve or deny'), areq.redirectUri, areq.state),
          reply,
          303,
        );
      }
      let userId: string;
      if (form.email && form.password) {
        const user = await findUserByEmail(deps.database.db, form.email);
        const ok = await verifyPassword(user?.password_hash ?? null, form.password);
        if (!user || !ok) return showPage(reply, 401, areq, req, null, 'Wrong e-mail or password', form.email);
        userId = user.id;
        // Remember the sign-in in this browser, like the login route does.
        const s = await createSession(deps.database.db, user.id, deps.clock.now(), deps.config.sessionTtlMs);
        reply.setCookie(SESSION_COOKIE, s.token, {
          httpOnly: true,
          sameSite: 'lax',
          secure: deps.config.cookieSecure,
          path: '/',
          expires: new Date(s.expiresAt),
        });
      } else {
        const user = await browserUser(req);
        if (!user) return showPage(reply, 401, areq, req, null, 'Sign in to continue', form.email ?? '');
        userId = user.id;
      }
      const code = await issueCode(ctx(), areq, userId);
      return reply.header('cache-control', 'no-store').redirect(redirectWith(areq.redirectUri, { code, state: areq.state }), 303);
    },
  });

  // --- token and revocation ---------------------------------------------------------------------

  app.post(OAUTH_PATHS.token, {
    schema: {
      operationId: 'createOAuthToken',
      tags: ['oauth'],
      description: 'authorization_code (PKCE S256) and refresh_token (rotating) grants; form body.',
      body: TokenForm,
      response: { 200: TokenResponse, 400: OAuthErrorBody, 401: OAuthErrorBody },
    },
    errorHandler: (err, req, reply) => sendOAuthError(err, req, reply, (e) => new InvalidRequestError(describeIssues(e))),
    handler: async (req, reply) => {
      const client = await authenticateClient(deps.database.db, req.body, req.headers.authorization);
      reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
      switch (req.body.grant_type) {
        case 'authorization_code':
          return exchangeCode(ctx(), client, req.body);
        case 'refresh_token':
          return refreshTokens(ctx(), client, req.body);
        default:
          throw new UnsupportedGrant(`grant_type ${req.body.grant_type} is not supported`);
      }
    },
  });

  app.post(OAUTH_PATHS.revoke, {
    schema: {
      operationId: 'revokeOAuthToken',
      tags: ['oauth'],
      description: 'RFC 7009 token revocation.',
      body: RevokeForm,
      response: { 200: z.object({}), 400: OAuthErrorBody, 401: OAuthErrorBody },
    },
    errorHandler: (err, req, reply) => sendOAuthError(err, req, reply, (e) => new InvalidRequestError(describeIssues(e))),
    handler: async (req, reply) => {
      const client = await authenticateClient(deps.database.db, req.body, req.headers.authorization);
      await revokeToken(ctx(), client, req.body.token);
      return reply.header('cache-control', 'no-store').send({});
    },
  });
}

class OAuthClientMetadataError extends OAuthError {
  static override errorCode = 'invalid_client_metadata';
}
class UnsupportedGrant extends OAuthError {
  static override errorCode = 'unsupported_grant_type';
}
