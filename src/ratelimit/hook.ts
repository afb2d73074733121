import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../deps-types.ts';
import { consumeFor, refuse, type RateDecision } from './limiter.ts';

/**
 * Routes limited per client address (AUTH_RATE_LIMIT_PER_MINUTE each), against brute force,
 * CPU burning (password hashing) and mail flooding. Authenticated ones among them (invites,
 * resend) also count against the account as usual. The OAuth endpoints are here too: the consent
 * form checks passwords, and registration, token and revocation are open to anyone. Failed
 * credential checks on any route count per address too (src/http/auth.ts, FAILED_CREDENTIALS).
 */
export const AUTH_LIMITED_ROUTES: ReadonlySet<string> = new Set([
  '/api/auth/login',
  '/api/auth/register',
  '/api/auth/forgot-password',
  '/api/auth/reset-password',
  '/api/auth/verify-email',
  '/api/auth/verify-email/resend',
  '/verify-email',
  '/api/auth/oauth/start',
  '/api/contact',
  '/api/account/invites',
  '/oauth/authorize',
  '/oauth/token',
  '/oauth/register',
  '/oauth/revoke',
  // Public, and checks the API key in its body.
  '/v1/validate',
]);

/** Is a request of this method to this route counted against its client address? (Sign-in and the forms post; the OAuth start is a GET.) */
export const isAddressLimited = (url: string, method: string): boolean =>
  AUTH_LIMITED_ROUTES.has(url) && (method === 'POST' || url === '/api/auth/oauth/start');

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * How many rate-limit points a request counts for (default 1; 0 counts nothing here, the
     * route counts itself, as /mcp does per tool call). Declared operations set it from their
     * declaration (a batch counts its items).
     */
    points?: (req: FastifyRequest) => number;
  }
}

function applyHeaders(reply: FastifyReply, d: RateDecision): void {
  reply.header('x-ratelimit-limit', String(d.limit));
  reply.header('x-ratelimit-remaining', String(d.remaining));
  reply.header('x-ratelimit-reset', String(d.resetAt));
}

/**
 * Per-address limits count before the body is read (onRequest: a refused sign-in attempt is not
 * parsed). Account limits count once the body is parsed (preValidation: a batch counts its items),
 * after the auth hook resolved the caller (onRequest): every authenticated request counts against
 * its account, whatever the credential; the headers go on every limited response.
 */
export function registerRateLimitHook(app: FastifyInstance, deps: Pick<Deps, 'rateLimiter'>): void {
  app.addHook('onRequest', async (req, reply) => {
    const url = req.routeOptions.url;
    if (url && isAddressLimited(url, req.method)) {
      const d = await deps.rateLimiter.consumeAuth(url, req.ip);
      applyHeaders(reply, d);
      if (!d.allowed) {
        if (req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined) reply.header('connection', 'close');
        throw refuse(d, 'attempts from this address');
      }
    }
  });
  app.addHook('preValidation', async (req, reply) => {
    if (!req.principal) return;
    const points = req.routeOptions.config.points?.(req) ?? 1;
    if (points <= 0) return;
    const { decision, what } = await consumeFor(deps.rateLimiter, req.principal, points);
    applyHeaders(reply, decision);
    if (!decision.allowed) throw refuse(decision, what);
  });
}
