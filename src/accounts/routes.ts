import type { Deps } from '../deps-types.ts';
import type { ZApp } from '../http/types.ts';
import { principalOf } from '../http/auth.ts';
import { clearSessionCookie, setSessionCookie } from '../http/cookies.ts';
import { AUTH_ERRORS, errors } from '../shared/schemas.ts';
import { iso } from '../shared/clock.ts';
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
} from './schemas.ts';
import * as accounts from './service.ts';

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
    schema: { operationId: 'resetPassword', tags: ['auth'], body: ResetPasswordRequest, response: { 200: MessageResponse, ...errors(401, 422) } },
    handler: async (req) => {
      await accounts.resetPassword(deps, req.body.token, req.body.password);
      return { ok: true as const, message: 'Password changed; all sessions were signed out' };
    },
  });

  app.get('/api/account/me', {
    config: { auth: 'user' },
    schema: { operationId: 'getAccountMe', tags: ['account'], security: [{ bearer: [] }], response: { 200: PublicUserSchema, ...errors(...AUTH_ERRORS) } },
    handler: async (req) => accounts.getMe(deps, principalOf(req)),
  });

  app.delete('/api/account/me', {
    config: { auth: 'user' },
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
      config: privacyRoute.config,
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
