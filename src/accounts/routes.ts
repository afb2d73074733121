import type { Deps } from '../deps-types.ts';
import type { ZApp } from '../http/types.ts';
import { principalOf } from '../http/auth.ts';
import { clearSessionCookie, setSessionCookie } from '../http/cookies.ts';
import { AUTH_ERRORS, errors } from '../shared/schemas.ts';
import { iso } from '../shared/clock.ts';
import { z } from 'zod';
import { AppError } from '../shared/errors.ts';
import {
  ForgotPasswordRequest,
  LoginRequest,
  MessageResponse,
  PrivacySettings,
  PrivacySettingsRequest,
  PublicUserSchema,
  RegisterRequest,
  ResetPasswordRequest,
  SessionResponse,
  VerifyEmailRequest,
  VerifyEmailResponse,
} from './schemas.ts';
import * as accounts from './service.ts';
import { confirmEmail, resendVerification, VERIFY_PAGE_PATH } from './verification.ts';
import { PAGE_REFERRER_POLICY, verifyPage, verifyResultPage } from './pages.ts';

export function registerAccountRoutes(app: ZApp, deps: Deps): void {
  app.post('/api/auth/register', {
    schema: {
      operationId: 'registerUser',
      example: { request: { email: 'ada@example.com', password: 'correct horse battery staple', name: 'Ada' } },
      summary: 'Create an account',
      description:
        'Creates an account with e-mail and password, signs it in (session cookie and token) and mails a confirmation link. Limited per client address.',
      tags: ['auth'],
      body: RegisterRequest,
      response: { 200: SessionResponse, ...errors(409, 422, 429) },
    },
    handler: async (req, reply) => {
      const s = await accounts.register(deps, req.body, req.ip, deps.accountCreatedHooks);
      setSessionCookie(reply, deps.config, s.token, s.expires_at);
      return { token: s.token, expires_at: iso(s.expires_at), user: s.user };
    },
  });

  app.post('/api/auth/login', {
    schema: {
      operationId: 'loginUser',
      example: { request: { email: 'ada@example.com', password: 'correct horse battery staple' } },
      summary: 'Sign in',
      description: 'Signs in with e-mail and password: answers a session token (also set as an HttpOnly cookie for browsers). Limited per client address.',
      tags: ['auth'],
      body: LoginRequest,
      response: { 200: SessionResponse, ...errors(401, 422, 429) },
    },
    handler: async (req, reply) => {
      const s = await accounts.login(deps, req.body, req.ip);
      setSessionCookie(reply, deps.config, s.token, s.expires_at);
      return { token: s.token, expires_at: iso(s.expires_at), user: s.user };
    },
  });

  app.post('/api/auth/logout', {
    config: { auth: 'user' },
    schema: {
      operationId: 'logoutUser',
      example: { response: { ok: true, message: 'Signed out' } },
      summary: 'Sign out',
      description: 'Ends the session this call is made with and clears the session cookie.',
      tags: ['auth'],
      security: [{ bearer: [] }],
      response: { 200: MessageResponse, ...errors(...AUTH_ERRORS) },
    },
    handler: async (req, reply) => {
      await accounts.logout(deps, principalOf(req));
      clearSessionCookie(reply);
      return { ok: true as const, message: 'Signed out' };
    },
  });

  app.post('/api/auth/forgot-password', {
    schema: {
      operationId: 'forgotPassword',
      example: { request: { email: 'ada@example.com' } },
      summary: 'Ask for a password reset link',
      description:
        'Mails a single-use reset link when an account has this address (at most PASSWORD_RESET_MAILS_PER_HOUR an hour per account); the answer is the same either way, so it does not reveal which addresses have accounts.',
      tags: ['auth'],
      body: ForgotPasswordRequest,
      response: { 200: MessageResponse, ...errors(422, 429) },
    },
    handler: async (req) => {
      await accounts.forgotPassword(deps, req.body.email);
      return { ok: true as const, message: 'If an account exists for this e-mail, a reset link has been sent' };
    },
  });

  app.post('/api/auth/reset-password', {
    schema: {
      operationId: 'resetPassword',
      example: { request: { token: 'tsfr_Q2hhbmdlIG1lOiB0aGlzIGlzIGFuIGV4YW1wbGU', password: 'a new long passphrase' } },
      summary: 'Set a new password',
      tags: ['auth'],
      description:
        "Sets a new password from the mailed link, ends the account's other reset links and signs the account out everywhere (sessions and OAuth grants). API keys stay valid: DELETE /api/account/keys revokes them all.",
      body: ResetPasswordRequest,
      response: { 200: MessageResponse, ...errors(401, 422, 429) },
    },
    handler: async (req) => {
      await accounts.resetPassword(deps, req.body.token, req.body.password);
      return { ok: true as const, message: 'Password changed; all sessions and OAuth grants were signed out (API keys stay valid)' };
    },
  });

  app.post('/api/auth/sign-out-everywhere', {
    config: { auth: 'user', scope: 'account:write' },
    schema: {
      operationId: 'signOutEverywhere',
      example: { response: { ok: true, message: 'Signed out everywhere: 3 sessions and 1 OAuth tokens revoked' } },
      summary: 'Sign out everywhere',
      tags: ['auth'],
      security: [{ bearer: [] }],
      description: 'Revokes every session (this one too) and every OAuth grant of the account. API keys stay valid: DELETE /api/account/keys revokes them all.',
      response: { 200: MessageResponse, ...errors(...AUTH_ERRORS) },
    },
    handler: async (req, reply) => {
      const r = await accounts.signOutAll(deps, principalOf(req));
      clearSessionCookie(reply);
      return { ok: true as const, message: `Signed out everywhere: ${r.sessions} sessions and ${r.oauth_tokens} OAuth tokens revoked` };
    },
  });

  app.post('/api/auth/verify-email', {
    schema: {
      operationId: 'verifyEmail',
      example: { request: { token: 'tsfv_Q2hhbmdlIG1lOiB0aGlzIGlzIGFuIGV4YW1wbGU' } },
      summary: 'Confirm the e-mail address',
      tags: ['auth'],
      description:
        'Confirms the e-mail address with the token from the mailed link (single use). Verification unlocks the free credits (FREE_CREDITS_ON=verify) and the administrator role of ADMIN_EMAILS. ' +
        'A link of an account whose address is already confirmed (used before, or another of its links) answers 200 with already_verified true and changes nothing; an unknown or expired link of an unconfirmed account is 401.',
      body: VerifyEmailRequest,
      response: { 200: VerifyEmailResponse, ...errors(401, 422, 429) },
    },
    handler: async (req) => {
      const c = await confirmEmail(deps, req.body.token);
      return { ok: true as const, already_verified: c.alreadyVerified, user: c.user };
    },
  });

  app.post('/api/auth/verify-email/resend', {
    config: { auth: 'user', scope: 'account:write' },
    schema: {
      operationId: 'resendVerificationEmail',
      example: { response: { ok: true, message: 'A new confirmation link was sent' } },
      summary: 'Mail a new confirmation link',
      tags: ['auth'],
      security: [{ bearer: [] }],
      description: 'Mails a new confirmation link to the account (EMAIL_VERIFICATION_RESENDS_PER_HOUR per hour). 409 when the address is already confirmed.',
      response: { 200: MessageResponse, ...errors(...AUTH_ERRORS, 409) },
    },
    handler: async (req) => {
      await resendVerification(deps, principalOf(req));
      return { ok: true as const, message: 'A new confirmation link was sent' };
    },
  });

  // The mailed link opens this page. GET only shows a button: mail scanners that prefetch links
  // must not use up the single-use token; the button's POST does.
  app.get(VERIFY_PAGE_PATH, {
    schema: {
      operationId: 'getVerifyEmailPage',
      example: { request: { token: 'tsfv_Q2hhbmdlIG1lOiB0aGlzIGlzIGFuIGV4YW1wbGU' } },
      produces: ['text/html'],
      summary: 'E-mail confirmation page',
      tags: ['auth'],
      description: 'The page the confirmation mail links to (HTML): a button that confirms the address.',
      querystring: z.object({ token: z.string().max(512).optional() }),
    },
    handler: async (req, reply) =>
      reply
        .type('text/html; charset=utf-8')
        .header('cache-control', 'no-store')
        .header('referrer-policy', PAGE_REFERRER_POLICY)
        .send(verifyPage(req.query.token ?? '', `${deps.config.publicBaseUrl}${VERIFY_PAGE_PATH}`)),
  });
  app.post(VERIFY_PAGE_PATH, {
    schema: {
      operationId: 'submitVerifyEmailPage',
      example: { request: { token: 'tsfv_Q2hhbmdlIG1lOiB0aGlzIGlzIGFuIGV4YW1wbGU' } },
      consumes: ['application/x-www-form-urlencoded', 'application/json'],
      produces: ['text/html'],
      summary: 'Confirm from the confirmation page',
      tags: ['auth'],
      description:
        "The confirmation page's form (form-encoded `token`); answers an HTML page. A JSON body (`{token}`) is answered the same way, but its errors are JSON `{error, code}`.",
      body: z.object({ token: z.string().max(512) }),
      htmlErrors: {
        401: { when: 'a form-encoded post whose token is invalid, used or expired gets a page saying so; a JSON body gets the JSON error.', alsoJson: true },
      },
    },
    handler: async (req, reply) => {
      reply.header('cache-control', 'no-store');
      try {
        const { user, alreadyVerified } = await confirmEmail(deps, req.body.token);
        const said = alreadyVerified ? 'is already confirmed' : 'is confirmed';
        return reply.type('text/html; charset=utf-8').send(verifyResultPage(true, `${user.email} ${said}. You can close this page and sign in.`));
      } catch (err) {
        // A browser's form gets a page; API clients (JSON) get the usual {error, code}.
        const fromForm = String(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded');
        if (err instanceof AppError && fromForm) return reply.code(err.status).type('text/html; charset=utf-8').send(verifyResultPage(false, err.message));
        throw err;
      }
    },
  });

  app.get('/api/account/me', {
    config: { auth: 'user' },
    schema: {
      operationId: 'getAccountMe',
      example: {
        response: {
          id: 'usr_0193b1f0c2d47a6e9b3f5c1d2e4f6a8b',
          email: 'ada@example.com',
          name: 'Ada',
          role: 'user',
          email_verified: true,
          created_at: '2026-11-02T09:30:00.000Z',
        },
      },
      summary: 'The signed-in account',
      description: 'The account of the credential: id, e-mail, whether it is confirmed, role and creation time.',
      tags: ['account'],
      security: [{ bearer: [] }],
      response: { 200: PublicUserSchema, ...errors(...AUTH_ERRORS) },
    },
    handler: async (req) => accounts.getMe(deps, principalOf(req)),
  });

  app.delete('/api/account/me', {
    config: { auth: 'user', scope: 'account:write' },
    schema: {
      operationId: 'deleteAccountMe',
      example: { response: { ok: true, message: 'Account and all its data deleted' } },
      summary: 'Delete the account',
      description:
        'Deletes the account and everything it owns (keys, sessions, usage, billing records) in one transaction, and clears the session cookie. It cannot be undone.',
      tags: ['account'],
      security: [{ bearer: [] }],
      response: { 200: MessageResponse, ...errors(...AUTH_ERRORS) },
    },
    handler: async (req, reply) => {
      await accounts.deleteMe(deps, principalOf(req));
      clearSessionCookie(reply);
      return { ok: true as const, message: 'Account and all its data deleted' };
    },
  });

  const privacyRoute = { config: { auth: 'user' as const }, tags: ['account'] };
  app.get('/api/account/privacy', {
    config: privacyRoute.config,
    schema: {
      operationId: 'getPrivacySettings',
      example: { response: { service_improvement_opt_in: false } },
      summary: 'Privacy settings',
      description: 'Whether the account allows its requests to be used to improve the service.',
      tags: privacyRoute.tags,
      security: [{ bearer: [] }],
      response: { 200: PrivacySettings, ...errors(...AUTH_ERRORS) },
    },
    handler: async (req) => accounts.getPrivacy(deps, principalOf(req)),
  });
  for (const [method, operationId] of [
    ['PATCH', 'patchPrivacySettings'],
    ['POST', 'postPrivacySettings'],
  ] as const) {
    app.route({
      method,
      url: '/api/account/privacy',
      config: { ...privacyRoute.config, scope: 'account:write' as const },
      schema: {
        operationId,
        example: { request: { service_improvement_opt_in: true } },
        summary: method === 'PATCH' ? 'Change privacy settings' : 'Change privacy settings (POST alias)',
        description:
          'Sets whether the account allows its requests to be used to improve the service; answers the settings as stored. POST does the same as PATCH, for clients that cannot send PATCH.',
        tags: privacyRoute.tags,
        security: [{ bearer: [] }],
        body: PrivacySettingsRequest,
        response: { 200: PrivacySettings, ...errors(...AUTH_ERRORS) },
      },
      handler: async (req) => accounts.setPrivacy(deps, principalOf(req), req.body.service_improvement_opt_in),
    });
  }
}
