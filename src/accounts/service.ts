import type { Deps } from '../deps-types.ts';
import { isUniqueViolation } from '../db/index.ts';
import { AppError, ValidationFailure } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { hashSecret, newSecret, SECRET_PREFIX } from '../shared/secrets.ts';
import type { Principal } from './credentials.ts';
import { hashPassword, verifyPassword } from './passwords.ts';
import { createSession, revokeAllSessions, revokeSession, signOutEverywhere } from './sessions.ts';
import { adminByConfig, markVerified, sendVerificationMail } from './verification.ts';
import { findUserByEmail, findUserById, normaliseEmail, toPublicUser, type PublicUser, type UserRow } from './users.ts';

export type Ctx = Pick<Deps, 'database' | 'config' | 'clock' | 'mailer' | 'captcha' | 'emailVerifiedHooks'>;

export interface RegisterInput {
  email: string;
  password: string;
  name?: string | null | undefined;
  ref?: string | null | undefined;
  accepted_data_terms_version?: string | null | undefined;
  accepted_free_tier_data_terms?: boolean | null | undefined;
  captcha_response?: string | null | undefined;
  analytics_distinct_id?: string | null | undefined;
}

export interface SessionResult {
  token: string;
  expires_at: number;
  user: PublicUser;
}

/** Hook run inside the transaction that creates an account (billing grants free credits here). */
export type AccountCreatedHook = (trx: Deps['database']['db'], user: UserRow) => Promise<void>;

async function checkCaptcha(ctx: Ctx, response: string | null | undefined, ip: string): Promise<void> {
  if (!(await ctx.captcha.verify(response, ip))) {
    throw new ValidationFailure([{ path: ['captcha_response'], msg: 'Captcha verification failed', type: 'captcha_failed' }]);
  }
}

/** What a new account is made of; everything else takes its default. */
export interface NewUser {
  email: string;
  name: string | null;
  password_hash: string | null;
  ref?: string | null | undefined;
  accepted_data_terms_version?: string | null | undefined;
  accepted_free_tier_data_terms?: boolean | null | undefined;
  analytics_distinct_id?: string | null | undefined;
  /** The address is already proven (an identity provider verified it); register leaves it false. */
  email_verified?: boolean;
}

/**
 * The one way an account is created (registration, sign-in with a provider): the row with its
 * defaults and role, then the account-created hooks (free credits) and the caller's own writes
 * (`alsoInTransaction`, e.g. the linked identity), all in one transaction. A duplicate e-mail
 * surfaces as the database's unique violation (the caller decides what it means).
 */
export async function createUser(
  ctx: Pick<Ctx, 'database' | 'config' | 'clock'>,
  fields: NewUser,
  hooks: readonly AccountCreatedHook[],
  alsoInTransaction?: (trx: Deps['database']['db'], user: UserRow) => Promise<void>,
): Promise<UserRow> {
  const email = normaliseEmail(fields.email);
  const now = ctx.clock.now();
  const user: UserRow = {
    id: newId('usr'),
    email,
    name: fields.name,
    password_hash: fields.password_hash,
    // ADMIN_EMAILS takes effect only for a verified address (src/accounts/verification.ts).
    role: fields.email_verified === true && ctx.config.adminEmails.has(email) ? 'admin' : 'user',
    ref: fields.ref ?? null,
    accepted_data_terms_version: fields.accepted_data_terms_version ?? null,
    accepted_free_tier_data_terms: fields.accepted_free_tier_data_terms == null ? null : fields.accepted_free_tier_data_terms ? 1 : 0,
    analytics_distinct_id: fields.analytics_distinct_id ?? null,
    service_improvement_opt_in: 0,
    email_verified_at: fields.email_verified === true ? now : null,
    free_credits_granted_at: null,
    created_at: now,
    updated_at: now,
  };
  await ctx.database.db.transaction().execute(async (trx) => {
    await trx.insertInto('users').values(user).execute();
    for (const hook of hooks) await hook(trx, user);
    await alsoInTransaction?.(trx, user);
  });
  return user;
}

