import type { Principal } from '../accounts/credentials.ts';
import type { Ctx } from '../accounts/service.ts';
import { normaliseEmail } from '../accounts/users.ts';
import { AppError } from '../shared/errors.ts';
import { iso } from '../shared/clock.ts';
import { newId } from '../shared/ids.ts';

export async function saveContactMessage(
  ctx: Ctx,
  input: {
    name: string;
    email: string;
    message: string;
    company?: string | null | undefined;
    topic?: string | null | undefined;
    source?: string | null | undefined;
    analytics_distinct_id?: string | null | undefined;
  },
): Promise<{ id: string; status: string; created_at: string }> {
  const now = ctx.clock.now();
  const id = newId('msg');
  await ctx.database.db
    .insertInto('contact_messages')
    .values({
      id,
      name: input.name,
      email: normaliseEmail(input.email),
      message: input.message,
      company: input.company ?? null,
      topic: input.topic ?? null,
      source: input.source ?? null,
      analytics_distinct_id: input.analytics_distinct_id ?? null,
      created_at: now,
    })
    .execute();
  return { id, status: 'received', created_at: iso(now) };
}

const DAY_MS = 24 * 3600_000;

/**
 * Mails each address a register link whose `ref` names the invite (and so the inviter). Only a
 * confirmed address may invite, and at most INVITES_PER_DAY addresses per account in any 24 hours.
 */
export async function sendInvites(ctx: Ctx, principal: Principal, emails: string[]) {
  const now = ctx.clock.now();
  const unique = [...new Set(emails.map(normaliseEmail))];
  const me = await ctx.database.db.selectFrom('users').select(['email_verified_at']).where('id', '=', principal.user.id).executeTakeFirst();
  if (!me || me.email_verified_at === null) {
    throw new AppError('forbidden', 'Confirm your e-mail address before sending invitations (POST /api/auth/verify-email/resend mails a new link)');
  }
  const sent = await ctx.database.db
    .selectFrom('invites')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('user_id', '=', principal.user.id)
    .where('created_at', '>', now - DAY_MS)
    .executeTakeFirst();
  const used = Number(sent?.n ?? 0);
  const limit = ctx.config.invitesPerDay;
  if (used + unique.length > limit) {
    throw new AppError('rate_limit_exceeded', `At most ${limit} invitations per account in 24 hours; ${Math.max(0, limit - used)} left`, {
      'retry-after': '3600',
    });
  }
  const rows = unique.map((email) => ({ id: newId('inv'), user_id: principal.user.id, email, ref: '', created_at: now }));
  for (const r of rows) r.ref = r.id;
  await ctx.database.db.insertInto('invites').values(rows).execute();
  const inviter = principal.user.name ?? principal.user.email;
  for (const r of rows) {
    const link = `${ctx.config.publicBaseUrl}/register?ref=${encodeURIComponent(r.ref)}`;
    await ctx.mailer.send({
      to: r.email,
      subject: `${inviter} invited you to the forecasting service`,
      text: `${inviter} invited you to try the forecasting service.\n\nCreate your account here:\n${link}\n`,
    });
  }
  return rows.map((r) => ({ id: r.id, email: r.email, ref: r.ref, created_at: iso(r.created_at) }));
}
