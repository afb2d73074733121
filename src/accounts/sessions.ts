import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.ts';
import { newId } from '../shared/ids.ts';
import { pauseSchedulesMadeBy } from '../schedules/credentials.ts';
import { hashSecret, newSecret, SECRET_PREFIX } from '../shared/secrets.ts';

export async function createSession(db: Kysely<DB>, userId: string, now: number, ttlMs: number): Promise<{ id: string; token: string; expiresAt: number }> {
  const token = newSecret(SECRET_PREFIX.session);
  const id = newId('ses');
  await db
    .insertInto('sessions')
    .values({ id, user_id: userId, token_hash: hashSecret(token), created_at: now, expires_at: now + ttlMs, revoked_at: null })
    .execute();
  return { id, token, expiresAt: now + ttlMs };
}

export async function revokeSession(db: Kysely<DB>, sessionId: string, now: number): Promise<void> {
  await db.updateTable('sessions').set({ revoked_at: now }).where('id', '=', sessionId).where('revoked_at', 'is', null).execute();
}

export async function revokeAllSessions(db: Kysely<DB>, userId: string, now: number): Promise<void> {
  await db.updateTable('sessions').set({ revoked_at: now }).where('user_id', '=', userId).where('revoked_at', 'is', null).execute();
}

/**
 * Signs an account out everywhere: every session and every OAuth access and refresh token (all
 * grants) is revoked, and the schedules made with them are paused. Returns how many of each were live.
 */
export async function signOutEverywhere(db: Kysely<DB>, userId: string, now: number): Promise<{ sessions: number; oauth_tokens: number }> {
  const s = await db.updateTable('sessions').set({ revoked_at: now }).where('user_id', '=', userId).where('revoked_at', 'is', null).executeTakeFirst();
  // Codes not yet exchanged die too (they would otherwise mint fresh tokens for a minute).
  await db.updateTable('oauth_codes').set({ used_at: now }).where('user_id', '=', userId).where('used_at', 'is', null).execute();
  const o = await db.updateTable('oauth_tokens').set({ revoked_at: now }).where('user_id', '=', userId).where('revoked_at', 'is', null).executeTakeFirst();
  // Schedules made with those credentials would outlive them: paused, for the owner to resume.
  await pauseSchedulesMadeBy(db, userId, ['session', 'oauth'], now);
  return { sessions: Number(s.numUpdatedRows), oauth_tokens: Number(o.numUpdatedRows) };
}
