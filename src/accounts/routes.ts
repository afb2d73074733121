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
import { verifyPage, verifyResultPage } from './pages.ts';

export function registerAccountRoutes(app: ZApp, deps: Deps): void {
  app.post('/api/auth/register', {
    schema: { operationId: 'registerUser', tags: ['auth'], body: RegisterRequest, response: { 200: SessionResponse, ...errors(409, 422, 429) } },
    handler: async (req, reply) => {
      const s = await accounts.register(deps, req.body, req.ip, deps.accountCreatedHooks);
      setSessionCookie(reply, deps.config, s.token, s.expires_at);
      return { token: s.token, expires_at: iso(s.expires_at), user: s.user };
    },
  });

  app.post('/api/auth/login', {
    schema: { operationId: 'loginUser', tags: ['auth'], body: LoginRequest, response: { 200: SessionResponse, ...errors(401, 422, 429) } },
    handler: async (req, reply) => {
      const s = await accounts.login(deps, req.body, req.ip);
      setSessionCookie(reply, deps.config, s.token, s.expires_at);
      return { token: s.token, expires_at: iso(s.expires_at), user: s.user };
    },
  });

  app.post('/api/auth/logout', {
    config: { auth: 'user' },
    schema: { operationId: 'logoutUser', tags: ['auth'], security: [{ bearer: [] }], response: { 200: MessageResponse, ...errors(...AUTH_ERRORS) } },
    handler: async (req, reply) => {
      await accounts.logout(deps, principalOf(req));
      clearSessionCookie(reply);
      return { ok: true as const, message: 'Signed out' };
    },
  });

  app.post('/api/auth/forgot-password', {
    schema: { operationId: 'forgotPassword', tags: ['auth'], body: ForgotPasswordRequest, response: { 200: MessageResponse, ...errors(422, 429) } },
    handler: async (req) => {
      await accounts.forgotPassword(deps, req.body.email);
      return { ok: true as const, message: 'If an account exists for this e-mail, a reset link has been sent' };
    },
  });

  app.post('/api/auth/reset-password', {
    schema: {
      operationId: 'resetPassword',
      tags: ['auth'],
      description:
        'Sets a new password from the mailed link and signs the account out everywhere (sessions and OAuth grants). API keys stay valid: DELETE /api/account/keys revokes them all.',
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
      tags: ['auth'],
      description:
        'Confirms the e-mail address with the token from the mailed link (single use). Verification unlocks the free credits (FREE_CREDITS_ON=verify) and the administrator role of ADMIN_EMAILS.',
      body: VerifyEmailRequest,
      response: { 200: VerifyEmailResponse, ...errors(401, 422, 429) },
    },
    handler: async (req) => ({ ok: true as const, user: await confirmEmail(deps, req.body.token) }),
  });

  app.post('/api/auth/verify-email/resend', {
    config: { auth: 'user', scope: 'account:write' },
    schema: {
      operationId: 'resendVerificationEmail',
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
      tags: ['auth'],
      description: 'The page the confirmation mail links to (HTML): a button that confirms the address.',
      querystring: z.object({ token: z.string().max(512).optional() }),
    },
    handler: async (req, reply) =>
      reply
        .type('text/html; charset=utf-8')
        .header('cache-control', 'no-store')
        .header('referrer-policy', 'no-referrer')
        .send(verifyPage(req.query.token ?? '', `${deps.config.publicBaseUrl}${VERIFY_PAGE_PATH}`)),
  });
  app.post(VERIFY_PAGE_PATH, {
    schema: {
      operationId: 'submitVerifyEmailPage',
      tags: ['auth'],
      description: "The confirmation page's form (form-encoded `token`); answers an HTML page.",
      body: z.object({ token: z.string().max(512) }),
    },
    handler: async (req, reply) => {
      reply.header('cache-control', 'no-store');
      try {
        const user = await confirmEmail(deps, req.body.token);
        return reply.type('text/html; charset=utf-8').send(verifyResultPage(true, `${user.email} is confirmed. You can close this page and sign in.`));
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
    schema: { operationId: 'getAccountMe', tags: ['account'], security: [{ bearer: [] }], response: { 200: PublicUserSchema, ...errors(...AUTH_ERRORS) } },
    handler: async (req) => accounts.getMe(deps, principalOf(req)),
  });

  app.delete('/api/account/me', {
    config: { auth: 'user', scope: 'account:write' },
    schema: { operationId: 'deleteAccountMe', tags: ['account'], security: [{ bearer: [] }], response: { 200: MessageResponse, ...errors(...AUTH_ERRORS) } },
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
        tags: privacyRoute.tags,
        security: [{ bearer: [] }],
        body: PrivacySettingsRequest,
        response: { 200: PrivacySettings, ...errors(...AUTH_ERRORS) },
      },
      handler: async (req) => accounts.setPrivacy(deps, principalOf(req), req.body.service_improvement_opt_in),
    });
  }
}
