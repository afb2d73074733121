import type { FastifyInstance, FastifyRequest } from 'fastify';
import { resolveCredential, type Principal } from '../accounts/credentials.ts';
import type { Deps } from '../deps-types.ts';
import { AppError } from '../shared/errors.ts';
import { ErrorBody } from '../shared/schemas.ts';
import { requireScope, SCOPES, type Scope } from '../shared/scopes.ts';

import { refuse } from '../ratelimit/limiter.ts';
import { SESSION_COOKIE } from './cookies.ts';

export { SESSION_COOKIE };

/** Per-route authentication requirement, declared in the route's `config.auth`. */
export type AuthMode = 'public' | 'optional' | 'user' | 'admin';

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: AuthMode;
    /** OAuth access tokens are bound to the MCP resource; only routes that set this accept them. */
    acceptsOAuthTokens?: boolean;
    /**
     * The scope an API key (or OAuth token) needs for this route; sessions hold every scope
     * (least privilege, ADR 0016). Declared operations set it from their declaration.
     */
    scope?: Scope;
  }
  interface FastifyRequest {
    principal: Principal | null;
  }
}

/** The bearer token, or the browser's session cookie; null when neither is sent. */
export function credentialFrom(req: FastifyRequest): string | null {
  const h = req.headers.authorization;
  if (typeof h === 'string' && h.length > 0) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
    if (!m?.[1]) throw new AppError('invalid_credential', 'Authorization header must be "Bearer <token>"');
    return m[1];
  }
  const c = req.cookies?.[SESSION_COOKIE];
  return c ? c : null;
}

/** The per-address bucket of failed credential checks (src/ratelimit/limiter.ts `consumeAuth`). */
export const FAILED_CREDENTIALS = 'failed-credentials';

export function registerAuthHook(app: FastifyInstance, deps: Deps): void {
  app.decorateRequest('principal', null);
  // A route's scope reaches the OpenAPI document here, once: its 403 and a sentence saying who may call it.
  app.addHook('onRoute', (route) => {
    const scope = route.config?.scope;
    if (!scope) return;
    const schema = route.schema ?? {};
    const note = `Needs a signed-in session or an API key with scope ${scope} (${SCOPES[scope]}).`;
    route.schema = {
      ...schema,
      description: schema.description ? `${schema.description} ${note}` : note,
      response: { ...(schema.response as Record<number, unknown> | undefined), 403: ErrorBody },
    };
  });
  // onRequest, before the body is read: a request without a credential, or with one that does not
  // resolve, is refused without reading or parsing its body (a 9 MB body was 0.41 CPU-s of parsing
  // before its 401). The refusal closes the connection, so the rest of the body is not read either.
  app.addHook('onRequest', async (req, reply) => {
    const mode = req.routeOptions.config.auth ?? 'public';
    if (mode === 'public') return;
    try {
      await authenticate(req, mode);
    } catch (err) {
      if (hasBody(req)) reply.header('connection', 'close');
      throw err;
    }
  });
  async function authenticate(req: FastifyRequest, mode: Exclude<AuthMode, 'public'>): Promise<void> {
    const token = credentialFrom(req);
    if (token === null) {
      if (mode === 'optional') return;
      throw new AppError('missing_credential', 'A credential is required: send "Authorization: Bearer <token>"');
    }
    try {
      req.principal = await resolveCredential(deps.database.db, token, deps.clock.now(), deps.credentialResolvers, deps.database);
    } catch (err) {
      // Failed checks count per client address (AUTH_RATE_LIMIT_PER_MINUTE): past the limit, a wrong
      // credential is a 429 instead of a 401, so guessing costs the guesser time; right ones still pass.
      if (err instanceof AppError && err.code === 'invalid_credential') {
        const d = await deps.rateLimiter.consumeAuth(FAILED_CREDENTIALS, req.ip);
        if (!d.allowed) throw refuse(d, 'failed credential checks from this address');
      }
      throw err;
    }
    if (req.principal.kind === 'oauth' && req.routeOptions.config.acceptsOAuthTokens !== true) {
      req.principal = null;
      throw new AppError('invalid_credential', 'OAuth access tokens are accepted only by the MCP endpoint (/mcp)');
    }
    if (mode === 'admin' && req.principal.user.role !== 'admin') {
      throw new AppError('forbidden', 'This operation needs the administrator role');
    }
    const scope = req.routeOptions.config.scope;
    if (scope) requireScope(req.principal, scope);
  }
}

const hasBody = (req: FastifyRequest): boolean =>
  req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');

/** The authenticated caller of a route declared with auth 'user' or 'admin'. */
export function principalOf(req: FastifyRequest): Principal {
  if (!req.principal) throw new AppError('missing_credential', 'A credential is required');
  return req.principal;
}
