import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { SESSION_COOKIE } from './cookies.ts';
import { AppError } from '../shared/errors.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * Called by other sites' pages with headers or form fields, never with the cookie (OAuth
     * discovery, registration, token, revocation, /mcp): the cross-site check does not apply.
     */
    crossOrigin?: boolean;
  }
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Where a browser says the request comes from. `same-origin`: `Origin` is this site (its public
 * base URL, or the host the request was sent to), or, without `Origin`, `Sec-Fetch-Site:
 * same-origin`. `cross-site`: any other `Origin` (including `null`, which sandboxed frames and
 * privacy redirects send) or any other `Sec-Fetch-Site`. `unknown`: neither header (curl, servers).
 * Browsers set both headers themselves; a page cannot forge them.
 */
export function requestSite(req: FastifyRequest, publicBaseUrl: string): 'same-origin' | 'cross-site' | 'unknown' {
  const origin = req.headers.origin;
  if (typeof origin === 'string') {
    const ours = new Set([new URL(publicBaseUrl).origin, `${req.protocol}://${req.host}`]);
    return ours.has(origin) ? 'same-origin' : 'cross-site';
  }
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin' ? 'same-origin' : 'cross-site';
  return 'unknown';
}

const isJson = (contentType: string | undefined): boolean => {
  const essence = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  return essence === 'application/json' || /^application\/[a-z0-9.+-]+\+json$/.test(essence);
};

const hasBody = (req: FastifyRequest): boolean =>
  req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');

/**
 * Cross-site request forgery defence for the browser's ambient credential, the session cookie
 * (SameSite=Lax alone lets a same-site page or a top-level form post through):
 * - an unsafe request that carries the session cookie (and no Authorization header) must come
 *   from this site: `Origin` of this site, or `Sec-Fetch-Site: same-origin` when no Origin;
 * - an unsafe request from another site's page is refused even without the cookie (login CSRF);
 * - a cookie-authenticated request to an authenticated route sends JSON: form encodings, which
 *   any page can post without a CORS preflight, are refused (415).
 * Requests with an `Authorization` header (API keys, session and OAuth bearer tokens) carry no
 * ambient credential and are not affected; neither are routes declared `crossOrigin`.
 * This is OWASP's "verify the origin with standard headers" defence, with Fetch Metadata as the
 * fallback; no token is needed because every browser that runs the web app sends one of them.
 */
export function registerCsrfHook(app: FastifyInstance, config: Pick<Config, 'publicBaseUrl'>): void {
  app.addHook('onRequest', async (req) => {
    if (SAFE_METHODS.has(req.method)) return;
    if (req.headers.authorization !== undefined) return;
    if (req.routeOptions.config.crossOrigin === true) return;
    const withCookie = typeof req.cookies?.[SESSION_COOKIE] === 'string';
    const site = requestSite(req, config.publicBaseUrl);
    if (site === 'cross-site') {
      throw new AppError('forbidden', `Cross-site request refused: Origin ${req.headers.origin ?? '(none)'} is not this site`);
    }
    if (withCookie && site === 'unknown') {
      throw new AppError(
        'forbidden',
        'A request authenticated by the session cookie must come from this site (an Origin or Sec-Fetch-Site header); scripts send "Authorization: Bearer <token>" instead',
      );
    }
    const auth = req.routeOptions.config.auth ?? 'public';
    if (withCookie && auth !== 'public' && hasBody(req) && !isJson(req.headers['content-type'])) {
      throw new AppError('unsupported_media_type', `Send the body as application/json (got ${req.headers['content-type'] ?? 'no content type'})`);
    }
  });
}
