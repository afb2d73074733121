import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.ts';
import type { Deps } from '../deps-types.ts';
import { AppError } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { hashSecret, newSecret, SECRET_PREFIX } from '../shared/secrets.ts';
import type { Principal } from './credentials.ts';
import { findUserById, toPublicUser, type PublicUser, type UserRow } from './users.ts';

/**
 * E-mail verification: a mailed single-use link proves the owner reads the address. Until then
 * an account is usable but unproven: it gets no administrator role from ADMIN_EMAILS, no free
 * credits (FREE_CREDITS_ON=verify, the default), and identity-provider sign-ins with the same
 * e-mail are not linked to it.
 */
export type VerificationCtx = Pick<Deps, 'database' | 'config' | 'clock' | 'mailer' | 'emailVerifiedHooks'>;

/** Runs inside the transaction that marks an e-mail verified (billing grants free credits here). */
export type EmailVerifiedHook = (trx: Kysely<DB>, user: UserRow, now: number) => Promise<void>;

/** The page the mailed link opens (GET shows a confirm button; POST consumes the token). */
export const VERIFY_PAGE_PATH = '/verify-email';

export const isVerified = (u: Pick<UserRow, 'email_verified_at'>): boolean => u.email_verified_at !== null;

/** The administrator role follows ADMIN_EMAILS, but only for a proven address. */
export const adminByConfig = (ctx: Pick<Deps, 'config'>, u: Pick<UserRow, 'email' | 'email_verified_at'>): boolean =>
  isVerified(u) && ctx.config.adminEmails.has(u.email);

/** Mails a fresh verification link for the account's current e-mail. */
export async function sendVerificationMail(ctx: VerificationCtx, user: Pick<UserRow, 'id' | 'email'>): Promise<void> {
  const token = newSecret(SECRET_PREFIX.emailVerification);
  const now = ctx.clock.now();
  await ctx.database.db
    .insertInto('email_verifications')
    .values({
      id: newId('evf'),
      user_id: user.id,
      email: user.email,
      token_hash: hashSecret(token),
      created_at: now,
      expires_at: now + ctx.config.verification.ttlMs,
      used_at: null,
    })
    .execute();
  const link = `${ctx.config.publicBaseUrl}${VERIFY_PAGE_PATH}?token=${encodeURIComponent(token)}`;
  const hours = Math.round(ctx.config.verification.ttlMs / 3600_000);
  await ctx.mailer.send({
    to: user.email,
    subject: 'Confirm your e-mail address',
    text: `Someone created an account on the forecasting service with this address.\n\nOpen this link within ${hours} hours to confirm it is yours:\n${link}\n\nThe link works once. If you did not sign up, ignore this mail: the account stays unconfirmed.\n`,
  });
}

/**
 * Marks the account's e-mail verified, inside `trx`: once (guarded update), then applies what
 * verification unlocks (administrator role from ADMIN_EMAILS, the hooks: free credits).
 * Returns false when it was already verified.
 */
export async function markVerified(
  ctx: Pick<VerificationCtx, 'config' | 'emailVerifiedHooks'>,
  trx: Kysely<DB>,
  userId: string,
  now: number,
): Promise<boolean> {
  const row = await trx
    .updateTable('users')
    .set({ email_verified_at: now, updated_at: now })
    .where('id', '=', userId)
    .where('email_verified_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
  if (!row) return false;
  if (adminByConfig(ctx, row) && row.role !== 'admin') {
    await trx.updateTable('users').set({ role: 'admin' }).where('id', '=', userId).execute();
  }
  for (const hook of ctx.emailVerifiedHooks) await hook(trx, row, now);
  return true;
}

export interface Confirmation {
  user: PublicUser;
  /** The address was confirmed before this call (by this link or another): nothing changed. */
  alreadyVerified: boolean;
}

/**
 * Consumes a mailed link. The token is single use; a link for an address the account no longer
 * has is refused. A link of an account whose address is already confirmed (this link used before,
 * or another one) answers that it is: following a link twice is not an error to its owner.
 */
export async function confirmEmail(ctx: VerificationCtx, token: string): Promise<Confirmation> {
  const now = ctx.clock.now();
  const db = ctx.database.db;
  const tokenHash = hashSecret(token);
  const confirmed = await db.transaction().execute(async (trx) => {
    const used = await trx
      .updateTable('email_verifications')
      .set({ used_at: now })
      .where('token_hash', '=', tokenHash)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .returning(['user_id', 'email'])
      .executeTakeFirst();
    // Not usable now (used, expired or unknown): only a link once mailed to the address an
    // already confirmed account still has is answered as such; every other one stays refused.
    const link = used ?? (await trx.selectFrom('email_verifications').select(['user_id', 'email']).where('token_hash', '=', tokenHash).executeTakeFirst());
    const user = link && (await trx.selectFrom('users').select(['id', 'email', 'email_verified_at']).where('id', '=', link.user_id).executeTakeFirst());
    if (!link || !user || (!used && (user.email !== link.email || !isVerified(user)))) {
      throw new AppError('invalid_credential', 'The confirmation link is invalid, used or expired; ask for a new one (POST /api/auth/verify-email/resend)');
    }
    if (user.email !== link.email) throw new AppError('invalid_credential', 'The confirmation link is for an address this account no longer has');
    if (!used) return { userId: user.id, alreadyVerified: true };
    return { userId: user.id, alreadyVerified: !(await markVerified(ctx, trx, user.id, now)) };
  });
  const user = await findUserById(db, confirmed.userId);
  if (!user) throw new AppError('invalid_credential', 'The account no longer exists');
  return { user: toPublicUser(user), alreadyVerified: confirmed.alreadyVerified };
}

/** Mails a new link to a signed-in, unverified account; at most EMAIL_VERIFICATION_RESENDS_PER_HOUR links an hour. */
export async function resendVerification(ctx: VerificationCtx, principal: Principal): Promise<void> {
  const user = await findUserById(ctx.database.db, principal.user.id);
  if (!user) throw new AppError('invalid_credential', 'The account no longer exists');
  if (isVerified(user)) throw new AppError('conflict', 'This e-mail address is already confirmed');
  const now = ctx.clock.now();
  const recent = await ctx.database.db
    .selectFrom('email_verifications')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('user_id', '=', user.id)
    .where('created_at', '>', now - 3600_000)
    .executeTakeFirst();
  const limit = ctx.config.verification.resendsPerHour;
  if (Number(recent?.n ?? 0) >= limit) {
    throw new AppError('rate_limit_exceeded', `At most ${limit} confirmation mails an hour; use the last one sent or retry later`, { 'retry-after': '3600' });
  }
  await sendVerificationMail(ctx, user);
}
