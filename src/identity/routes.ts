import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import { resolveCredential } from '../accounts/credentials.ts';
import type { Deps } from '../deps-types.ts';
import { principalOf } from '../http/auth.ts';
import { clearSignInStateCookie, SESSION_COOKIE, setSessionCookie, setSignInStateCookie } from '../http/cookies.ts';
import { notFound } from '../shared/errors.ts';
import { AUTH_ERRORS, errors, Ok } from '../shared/schemas.ts';
import type { ZApp } from '../http/types.ts';
import { buildProviders } from './providers.ts';
import { completeSignIn, DEFAULT_NEXT, listIdentities, SignInError, startSignIn, unlinkIdentity } from './service.ts';

const STATE_COOKIE = 'tsfm_oauth_state';
const CALLBACK_PREFIX = '/api/auth/oauth/callback';
/** Where a failed provider sign-in lands, with `?oauth_error=<code>`. */
export const SIGN_IN_ERROR_PATH = '/login';

const Identity = z
  .object({ provider: z.string(), email: z.string().nullable(), created_at: z.string(), last_login_at: z.string().nullable() })
  .meta({ id: 'OAuthIdentity' });
const IdentityList = z
  .object({ identities: z.array(Identity), providers: z.array(z.object({ name: z.string(), label: z.string() })) })
  .meta({ id: 'OAuthIdentityList' });

export function registerIdentityRoutes(app: ZApp, deps: Deps): void {
  const providers = buildProviders(deps.config.identityProviders);
  const provider = (name: string) => {
    const p = providers.get(name);
    if (!p) throw notFound(`Identity provider '${name}'`);
    return p;
  };

  app.get('/api/auth/oauth/start', {
    schema: {
      operationId: 'startOAuth',
      example: { request: { provider: 'github', next: '/app' } },
      redirect: { status: 302, description: 'To the provider’s sign-in page (with state and PKCE challenge); the state cookie is set.' },
      summary: 'Sign in with a provider',
      tags: ['auth'],
      description: `Redirects to the provider (state + PKCE). \`next\` is followed only when it is a path on this site (else ${DEFAULT_NEXT}). A signed-in browser links the provider to its account.`,
      querystring: z.object({ provider: z.string().min(1).max(64), next: z.string().max(2000).default(DEFAULT_NEXT) }),
      response: { ...errors(404, 422) },
    },
    handler: async (req, reply) => {
      const p = provider(req.query.provider);
      // A browser already signed in (cookie) is linking a provider to its account.
      let linkUserId: string | null = null;
      const cookie = req.cookies?.[SESSION_COOKIE];
      if (cookie) {
        try {
          const who = await resolveCredential(deps.database.db, cookie, deps.clock.now());
          if (who.kind === 'session') linkUserId = who.user.id;
        } catch {
          /* an expired cookie simply means a fresh sign-in */
        }
      }
      const { url, state } = await startSignIn(deps, p, req.query.next, linkUserId);
      setSignInStateCookie(reply, deps.config, STATE_COOKIE, state, CALLBACK_PREFIX);
      return reply.header('cache-control', 'no-store').redirect(url.href, 302);
    },
  });

  const failed = (reply: FastifyReply, code: string) =>
    clearSignInStateCookie(reply, STATE_COOKIE, CALLBACK_PREFIX)
      .header('cache-control', 'no-store')
      .redirect(`${SIGN_IN_ERROR_PATH}?oauth_error=${encodeURIComponent(code)}`, 302);

  app.get(`${CALLBACK_PREFIX}/:provider`, {
    schema: {
      operationId: 'completeOAuthCallback',
      example: { request: { provider: 'github', code: 'a1b2c3', state: 'af0ifjsldkj' } },
      redirect: {
        status: 302,
        description: `Signed in: to \`next\` (a path on this site), with the session cookie set. Failed: to ${SIGN_IN_ERROR_PATH}?oauth_error=<code>.`,
      },
      summary: 'Provider sign-in callback',
      tags: ['auth'],
      description: `Completes the provider sign-in and redirects to \`next\`; failures redirect to ${SIGN_IN_ERROR_PATH}?oauth_error=<code>.`,
      params: z.object({ provider: z.string().min(1).max(64) }),
      querystring: z.object({ code: z.string().max(4000).nullish(), state: z.string().max(1000).nullish(), error: z.string().max(200).nullish() }).loose(),
    },
    handler: async (req, reply) => {
      const p = provider(req.params.provider);
      const current = new URL(req.url, deps.config.publicBaseUrl);
      try {
        const r = await completeSignIn(deps, p, req.query, req.cookies?.[STATE_COOKIE], current);
        setSessionCookie(reply, deps.config, r.session.token, r.session.expiresAt);
        return clearSignInStateCookie(reply, STATE_COOKIE, CALLBACK_PREFIX).header('cache-control', 'no-store').redirect(r.next, 302);
      } catch (err) {
        if (err instanceof SignInError) {
          req.log.warn({ code: err.code, msg: err.message }, 'provider sign-in failed');
          return failed(reply, err.code);
        }
        throw err;
      }
    },
  });

  app.get('/api/account/oauth/identities', {
    config: { auth: 'user' },
    schema: {
      operationId: 'listOAuthIdentities',
      example: { response: { identities: [], providers: [{ name: 'github', label: 'GitHub' }] } },
      summary: 'Linked sign-in providers',
      description: "The sign-in providers (e.g. GitHub, Google) linked to the account, with the provider's account e-mail and when they were linked.",
      tags: ['account'],
      security: [{ bearer: [] }],
      response: { 200: IdentityList, ...errors(...AUTH_ERRORS) },
    },
    handler: async (req) => ({
      identities: await listIdentities(deps, principalOf(req)),
      providers: deps.config.identityProviders.map((c) => ({ name: c.name, label: c.label })),
    }),
  });

  app.delete('/api/account/oauth/identities/:provider', {
    config: { auth: 'user', scope: 'account:write' },
    schema: {
      operationId: 'unlinkOAuthIdentity',
      example: { request: { provider: 'github' } },
      summary: 'Unlink a sign-in provider',
      description: 'Removes a linked provider. 409 when it is the only way left to sign in (no password and no other provider).',
      tags: ['account'],
      security: [{ bearer: [] }],
      params: z.object({ provider: z.string().min(1).max(64) }),
      response: { 200: Ok, ...errors(...AUTH_ERRORS, 404, 409) },
    },
    handler: async (req) => {
      await unlinkIdentity(deps, principalOf(req), req.params.provider);
      return { ok: true as const };
    },
  });
}
