import type { Principal } from '../accounts/credentials.ts';
import { parseAllowedModels } from '../accounts/credentials.ts';
import type { Ctx } from '../accounts/service.ts';
import { isUniqueViolation } from '../db/index.ts';
import type { ApiKeysTable } from '../db/schema.ts';
import { AppError, notFound, ValidationFailure } from '../shared/errors.ts';
import { iso } from '../shared/clock.ts';
import { newId } from '../shared/ids.ts';
import { DEFAULT_KEY_SCOPES, formatScopes, parseScopes, type Scope } from '../shared/scopes.ts';
import { hashSecret, newSecret, SECRET_PREFIX } from '../shared/secrets.ts';
import { assertWithinGrant, type KeyTerms, monthStartUtc } from './policy.ts';
import type { CreateKeyInput, UpdateKeyInput } from './schemas.ts';

export interface PublicKey {
  id: string;
  label: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  scopes: Scope[];
  expires_at: string | null;
  allowed_models: string[] | null;
  monthly_credit_limit: number | null;
  rate_limit_per_minute: number | null;
  spend_this_month: number;
}

/** How much of the secret is kept in clear to recognise a key in lists: `tsfm_` + 6 characters. */
const PREFIX_LENGTH = SECRET_PREFIX.apiKey.length + 6;

const KEY_COLUMNS = [
  'id',
  'label',
  'prefix',
  'created_at',
  'last_used_at',
  'scopes',
  'expires_at',
  'allowed_models',
  'monthly_credit_limit',
  'rate_limit_per_minute',
] as const;
type KeyRow = Pick<ApiKeysTable, (typeof KEY_COLUMNS)[number]>;

function publicKey(r: KeyRow, spend: number): PublicKey {
  return {
    id: r.id,
    label: r.label,
    prefix: r.prefix,
    created_at: iso(Number(r.created_at)),
    last_used_at: r.last_used_at === null ? null : iso(Number(r.last_used_at)),
    scopes: parseScopes(r.scopes),
    expires_at: r.expires_at === null ? null : iso(Number(r.expires_at)),
    allowed_models: parseAllowedModels(r.allowed_models),
    monthly_credit_limit: r.monthly_credit_limit === null ? null : Number(r.monthly_credit_limit),
    rate_limit_per_minute: r.rate_limit_per_minute === null ? null : Number(r.rate_limit_per_minute),
    spend_this_month: spend,
  };
}

/** The stored columns of the limits present in `input` (absent = unchanged, null = cleared). */
function limitColumns(input: Omit<UpdateKeyInput, 'label' | 'scopes'>, now: number): Partial<ApiKeysTable> {
  const out: Partial<ApiKeysTable> = {};
  if (input.expires_at !== undefined) {
    const at = input.expires_at === null ? null : Date.parse(input.expires_at);
    if (at !== null && at <= now) {
      throw new ValidationFailure([{ path: ['expires_at'], msg: 'must be in the future', type: 'value_error', input: input.expires_at }]);
    }
    out.expires_at = at;
  }
  if (input.allowed_models !== undefined) out.allowed_models = input.allowed_models === null ? null : JSON.stringify([...new Set(input.allowed_models)]);
  if (input.monthly_credit_limit !== undefined) out.monthly_credit_limit = input.monthly_credit_limit;
  if (input.rate_limit_per_minute !== undefined) out.rate_limit_per_minute = input.rate_limit_per_minute;
  return out;
}

/** The scopes and limits present in `input`, as the grant check reads them (absent = unchanged). */
function termsOf(input: Omit<UpdateKeyInput, 'label' | 'scopes'>): KeyTerms {
  const terms: KeyTerms = {};
  if (input.expires_at !== undefined) terms.expiresAt = input.expires_at === null ? null : Date.parse(input.expires_at);
  if (input.allowed_models !== undefined) terms.allowedModels = input.allowed_models;
  if (input.monthly_credit_limit !== undefined) terms.monthlyCreditLimit = input.monthly_credit_limit;
  if (input.rate_limit_per_minute !== undefined) terms.rateLimitPerMinute = input.rate_limit_per_minute;
  return terms;
}