export async function register(ctx: Ctx, input: RegisterInput, ip: string, onCreated: AccountCreatedHook[] = []): Promise<SessionResult> {
  await checkCaptcha(ctx, input.captcha_response, ip);
  const passwordHash = await hashPassword(input.password);
  let user: UserRow;
  try {
    user = await createUser(ctx, { ...input, name: input.name ?? null, password_hash: passwordHash }, onCreated);
  } catch (err) {
    // The unique index decides between two simultaneous registrations: one row, one 409.
    if (isUniqueViolation(err)) throw new AppError('conflict', 'An account with this e-mail already exists');
    throw err;
  }
  await sendVerificationMail(ctx, user);
  const s = await createSession(ctx.database.db, user.id, user.created_at, ctx.config.sessionTtlMs);
  return { token: s.token, expires_at: s.expiresAt, user: toPublicUser(user) };
}

export async function login(
  ctx: Ctx,
  input: { email: string; password: string; captcha_response?: string | null | undefined; analytics_distinct_id?: string | null | undefined },
  ip: string,
): Promise<SessionResult> {
  await checkCaptcha(ctx, input.captcha_response, ip);
  const db = ctx.database.db;
  const user = await findUserByEmail(db, input.email);
  // verifyPassword does the same work for an unknown e-mail, so timing does not tell them apart.
  const ok = await verifyPassword(user?.password_hash ?? null, input.password);
  if (!user || !ok) throw new AppError('invalid_credentials', 'Wrong e-mail or password');
  const now = ctx.clock.now();
  const updates: Partial<UserRow> = {};
  if (adminByConfig(ctx, user) && user.role !== 'admin') updates.role = 'admin';
  if (input.analytics_distinct_id && !user.analytics_distinct_id) updates.analytics_distinct_id = input.analytics_distinct_id;
  if (Object.keys(updates).length > 0) {
    await db
      .updateTable('users')
      .set({ ...updates, updated_at: now })
      .where('id', '=', user.id)
      .execute();
    Object.assign(user, updates);
  }
  const s = await createSession(db, user.id, now, ctx.config.sessionTtlMs);
  return { token: s.token, expires_at: s.expiresAt, user: toPublicUser(user) };
}

export async function logout(ctx: Ctx, principal: Principal): Promise<void> {
  if (principal.kind === 'session') await revokeSession(ctx.database.db, principal.credentialId, ctx.clock.now());
}

const RESET_TTL_MS = 3600_000;

/**
 * Always succeeds from the caller's point of view, so it cannot be used to probe for accounts. At
 * most PASSWORD_RESET_MAILS_PER_HOUR links an hour per account: past it, nothing is stored or sent
 * (the answer is the same), so nobody can flood an address with reset mails. The count and the
 * insert share a transaction that locks the account's row on PostgreSQL (SQLite's transactions are
 * serial), so simultaneous asks cannot all pass the last place.
 */
export async function forgotPassword(ctx: Ctx, email: string): Promise<void> {
  const user = await findUserByEmail(ctx.database.db, email);
  if (!user) return;
  const token = newSecret(SECRET_PREFIX.reset);
  const now = ctx.clock.now();
  const limit = ctx.config.verification.resetMailsPerHour;
  const stored = await ctx.database.db.transaction().execute(async (trx) => {
    if (ctx.database.dialect === 'postgres') await trx.selectFrom('users').select('id').where('id', '=', user.id).forUpdate().execute();
    const recent = await trx
      .selectFrom('password_resets')
      .select((eb) => eb.fn.countAll<string | number>().as('n'))
      .where('user_id', '=', user.id)
      .where('created_at', '>', now - 3600_000)
      .executeTakeFirst();
    if (Number(recent?.n ?? 0) >= limit) return false;
    await trx
      .insertInto('password_resets')
      .values({ id: newId('pwr'), user_id: user.id, token_hash: hashSecret(token), created_at: now, expires_at: now + RESET_TTL_MS, used_at: null })
      .execute();
    return true;
  });
  if (!stored) return;
  const link = `${ctx.config.publicBaseUrl}/reset-password?token=${encodeURIComponent(token)}`;
  await ctx.mailer.send({
    to: user.email,
    subject: 'Reset your password',
    text: `Someone asked to reset the password of this account.\n\nOpen this link within one hour to choose a new password:\n${link}\n\nThe link works once. If you did not ask for it, ignore this mail.\n`,
  });
}

