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
