import { timingSafeEqual } from 'node:crypto';
import * as oidc from 'openid-client';
import type { Principal } from '../accounts/credentials.ts';
import { createUser } from '../accounts/service.ts';
import { createSession } from '../accounts/sessions.ts';
import { findUserByEmail, normaliseEmail, type UserRow } from '../accounts/users.ts';
import { isUniqueViolation } from '../db/index.ts';
import type { Deps } from '../deps-types.ts';
import { AppError, notFound } from '../shared/errors.ts';
import { iso } from '../shared/clock.ts';
import { newId } from '../shared/ids.ts';
import { hashSecret } from '../shared/secrets.ts';
import type { IdentityProvider, ProviderProfile } from './providers.ts';

export type IdentityCtx = Pick<Deps, 'database' | 'config' | 'clock' | 'accountCreatedHooks'>;

export const DEFAULT_NEXT = '/account/keys';
const STATE_TTL_MS = 10 * 60 * 1000;

/**
 * `next` is followed only when it is a path on this site: one leading slash, no scheme, no host,
 * no backslash or control characters (browsers read `/\evil` and `//evil` as other hosts).
 */
export function safeNext(next: string | undefined | null, baseUrl: string): string {
  if (!next || next.length > 2000) return DEFAULT_NEXT;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters in a redirect path is the point
  if (!next.startsWith('/') || next.startsWith('//') || /[\\\u0000-\u001f\u007f]/.test(next)) return DEFAULT_NEXT;
  try {
    const base = new URL(baseUrl);
    const u = new URL(next, base);
    if (u.origin !== base.origin) return DEFAULT_NEXT;
    return u.pathname + u.search + u.hash;
  } catch {
    return DEFAULT_NEXT;
  }
}

export const callbackUrl = (ctx: IdentityCtx, provider: string) => `${ctx.config.publicBaseUrl}/api/auth/oauth/callback/${encodeURIComponent(provider)}`;

/** Starts a sign-in: remembers state → (PKCE verifier, next) and returns where to send the browser. */
export async function startSignIn(
  ctx: IdentityCtx,
  provider: IdentityProvider,
  next: string | undefined,
  linkUserId: string | null,
): Promise<{ url: URL; state: string }> {
  const state = oidc.randomState();
  const codeVerifier = oidc.randomPKCECodeVerifier();
  const now = ctx.clock.now();
  const url = await provider.authorizationUrl({ redirectUri: callbackUrl(ctx, provider.cfg.name), state, codeVerifier });
  await ctx.database.db
    .insertInto('oauth_login_states')
    .values({
      id: newId('ols'),
      state_hash: hashSecret(state),
      provider: provider.cfg.name,
      code_verifier: codeVerifier,
      next_path: safeNext(next, ctx.config.publicBaseUrl),
      link_user_id: linkUserId,
      created_at: now,
      expires_at: now + STATE_TTL_MS,
      used_at: null,
    })
    .execute();
  return { url, state };
}

/** A sign-in that cannot complete; the code goes to the login page as `?oauth_error=`. */
export class SignInError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

const sameString = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/**
 * Completes a sign-in: the state must be the one this browser started (cookie) and unused
 * (guarded update); openid-client checks the code exchange with PKCE; then the identity is
 * found, linked to the account with the same verified e-mail, or a new account is created.
 */
export async function completeSignIn(
  ctx: IdentityCtx,
  provider: IdentityProvider,
  q: { code?: string | null | undefined; state?: string | null | undefined; error?: string | null | undefined },
  cookieState: string | undefined,
  callbackUrlWithQuery: URL,
): Promise<{ user: UserRow; next: string; session: { token: string; expiresAt: number } }> {
  if (!q.state) throw new SignInError('missing_state', 'The provider answered without state');
  if (!cookieState || !sameString(q.state, cookieState)) throw new SignInError('state_mismatch', 'This sign-in was not started in this browser');
  const now = ctx.clock.now();
  const row = await ctx.database.db
    .updateTable('oauth_login_states')
    .set({ used_at: now })
    .where('state_hash', '=', hashSecret(q.state))
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .where('provider', '=', provider.cfg.name)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw new SignInError('invalid_state', 'The sign-in expired or was already used; start again');
  if (q.error) throw new SignInError(q.error === 'access_denied' ? 'access_denied' : 'provider_error', `The provider refused: ${q.error}`);
  if (!q.code) throw new SignInError('missing_code', 'The provider answered without a code');
  let profile: ProviderProfile;
  try {
    profile = await provider.complete({
      callbackUrl: callbackUrlWithQuery,
      state: q.state,
      codeVerifier: row.code_verifier,
      redirectUri: callbackUrl(ctx, provider.cfg.name),
    });
  } catch (err) {
    throw new SignInError('provider_error', `The sign-in with the provider failed: ${err instanceof Error ? err.message : String(err)}`);
  }
  const user = await findOrCreateUser(ctx, provider.cfg.name, profile, row.link_user_id);
  const s = await createSession(ctx.database.db, user.id, ctx.clock.now(), ctx.config.sessionTtlMs);
  return { user, next: row.next_path, session: { token: s.token, expiresAt: s.expiresAt } };
}

