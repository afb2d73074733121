import type { Principal } from '../accounts/credentials.ts';
import type { Ctx } from '../accounts/service.ts';
import { isUniqueViolation } from '../db/index.ts';
import { AppError, notFound } from '../shared/errors.ts';
import { iso } from '../shared/clock.ts';
import { newId } from '../shared/ids.ts';
import { hashSecret, newSecret, SECRET_PREFIX } from '../shared/secrets.ts';

export interface PublicKey {
  id: string;
  label: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
}

/** How much of the secret is kept in clear to recognise a key in lists: `tsfm_` + 6 characters. */
const PREFIX_LENGTH = SECRET_PREFIX.apiKey.length + 6;

export async function createApiKey(ctx: Ctx, principal: Principal, label: string): Promise<PublicKey & { key: string }> {
  const key = newSecret(SECRET_PREFIX.apiKey);
  const now = ctx.clock.now();
  const row = {
    id: newId('key'),
    user_id: principal.user.id,
    label,
    prefix: key.slice(0, PREFIX_LENGTH),
    key_hash: hashSecret(key),
    created_at: now,
    last_used_at: null,
    revoked_at: null,
  };
  try {
    await ctx.database.db.insertInto('api_keys').values(row).execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw new AppError('conflict', `You already have a key labelled "${label}"`);
    throw err;
  }
  return { id: row.id, label, prefix: row.prefix, created_at: iso(now), last_used_at: null, key };
}

export async function listApiKeys(ctx: Ctx, principal: Principal): Promise<PublicKey[]> {
  const rows = await ctx.database.db
    .selectFrom('api_keys')
    .select(['id', 'label', 'prefix', 'created_at', 'last_used_at'])
    .where('user_id', '=', principal.user.id)
    .where('revoked_at', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  return rows.map((r) => ({ ...r, created_at: iso(r.created_at), last_used_at: r.last_used_at === null ? null : iso(r.last_used_at) }));
}

/** Revokes at once. Another account's key id answers exactly like an unknown one: 404. */
export async function revokeApiKey(ctx: Ctx, principal: Principal, keyId: string): Promise<void> {
  const r = await ctx.database.db
    .updateTable('api_keys')
    .set({ revoked_at: ctx.clock.now() })
    .where('id', '=', keyId)
    .where('user_id', '=', principal.user.id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  if (Number(r.numUpdatedRows) === 0) throw notFound('API key');
}

/** Revokes every live key of the caller's account at once (e.g. after a suspected compromise). */
export async function revokeAllApiKeys(ctx: Ctx, principal: Principal): Promise<number> {
  const r = await ctx.database.db
    .updateTable('api_keys')
    .set({ revoked_at: ctx.clock.now() })
    .where('user_id', '=', principal.user.id)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}
