import type { FastifyReply } from 'fastify';

/** The browser's session cookie (the same session token an API client sends as Bearer). */
export const SESSION_COOKIE = 'tsfm_session';

/** Sets the session cookie: HttpOnly, SameSite=Lax, Secure per COOKIE_SECURE, site-wide, expiring with the session. */
export function setSessionCookie(reply: FastifyReply, cfg: { cookieSecure: boolean }, token: string, expiresAt: number): FastifyReply {
  return reply.setCookie(SESSION_COOKIE, token, {
    httpOnly: true,
    sameSite: 'lax',
    secure: cfg.cookieSecure,
    path: '/',
    expires: new Date(expiresAt),
  });
}

export function clearSessionCookie(reply: FastifyReply): FastifyReply {
  return reply.clearCookie(SESSION_COOKIE, { path: '/' });
}

/**
 * The state of a provider sign-in in progress (OAuth `state`, checked on the callback): HttpOnly,
 * SameSite=Lax (the provider's redirect back is a top-level GET), Secure per COOKIE_SECURE, sent
 * only to the callback path, ten minutes.
 */
export function setSignInStateCookie(reply: FastifyReply, cfg: { cookieSecure: boolean }, name: string, state: string, path: string): FastifyReply {
  return reply.setCookie(name, state, { httpOnly: true, sameSite: 'lax', secure: cfg.cookieSecure, path, maxAge: 600 });
}

export function clearSignInStateCookie(reply: FastifyReply, name: string, path: string): FastifyReply {
  return reply.clearCookie(name, { path });
}