async function findOrCreateUser(ctx: IdentityCtx, provider: string, p: ProviderProfile, linkUserId: string | null, retried = false): Promise<UserRow> {
  const db = ctx.database.db;
  const now = ctx.clock.now();
  const known = await db
    .selectFrom('oauth_identities')
    .innerJoin('users', 'users.id', 'oauth_identities.user_id')
    .selectAll('users')
    .select('oauth_identities.id as identity_id')
    .where('oauth_identities.provider', '=', provider)
    .where('oauth_identities.subject', '=', p.subject)
    .executeTakeFirst();
  if (known) {
    const { identity_id, ...user } = known;
    if (linkUserId && linkUserId !== user.id) throw new SignInError('identity_in_use', 'This provider account is already linked to another account');
    await db.updateTable('oauth_identities').set({ last_login_at: now, email: p.email }).where('id', '=', identity_id).execute();
    return user;
  }
  const identity = (userId: string) => ({
    id: newId('oid'),
    user_id: userId,
    provider,
    subject: p.subject,
    email: p.email,
    created_at: now,
    last_login_at: now,
  });
  try {
    if (linkUserId) {
      // Started by a signed-in browser: link to that account, whatever the provider's e-mail.
      const user = await db.selectFrom('users').selectAll().where('id', '=', linkUserId).executeTakeFirst();
      if (!user) throw new SignInError('invalid_state', 'The account no longer exists');
      await db.insertInto('oauth_identities').values(identity(user.id)).execute();
      return user;
    }
    if (!p.email || !p.emailVerified) {
      throw new SignInError('email_not_verified', 'The provider did not confirm an e-mail address for this account');
    }
    const email = normaliseEmail(p.email);
    const existing = await findUserByEmail(db, email);
    if (existing) {
      // Only a proven address may be taken over by a provider sign-in: otherwise whoever registered
      // the address first (without owning it) would receive the owner's provider identity.
      if (existing.email_verified_at === null) {
        throw new SignInError(
          'account_not_verified',
          'An account with this e-mail exists but its address was never confirmed, so the provider was not linked to it. Sign in to that account and link the provider from the account page, confirm the address from the mail, or reset the password by e-mail.',
        );
      }
      await db.insertInto('oauth_identities').values(identity(existing.id)).execute();
      return existing;
    }
    // Same path as register: the account-created hooks (free credits) and the identity, one transaction.
    return await createUser(ctx, { email, name: p.name, password_hash: null, email_verified: true }, ctx.accountCreatedHooks, async (trx, user) => {
      await trx.insertInto('oauth_identities').values(identity(user.id)).execute();
    });
  } catch (err) {
    // A simultaneous sign-in or registration won the race: look again once.
    if (isUniqueViolation(err) && !retried) return findOrCreateUser(ctx, provider, p, linkUserId, true);
    if (isUniqueViolation(err)) throw new SignInError('identity_in_use', 'This provider is already linked to the account');
    throw err;
  }
}

export interface PublicIdentity {
  provider: string;
  email: string | null;
  created_at: string;
  last_login_at: string | null;
}

export async function listIdentities(ctx: IdentityCtx, principal: Principal): Promise<PublicIdentity[]> {
  const rows = await ctx.database.db
    .selectFrom('oauth_identities')
    .select(['provider', 'email', 'created_at', 'last_login_at'])
    .where('user_id', '=', principal.user.id)
    .orderBy('created_at')
    .execute();
  return rows.map((r) => ({
    provider: r.provider,
    email: r.email,
    created_at: iso(r.created_at),
    last_login_at: r.last_login_at === null ? null : iso(r.last_login_at),
  }));
}

/** Removes a linked provider, unless it is the account's last way to sign in (409). */
export async function unlinkIdentity(ctx: IdentityCtx, principal: Principal, provider: string): Promise<void> {
  await ctx.database.db.transaction().execute(async (trx) => {
    // Lock the account row (PostgreSQL) so two unlinks cannot each leave the other as the last way in.
    const q = trx.selectFrom('users').select(['password_hash']).where('id', '=', principal.user.id);
    const user = await (ctx.database.dialect === 'postgres' ? q.forUpdate() : q).executeTakeFirst();
    const ids = await trx.selectFrom('oauth_identities').select(['id', 'provider']).where('user_id', '=', principal.user.id).execute();
    const target = ids.find((i) => i.provider === provider);
    if (!target) throw notFound('Linked identity');
    if (!user?.password_hash && ids.length === 1) {
      throw new AppError('conflict', 'This is the last way to sign in to the account: set a password or link another provider first');
    }
    const del = await trx.deleteFrom('oauth_identities').where('id', '=', target.id).executeTakeFirst();
    if (Number(del.numDeletedRows) !== 1) throw notFound('Linked identity');
  });
}