const duplicate = (label: string) => new AppError('conflict', `You already have a key labelled "${label}"`);

/**
 * Creates a key. A caller that is not a session (an API key with keys:write) may give it only
 * scopes and limits within its own (`assertWithinGrant`, ADR 0037); absent limits mean none.
 */
export async function createApiKey(ctx: Ctx, principal: Principal, input: CreateKeyInput): Promise<PublicKey & { key: string }> {
  const now = ctx.clock.now();
  const limits = limitColumns(input, now);
  const scopes = input.scopes ?? [...DEFAULT_KEY_SCOPES];
  assertWithinGrant(principal, { scopes, expiresAt: null, allowedModels: null, monthlyCreditLimit: null, rateLimitPerMinute: null, ...termsOf(input) });
  const key = newSecret(SECRET_PREFIX.apiKey);
  const row: ApiKeysTable = {
    id: newId('key'),
    user_id: principal.user.id,
    label: input.label,
    prefix: key.slice(0, PREFIX_LENGTH),
    key_hash: hashSecret(key),
    created_at: now,
    last_used_at: null,
    revoked_at: null,
    scopes: formatScopes(scopes),
    expires_at: null,
    allowed_models: null,
    monthly_credit_limit: null,
    rate_limit_per_minute: null,
    ...limits,
  };
  try {
    await ctx.database.db.insertInto('api_keys').values(row).execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw duplicate(input.label);
    throw err;
  }
  return { ...publicKey(row, 0), key };
}

/** Credits charged this calendar month (UTC) to calls made with each of `keyIds`. */
export async function keySpendThisMonth(ctx: Pick<Ctx, 'database' | 'clock'>, userId: string, keyIds: string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  if (keyIds.length === 0) return out;
  const rows = await ctx.database.db
    .selectFrom('usage_events')
    .select((eb) => ['key_id', eb.fn.sum<string | number>('credits').as('credits')])
    .where('user_id', '=', userId)
    .where('key_id', 'in', keyIds)
    .where('created_at', '>=', monthStartUtc(ctx.clock.now()))
    .groupBy('key_id')
    .execute();
  for (const r of rows) if (r.key_id) out.set(r.key_id, Number(r.credits));
  return out;
}

export async function listApiKeys(ctx: Ctx, principal: Principal): Promise<PublicKey[]> {
  const rows = await ctx.database.db
    .selectFrom('api_keys')
    .select([...KEY_COLUMNS])
    .where('user_id', '=', principal.user.id)
    .where('revoked_at', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  const spend = await keySpendThisMonth(
    ctx,
    principal.user.id,
    rows.map((r) => r.id),
  );
  return rows.map((r) => publicKey(r, spend.get(r.id) ?? 0));
}

/**
 * Renames a key or changes its limits (null clears one). Another account's key id answers 404. A
 * caller that is not a session may set limits only within its own (ADR 0037), on any key.
 */
export async function updateApiKey(ctx: Ctx, principal: Principal, keyId: string, input: UpdateKeyInput): Promise<PublicKey> {
  const limits = limitColumns(input, ctx.clock.now());
  assertWithinGrant(principal, termsOf(input));
  const set: Partial<ApiKeysTable> = { ...limits, ...(input.label !== undefined ? { label: input.label } : {}) };
  const q = ctx.database.db.updateTable('api_keys').where('id', '=', keyId).where('user_id', '=', principal.user.id).where('revoked_at', 'is', null);
  let row: KeyRow | undefined;
  try {
    row =
      Object.keys(set).length > 0
        ? await q
            .set(set)
            .returning([...KEY_COLUMNS])
            .executeTakeFirst()
        : await ctx.database.db
            .selectFrom('api_keys')
            .select([...KEY_COLUMNS])
            .where('id', '=', keyId)
            .where('user_id', '=', principal.user.id)
            .where('revoked_at', 'is', null)
            .executeTakeFirst();
  } catch (err) {
    if (isUniqueViolation(err) && input.label !== undefined) throw duplicate(input.label);
    throw err;
  }
  if (!row) throw notFound('API key');
  const spend = await keySpendThisMonth(ctx, principal.user.id, [row.id]);
  return publicKey(row, spend.get(row.id) ?? 0);
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