/**
 * Sets a new password from a mailed reset link, ends the account's other outstanding reset links,
 * and signs the account out everywhere: sessions and OAuth grants are revoked. API keys stay valid (they are the account's machine credentials,
 * listed and revocable in /api/account/keys; DELETE /api/account/keys revokes them all), except
 * when the e-mail was never verified: then the reset is the first proof of the address, the
 * keys are revoked (their maker may have been a squatter) and the address counts as verified.
 * The token is checked before the (deliberately slow) password hash, so a made-up token costs
 * one indexed lookup, not an argon2 run.
 */
export async function resetPassword(ctx: Ctx, token: string, password: string): Promise<void> {
  const db = ctx.database.db;
  const tokenHash = hashSecret(token);
  const valid = await db
    .selectFrom('password_resets')
    .select('id')
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', ctx.clock.now())
    .executeTakeFirst();
  if (!valid) throw new AppError('invalid_credential', 'The reset link is invalid, used or expired');
  const passwordHash = await hashPassword(password);
  const now = ctx.clock.now();
  await db.transaction().execute(async (trx) => {
    // Guarded update: only one use of the token can ever win.
    const row = await trx
      .updateTable('password_resets')
      .set({ used_at: now })
      .where('token_hash', '=', tokenHash)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .returning(['user_id'])
      .executeTakeFirst();
    if (!row) throw new AppError('invalid_credential', 'The reset link is invalid, used or expired');
    // The account's other links end with this one: a link mailed earlier (maybe to a mailbox
    // someone else reads) must not set the password again after its owner chose a new one.
    await trx.updateTable('password_resets').set({ used_at: now }).where('user_id', '=', row.user_id).where('used_at', 'is', null).execute();
    const before = await trx.selectFrom('users').select(['email_verified_at']).where('id', '=', row.user_id).executeTakeFirst();
    await trx.updateTable('users').set({ password_hash: passwordHash, updated_at: now }).where('id', '=', row.user_id).execute();
    await signOutEverywhere(trx, row.user_id, now);
    if (before && before.email_verified_at === null) {
      // The address was never proven, so whoever made this account's keys may not be its owner,
      // who has just proven the address by using the mailed link: their keys end here.
      await trx.updateTable('api_keys').set({ revoked_at: now }).where('user_id', '=', row.user_id).where('revoked_at', 'is', null).execute();
      await markVerified(ctx, trx, row.user_id, now);
    }
  });
}

/** Revokes every session and OAuth grant of the caller's account (API keys stay; see resetPassword). */
export async function signOutAll(ctx: Ctx, principal: Principal): Promise<{ sessions: number; oauth_tokens: number }> {
  return ctx.database.db.transaction().execute((trx) => signOutEverywhere(trx, principal.user.id, ctx.clock.now()));
}

export async function getMe(ctx: Ctx, principal: Principal): Promise<PublicUser> {
  const user = await findUserById(ctx.database.db, principal.user.id);
  if (!user) throw new AppError('invalid_credential', 'The account no longer exists');
  return toPublicUser(user);
}

/**
 * Deletes the account and everything it owns in one transaction. Child tables reference users
 * with ON DELETE CASCADE, so later features' rows (usage, identities, tokens) go with it.
 */
export async function deleteMe(ctx: Ctx, principal: Principal): Promise<void> {
  await ctx.database.db.transaction().execute(async (trx) => {
    await trx.deleteFrom('users').where('id', '=', principal.user.id).execute();
  });
}

export async function getPrivacy(ctx: Ctx, principal: Principal): Promise<{ service_improvement_opt_in: boolean }> {
  const user = await findUserById(ctx.database.db, principal.user.id);
  return { service_improvement_opt_in: user?.service_improvement_opt_in === 1 };
}

export async function setPrivacy(ctx: Ctx, principal: Principal, optIn: boolean): Promise<{ service_improvement_opt_in: boolean }> {
  await ctx.database.db
    .updateTable('users')
    .set({ service_improvement_opt_in: optIn ? 1 : 0, updated_at: ctx.clock.now() })
    .where('id', '=', principal.user.id)
    .execute();
  return { service_improvement_opt_in: optIn };
}

export { revokeAllSessions };
