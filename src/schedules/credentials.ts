import type { Kysely } from 'kysely';
import type { DB, SchedulesTable } from '../db/schema.ts';

type CredentialKind = SchedulesTable['credential_kind'];

/**
 * Whether the credential a schedule was made (or last resumed) with still stands, checked before
 * each run, before its source is fetched (docs/schedules.md, "Whose schedule runs"):
 * - an API key: not revoked, not expired (its limits as they are now apply to the run);
 * - an OAuth token: its grant (the MCP client's authorization) still holds a live token, so
 *   revoking the client, signing out everywhere or leaving it unused past the refresh lifetime
 *   ends it; the access token itself expires hourly and is not what counts;
 * - a session: the account holder in person; the session ending (sign-out, expiry) does not end
 *   the schedule, but signing out everywhere or a password reset pauses it (pauseSchedulesMadeBy).
 */
export async function credentialStands(db: Kysely<DB>, kind: CredentialKind, credentialId: string, now: number): Promise<boolean> {
  if (kind === 'session') return true;
  if (kind === 'api_key') {
    const key = await db.selectFrom('api_keys').select(['revoked_at', 'expires_at']).where('id', '=', credentialId).executeTakeFirst();
    return !!key && key.revoked_at === null && (key.expires_at === null || Number(key.expires_at) > now);
  }
  const token = await db.selectFrom('oauth_tokens').select('grant_id').where('id', '=', credentialId).executeTakeFirst();
  if (!token) return false;
  const live = await db
    .selectFrom('oauth_tokens')
    .select('id')
    .where('grant_id', '=', token.grant_id)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .limit(1)
    .executeTakeFirst();
  return live !== undefined;
}

/** Why a schedule whose credential no longer stands was paused (the schedule's `paused_reason`). */
export const CREDENTIAL_ENDED: Record<CredentialKind, string> = {
  api_key: 'the API key that made this schedule was revoked or expired; resume it to run it with your current credential',
  oauth: 'the MCP client that made this schedule lost its authorization; resume it to run it with your current credential',
  session: 'you signed out everywhere (or reset your password); resume it to run it again',
};

/**
 * Pauses the account's active schedules made with these kinds of credential, in the caller's
 * transaction: signing out everywhere and a password reset revoke every session and OAuth grant,
 * and a schedule a thief left behind must not outlive them. Returns how many were paused.
 */
export async function pauseSchedulesMadeBy(db: Kysely<DB>, userId: string, kinds: readonly CredentialKind[], now: number): Promise<number> {
  let paused = 0;
  for (const kind of kinds) {
    const r = await db
      .updateTable('schedules')
      .set({ status: 'paused', paused_reason: CREDENTIAL_ENDED[kind], next_run_at: null, updated_at: now })
      .where('user_id', '=', userId)
      .where('credential_kind', '=', kind)
      .where('status', '=', 'active')
      .executeTakeFirst();
    paused += Number(r.numUpdatedRows);
  }
  return paused;
}
