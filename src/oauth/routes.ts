import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { InvalidClientError, InvalidRequestError, OAuthError, ServerError, TooManyRequestsError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { z } from 'zod';
import { resolveCredential } from '../accounts/credentials.ts';
import { login } from '../accounts/service.ts';
import type { Deps } from '../deps-types.ts';
import { SESSION_COOKIE, setSessionCookie } from '../http/cookies.ts';
import { requestSite } from '../http/csrf.ts';
import { AppError, ValidationFailure } from '../shared/errors.ts';
import type { ZApp } from '../http/types.ts';
import { BodyParseError, SchemaValidationError } from '../http/validation.ts';
import { refuse } from '../ratelimit/limiter.ts';
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
import { consentPage, errorPage, pageHeaders } from './page.ts';
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

/** A request body of a media type the endpoint does not take (checked before parsing). */
class UnsupportedMediaType extends Error {}

const FORM = 'application/x-www-form-urlencoded';
const JSON_TYPE = 'application/json';

/** A route hook that refuses bodies other than `types` before they are parsed (415). */
const onlyMediaTypes = (types: string[]) => async (req: FastifyRequest) => {
  const essence = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  const hasBody = req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0';
  if (essence === '' ? hasBody : !types.includes(essence)) {
    throw new UnsupportedMediaType(`Unsupported content type ${essence || '(none)'}: send ${types.join(' or ')}`);
  }
};

/** One OAuth error with its HTTP status (RFC 6749 §5.2: 400, 401 for invalid_client). */
interface Answer {
  error: OAuthError;
  status: number;
  headers?: Record<string, string>;
}

/**
 * Any failure of an OAuth endpoint as an RFC error: schema and JSON failures are
 * `invalid_request` (or what `onSchema` says), a body of another media type is 415, a rate limit
 * is 429 `too_many_requests`; only a fault of ours is a 500 `server_error`.
 */
function toOAuthAnswer(err: unknown, req: FastifyRequest, onSchema: (e: SchemaValidationError) => OAuthError): Answer {
  if (err instanceof OAuthError) {
    const status = err instanceof ServerError ? 500 : err instanceof InvalidClientError ? 401 : err instanceof TooManyRequestsError ? 429 : 400;
    return { error: err, status };
  }
  if (err instanceof SchemaValidationError) return { error: onSchema(err), status: 400 };
  if (err instanceof ValidationFailure) return { error: new InvalidRequestError(`The body is not valid: ${err.message}`), status: 400 };
  if (err instanceof BodyParseError) return { error: new InvalidRequestError('The body is not valid JSON (or has __proto__/constructor keys)'), status: 400 };
  if (err instanceof UnsupportedMediaType) return { error: new InvalidRequestError(err.message), status: 415 };
  if (err instanceof AppError) {
    if (err.code === 'rate_limit_exceeded') return { error: new TooManyRequestsError(err.message), status: 429, headers: err.headers };
    if (err.status < 500) return { error: new InvalidRequestError(err.message), status: err.status, headers: err.headers };
  }
  const fe = err as FastifyError;
  if (fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
    return { error: new InvalidRequestError(`Unsupported content type ${req.headers['content-type'] ?? '(none)'}`), status: 415 };
  if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return { error: new InvalidRequestError('Request body is too large'), status: 413 };
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500)
    return { error: new InvalidRequestError(fe.message), status: fe.statusCode };
  req.log.error({ err }, 'OAuth endpoint failed');
  return { error: new ServerError(`Internal server error (request id ${req.id})`), status: 500 };
}

/** OAuth endpoints answer errors as `{error, error_description}`, never cached (RFC 6749 §5.2). */
function sendOAuthError(err: unknown, req: FastifyRequest, reply: FastifyReply, onSchema: (e: SchemaValidationError) => OAuthError) {
  const a = toOAuthAnswer(err, req, onSchema);
  reply
    .headers(a.headers ?? {})
    .header('cache-control', 'no-store')
    .header('pragma', 'no-cache');
  if (a.error instanceof InvalidClientError && /^Basic\s/i.test(req.headers.authorization ?? '')) reply.header('www-authenticate', 'Basic realm="oauth"');
  return reply.code(a.status).send(a.error.toResponseObject());
}

/** The authorize routes' error pages, as the OpenAPI document describes them. */
const AUTHORIZE_400 =
  'The authorization request is not valid: an unknown client, a redirect URI it did not register, no S256 code_challenge, a malformed or unstorable parameter. For a known client and redirect URI the page links back to the client with the RFC 6749 error.';
const PAGE_500 = 'A fault of the service; the page gives the request id to quote.';

/** The server the OpenAPI examples describe (the metadata documents are built by the same functions as the answers). */
const EXAMPLE_BASE = { publicBaseUrl: 'http://127.0.0.1:8000' };

const describeIssues = (e: SchemaValidationError): string => e.issues.map((i) => `${i.path.length > 0 ? i.path.join('.') : 'body'}: ${i.message}`).join('; ');

export function registerOAuthRoutes(app: ZApp, deps: Deps): void {
  const ctx = (): OAuthCtx => ({ db: deps.database.db, config: deps.config, now: deps.clock.now() });
  const PAGE_HEADERS = pageHeaders(deps.config.captcha);
  allowCrossOrigin(app, [
    OAUTH_PATHS.asMetadata,
    OAUTH_PATHS.mcpResourceMetadata,
    OAUTH_PATHS.rootResourceMetadata,
    OAUTH_PATHS.token,
    OAUTH_PATHS.register,
    OAUTH_PATHS.revoke,
  ]);

  app.get(OAUTH_PATHS.asMetadata, {
    schema: {
      operationId: 'getOAuthAuthorizationServerMetadata',
      example: { response: authorizationServerMetadata(EXAMPLE_BASE) },
      summary: 'OAuth server metadata',
      description: 'RFC 8414 authorization server metadata: endpoints, grant types, PKCE methods. MCP clients read it to sign in.',
      tags: ['oauth'],
      response: { 200: AuthorizationServerMetadata },
    },
    handler: async () => authorizationServerMetadata(deps.config),
  });

  app.get(OAUTH_PATHS.mcpResourceMetadata, {
    schema: {
      operationId: 'getMcpProtectedResourceMetadata',
      example: { response: mcpProtectedResourceMetadata(EXAMPLE_BASE) },
      summary: 'MCP resource metadata',
      description: 'RFC 9728 protected-resource metadata of /mcp: which authorization server issues its tokens.',
      tags: ['oauth'],
      response: { 200: ProtectedResourceMetadata },
    },
    handler: async () => mcpProtectedResourceMetadata(deps.config),
  });

  // RFC 9728 §3.1 puts the metadata of a resource with a path at .../oauth-protected-resource/mcp;
  // clients that look only at the root (older MCP clients) find the same document there.
  app.get(OAUTH_PATHS.rootResourceMetadata, {
    schema: {
      operationId: 'getRootProtectedResourceMetadata',
      example: { response: mcpProtectedResourceMetadata(EXAMPLE_BASE) },
      summary: 'MCP resource metadata (root path)',
      tags: ['oauth'],
      description: "The MCP endpoint's protected-resource metadata, also at the root path for clients that look only there.",
      response: { 200: ProtectedResourceMetadata },
    },
    handler: async () => mcpProtectedResourceMetadata(deps.config),
  });

  app.post(OAUTH_PATHS.register, {
    config: { crossOrigin: true },
    onRequest: onlyMediaTypes([JSON_TYPE]),
    schema: {
      operationId: 'registerOAuthClient',
      example: {
        request: {
          client_name: 'My MCP client',
          redirect_uris: ['http://127.0.0.1:33418/callback'],
          token_endpoint_auth_method: 'none',
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
        },
      },
      summary: 'Register an OAuth client',
      tags: ['oauth'],
      description:
        'RFC 7591 dynamic client registration (JSON; public clients use token_endpoint_auth_method "none"). Limited per client address (AUTH_RATE_LIMIT_PER_MINUTE).',
      body: RegisterClientRequest,
      response: { 201: RegisterClientResponse, 400: OAuthErrorBody, 415: OAuthErrorBody, 429: OAuthErrorBody },
    },
    errorHandler: (err, req, reply) =>
      sendOAuthError(err, req, reply, (e) => {
        const msg = describeIssues(e);
        return e.issues.some((i) => i.path[0] === 'redirect_uris') ? invalidRedirectUri(msg) : new OAuthClientMetadataError(msg);
      }),
    handler: async (req, reply) => {
      const client = await registerClient(deps.database.db, req.body, deps.clock.now(), deps.config.oauth.extraRedirectSchemes);
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

  const providers = (getUrl: string) =>
    deps.config.identityProviders.map((p) => ({
      label: p.label,
      href: `/api/auth/oauth/start?provider=${encodeURIComponent(p.name)}&next=${encodeURIComponent(getUrl)}`,
    }));

  const showPage = (reply: FastifyReply, status: number, areq: AuthorizationRequest, signedInAs: string | null, error: string | null, email = '') => {
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
    const captcha =
      deps.config.captcha.kind !== 'off' && deps.config.captcha.siteKey ? { kind: deps.config.captcha.kind, siteKey: deps.config.captcha.siteKey } : null;
    return reply
      .code(status)
      .headers(PAGE_HEADERS)
      .send(consentPage({ req: areq, action: OAUTH_PATHS.authorize, signedInAs, error, email, providers: providers(getUrl), captcha }));
  };

  /**
   * Failed authorization requests are always shown on a page, never redirected to by the server:
   * the redirect URI of a dynamically registered client is not trusted (RFC 9700 §4.11.2). For a
   * known client and redirect URI, the page links back with the RFC 6749 §4.1.2.1 error.
   */
  const authorizeFailure = (err: unknown, reply: FastifyReply) => {
    if (err instanceof DirectAuthorizeError) {
      return reply.code(400).headers(PAGE_HEADERS).send(errorPage(err.oauth.errorCode, err.oauth.message));
    }
    if (err instanceof RedirectAuthorizeError) {
      const back = redirectWith(err.redirectUri, { error: err.oauth.errorCode, error_description: err.oauth.message, state: err.state });
      return reply
        .code(400)
        .headers(PAGE_HEADERS)
        .send(errorPage(err.oauth.errorCode, err.oauth.message, back));
    }
    throw err;
  };

  /** Failures of the page routes themselves (bad form, rate limit, our faults) as HTML pages. */
  const pageErrorHandler = (err: unknown, req: FastifyRequest, reply: FastifyReply) => {
    const a = toOAuthAnswer(err, req, (e) => new InvalidRequestError(describeIssues(e)));
    return reply
      .code(a.status)
      .headers(a.headers ?? {})
      .headers(PAGE_HEADERS)
      .send(errorPage(a.error.errorCode, a.error.message));
  };

  app.get(OAUTH_PATHS.authorize, {
    schema: {
      operationId: 'getOAuthAuthorize',
      example: {
        request: {
          response_type: 'code',
          client_id: 'mcp_client_0193b1f0',
          redirect_uri: 'http://127.0.0.1:33418/callback',
          code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
          code_challenge_method: 'S256',
          scope: 'mcp',
          state: 'af0ifjsldkj',
        },
      },
      produces: ['text/html'],
      summary: 'OAuth sign-in and consent page',
      tags: ['oauth'],
      querystring: AuthorizeQuery,
      description: 'Sign-in and consent page (HTML). Errors are pages too: the server never redirects a failed request (RFC 9700 §4.11.2).',
      onlyHtmlErrors: true,
      htmlErrors: {
        400: AUTHORIZE_400,
        500: PAGE_500,
      },
    },
    errorHandler: pageErrorHandler,
    handler: async (req, reply) => {
      let areq: AuthorizationRequest;
      try {
        areq = await checkAuthorizationRequest(ctx(), { ...req.query, response_type: req.query.response_type ?? '' });
      } catch (err) {
        return authorizeFailure(err, reply);
      }
      const user = await browserUser(req);
      return showPage(reply, 200, areq, user?.email ?? null, null);
    },
  });

  app.post(OAUTH_PATHS.authorize, {
    onRequest: onlyMediaTypes([FORM]),
    schema: {
      operationId: 'postOAuthAuthorize',
      example: {
        request: {
          client_id: 'mcp_client_0193b1f0',
          redirect_uri: 'http://127.0.0.1:33418/callback',
          code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
          code_challenge_method: 'S256',
          scope: 'mcp',
          state: 'af0ifjsldkj',
          action: 'approve',
        },
      },
      consumes: ['application/x-www-form-urlencoded'],
      redirect: { status: 303, description: 'To the client’s redirect URI: with `code` and `state` when approved, with `error=access_denied` when denied.' },
      summary: 'Submit OAuth consent',
      tags: ['oauth'],
      description:
        "The consent form (application/x-www-form-urlencoded, posted by this site's own page: another Origin, or `Origin: null`, is refused). " +
        'E-mail and password are checked by the sign-in service (captcha, per-address limits). Approve redirects with code and state, deny with error=access_denied. ' +
        'Errors are pages, never redirects.',
      body: AuthorizeForm,
      onlyHtmlErrors: true,
      htmlErrors: {
        400: `${AUTHORIZE_400} Also a form without the fields it needs, an action other than approve or deny, or a failed captcha.`,
        401: 'Not signed in (no session in this browser and no e-mail and password in the form), or a wrong e-mail or password: the sign-in page again, with the message.',
        403: 'The form was not posted from this site (another Origin, `Origin: null`, or a session cookie sent cross-site).',
        413: 'The form is larger than the request body limit.',
        415: 'The body is not application/x-www-form-urlencoded (JSON is refused here), or it is compressed (Content-Encoding).',
        429: 'Too many sign-in attempts from this address (AUTH_RATE_LIMIT_PER_MINUTE); wait the seconds in Retry-After.',
        500: PAGE_500,
      },
    },
    errorHandler: pageErrorHandler,
    handler: async (req, reply) => {
      // Only this site's page may post the form: a cross-site post (or a sandboxed frame's
      // `Origin: null`) must not approve anything nor be bounced to a redirect URI.
      const site = requestSite(req, deps.config.publicBaseUrl);
      const form = req.body;
      const withPassword = Boolean(form.email && form.password);
      if (site === 'cross-site' || (site === 'unknown' && !withPassword)) {
        return reply.code(403).headers(PAGE_HEADERS).send(errorPage('access_denied', 'The form was not posted from this site'));
      }
      let areq: AuthorizationRequest;
      try {
        areq = await checkAuthorizationRequest(ctx(), form);
      } catch (err) {
        return authorizeFailure(err, reply);
      }
      if (form.action === 'deny') {
        return reply
          .header('cache-control', 'no-store')
          .redirect(redirectWith(areq.redirectUri, { error: 'access_denied', error_description: 'The user denied access', state: areq.state }), 303);
      }
      if (form.action !== 'approve') {
        return authorizeFailure(new RedirectAuthorizeError(new InvalidRequestError('action must be approve or deny'), areq.redirectUri, areq.state), reply);
      }
      let userId: string;
      if (withPassword) {
        // Password guesses here count against the same per-address budget as /api/auth/login.
        const budget = await deps.rateLimiter.consumeAuth('/api/auth/login', req.ip);
        if (!budget.allowed) throw refuse(budget, 'sign-in attempts from this address');
        try {
          const s = await login(deps, { email: form.email as string, password: form.password as string, captcha_response: captchaResponseOf(form) }, req.ip);
          userId = s.user.id;
          // Remember the sign-in in this browser, like the login route does.
          setSessionCookie(reply, deps.config, s.token, s.expires_at);
        } catch (err) {
          if (err instanceof AppError && err.status < 500) return showPage(reply, err.status, areq, null, err.message, form.email ?? '');
          if (err instanceof ValidationFailure) return showPage(reply, 400, areq, null, err.issues.map((d) => d.msg).join('; '), form.email ?? '');
          throw err;
        }
      } else {
        const user = await browserUser(req);
        if (!user) return showPage(reply, 401, areq, null, 'Sign in to continue', form.email ?? '');
        userId = user.id;
      }
      const code = await issueCode(ctx(), areq, userId);
      return reply.header('cache-control', 'no-store').redirect(redirectWith(areq.redirectUri, { code, state: areq.state }), 303);
    },
  });

  // --- token and revocation ---------------------------------------------------------------------

  app.post(OAUTH_PATHS.token, {
    config: { crossOrigin: true },
    onRequest: onlyMediaTypes([FORM, JSON_TYPE]),
    schema: {
      operationId: 'createOAuthToken',
      example: {
        request: {
          grant_type: 'authorization_code',
          client_id: 'mcp_client_0193b1f0',
          code: 'tsfc_SplxlOBeZQQYbYS6WxSbIA',
          code_verifier: 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk',
          redirect_uri: 'http://127.0.0.1:33418/callback',
        },
      },
      consumes: ['application/x-www-form-urlencoded', 'application/json'],
      summary: 'Get an OAuth token',
      tags: ['oauth'],
      description: 'authorization_code (PKCE S256) and refresh_token (rotating) grants; form body. Limited per client address.',
      body: TokenForm,
      response: { 200: TokenResponse, 400: OAuthErrorBody, 401: OAuthErrorBody, 415: OAuthErrorBody, 429: OAuthErrorBody },
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
    config: { crossOrigin: true },
    onRequest: onlyMediaTypes([FORM, JSON_TYPE]),
    schema: {
      operationId: 'revokeOAuthToken',
      example: { request: { token: 'tsfo_45ghiukldjahdnhzdauz', token_type_hint: 'refresh_token', client_id: 'mcp_client_0193b1f0' } },
      consumes: ['application/x-www-form-urlencoded', 'application/json'],
      summary: 'Revoke an OAuth token',
      tags: ['oauth'],
      description: 'RFC 7009 token revocation; form body. Limited per client address.',
      body: RevokeForm,
      response: { 200: z.object({}), 400: OAuthErrorBody, 401: OAuthErrorBody, 415: OAuthErrorBody, 429: OAuthErrorBody },
    },
    errorHandler: (err, req, reply) => sendOAuthError(err, req, reply, (e) => new InvalidRequestError(describeIssues(e))),
    handler: async (req, reply) => {
      const client = await authenticateClient(deps.database.db, req.body, req.headers.authorization);
      await revokeToken(ctx(), client, req.body.token);
      return reply.header('cache-control', 'no-store').send({});
    },
  });
}

/** The captcha answer, under the name the API uses or the one the hCaptcha/Turnstile widget posts. */
function captchaResponseOf(form: {
  captcha_response?: string | null | undefined;
  'h-captcha-response'?: string | undefined;
  'cf-turnstile-response'?: string | undefined;
}) {
  return form.captcha_response || form['h-captcha-response'] || form['cf-turnstile-response'] || null;
}

class OAuthClientMetadataError extends OAuthError {
  static override errorCode = 'invalid_client_metadata';
}
class UnsupportedGrant extends OAuthError {
  static override errorCode = 'unsupported_grant_type';
}
