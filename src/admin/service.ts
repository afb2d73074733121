import { createHash } from 'node:crypto';
import { type Kysely, sql } from 'kysely';
import type { Principal } from '../accounts/credentials.ts';
import { adjustBalance, ensureBillingAccount, getBillingAccount } from '../billing/ledger.ts';
import { isUniqueViolation, type Database } from '../db/index.ts';
import type { AuditRecordsTable, DB } from '../db/schema.ts';
import { AppError, ValidationFailure } from '../shared/errors.ts';
import type { Clock } from '../shared/clock.ts';
import { iso } from '../shared/clock.ts';
import { newId } from '../shared/ids.ts';
import { parseWindow } from '../usage/service.ts';

export interface AdminCtx {
  database: Database;
  clock: Clock;
}

export function toAdjustment(r: AuditRecordsTable) {
  return {
    id: r.id,
    action: r.action,
    actor_user_id: r.actor_user_id,
    target_user_id: r.target_user_id,
    amount: Number(r.amount),
    balance_before: Number(r.balance_before),
    balance_after: Number(r.balance_after),
    usage_events_deleted: r.usage_events_deleted === null ? null : Number(r.usage_events_deleted),
    window_start: r.window_start === null ? null : iso(Number(r.window_start)),
    window_end: r.window_end === null ? null : iso(Number(r.window_end)),
    reason: r.reason,
    note: r.note,
    idempotency_key: r.idempotency_key === null ? null : unscopedKey(r.actor_user_id, r.idempotency_key),
    created_at: iso(Number(r.created_at)),
  };
}
export type Adjustment = ReturnType<typeof toAdjustment>;

export async function listAdjustments(ctx: AdminCtx, q: { target_user_id?: string | null | undefined; limit: number; offset: number }) {
  let query = ctx.database.db.selectFrom('audit_records').selectAll();
  if (q.target_user_id) query = query.where('target_user_id', '=', q.target_user_id);
  const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(q.limit).offset(q.offset).execute();
  return { adjustments: rows.map(toAdjustment), limit: q.limit, offset: q.offset };
}

/**
 * Idempotency keys belong to the administrator who sent them: stored as `<actor id>:<key>`, so
 * two administrators choosing the same key never see (or block) each other's writes.
 */
export const scopedKey = (actorId: string, key: string): string => `${actorId}:${key}`;
const unscopedKey = (actorId: string, stored: string): string => (stored.startsWith(`${actorId}:`) ? stored.slice(actorId.length + 1) : stored);

/**
 * Canonical JSON (sorted keys, null and absent fields alike) of what an idempotent request asked
 * for, including who asked (`actor`).
 */
export function requestHash(action: string, body: Record<string, unknown>, actor: string): string {
  const clean = Object.fromEntries(
    Object.entries(body)
      .filter(([, v]) => v !== null && v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  );
  return createHash('sha256')
    .update(JSON.stringify({ action, actor, body: clean }))
    .digest('hex');
}

type Work<R> = (
  trx: Kysely<DB>,
  auditId: string,
  now: number,
) => Promise<{ record: Omit<AuditRecordsTable, 'id' | 'request_hash' | 'response_json' | 'created_at' | 'idempotency_key'>; response: R }>;

/**
 * Runs an admin write with its audit record in one transaction. With an idempotency key, the same
 * key and the same request return the first response and change nothing more; the same key with
 * a different request is 409. The unique index on the key settles two simultaneous first tries.
 */
async function audited<R>(ctx: AdminCtx, actor: Principal, givenKey: string | null | undefined, hash: string, work: Work<R>): Promise<R> {
  const db = ctx.database.db;
  const key = givenKey ? scopedKey(actor.user.id, givenKey) : null;
  const replay = async (): Promise<R | null> => {
    if (!key) return null;
    const prior = await db.selectFrom('audit_records').select(['request_hash', 'response_json']).where('idempotency_key', '=', key).executeTakeFirst();
    if (!prior) return null;
    if (prior.request_hash !== hash) throw new AppError('conflict', 'This idempotency_key was already used with a different request');
    return JSON.parse(prior.response_json) as R;
  };
  const first = await replay();
  if (first !== null) return first;
  try {
    return await db.transaction().execute(async (trx) => {
      const now = ctx.clock.now();
      const auditId = newId('aud');
      const { record, response } = await work(trx, auditId, now);
      await trx
        .insertInto('audit_records')
        .values({ ...record, id: auditId, idempotency_key: key ?? null, request_hash: hash, response_json: JSON.stringify(response), created_at: now })
        .execute();
      return response;
    });
  } catch (err) {
    if (key && isUniqueViolation(err)) {
      const again = await replay();
      if (again !== null) return again;
    }
    throw err;
  }
}

async function requireUser(trx: Kysely<DB>, userId: string): Promise<void> {
  const u = await trx.selectFrom('users').select('id').where('id', '=', userId).executeTakeFirst();
  if (!u) throw new AppError('not_found', `User '${userId}' not found`);
}

const MAX_GRANT = 1_000_000_000;

export async function grantCredits(
  ctx: AdminCtx,
  actor: Principal,
  body: { target_user_id: string; amount: number; reason: string; note?: string | null | undefined; idempotency_key?: string | null | undefined },
) {
  if (body.amount === 0 || Math.abs(body.amount) > MAX_GRANT) {
    throw new ValidationFailure([
      { path: ['amount'], msg: `must be a non-zero integer between -${MAX_GRANT} and ${MAX_GRANT}`, type: 'value_error', input: body.amount },
    ]);
  }
  return audited(ctx, actor, body.idempotency_key, requestHash('grant_credits', body, actor.user.id), async (trx, auditId, now) => {
    await requireUser(trx, body.target_user_id);
    const { before, after } = await adjustBalance(trx, body.target_user_id, body.amount, {
      kind: body.amount > 0 ? 'grant' : 'adjustment',
      auditId,
      description: `admin: ${body.reason}`.slice(0, 500),
      now,
    });
    const record = {
      actor_user_id: actor.user.id,
      action: 'grant_credits' as const,
      target_user_id: body.target_user_id,
      amount: body.amount,
      balance_before: before,
      balance_after: after,
      usage_events_deleted: null,
      window_start: null,
      window_end: null,
      reason: body.reason,
      note: body.note ?? null,
    };
    const adjustment = toAdjustment({
      ...record,
      id: auditId,
      idempotency_key: body.idempotency_key ?? null,
      request_hash: '',
      response_json: '',
      created_at: now,
    });
    return { record, response: { adjustment, balance: after } };
  });
}

/**
 * Deletes the target's usage events (all, or those in [start, end)) and credits back the free
 * credits they consumed, as a ledger adjustment. Metered credits are not touched here: they are
 * the provider's business (refund there).
 */
export async function resetUsage(
  ctx: AdminCtx,
  actor: Principal,
  body: {
    target_user_id: string;
    reason: string;
    start?: string | null | undefined;
    end?: string | null | undefined;
    note?: string | null | undefined;
    idempotency_key?: string | null | undefined;
  },
) {
  const w = parseWindow(body.start, body.end);
  return audited(ctx, actor, body.idempotency_key, requestHash('reset_usage', body, actor.user.id), async (trx, auditId, now) => {
    await requireUser(trx, body.target_user_id);
    await ensureBillingAccount(trx, body.target_user_id, now);
    let del = trx.deleteFrom('usage_events').where('user_id', '=', body.target_user_id);
    if (w.start !== null) del = del.where('created_at', '>=', w.start);
    if (w.end !== null) del = del.where('created_at', '<', w.end);
    // RETURNING: exactly the rows this statement deleted are refunded, even under concurrency.
    const deleted = await del.returning(['free_credits']).execute();
    const refund = deleted.reduce((a, r) => a + Number(r.free_credits), 0);
    let before: number;
    let after: number;
    if (refund > 0) {
      ({ before, after } = await adjustBalance(trx, body.target_user_id, refund, {
        kind: 'adjustment',
        auditId,
        description: `usage reset: ${body.reason}`.slice(0, 500),
        now,
      }));
    } else {
      before = after = (await getBillingAccount(trx, body.target_user_id))?.balance ?? 0;
    }
    const record = {
      actor_user_id: actor.user.id,
      action: 'reset_usage' as const,
      target_user_id: body.target_user_id,
      amount: refund,
      balance_before: before,
      balance_after: after,
      usage_events_deleted: deleted.length,
      window_start: w.start,
      window_end: w.end,
      reason: body.reason,
      note: body.note ?? null,
    };
    const adjustment = toAdjustment({
      ...record,
      id: auditId,
      idempotency_key: body.idempotency_key ?? null,
      request_hash: '',
      response_json: '',
      created_at: now,
    });
    return { record, response: { adjustment, usage_events_deleted: deleted.length, credits_restored: refund, balance: after } };
  });
}

/**
 * Accounts whose e-mail contains `q` (case-insensitive), or whose id is `q`, with their credit
 * balance: what an administrator needs before a grant or a reset.
 */
export async function findAccounts(ctx: AdminCtx, q: { q: string; limit: number }) {
  const needle = q.q.trim().toLowerCase();
  const pattern = `%${needle.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const rows = await ctx.database.db
    .selectFrom('users')
    .leftJoin('billing_accounts', 'billing_accounts.user_id', 'users.id')
    .select(['users.id', 'users.email', 'users.name', 'users.role', 'users.created_at', 'billing_accounts.balance', 'billing_accounts.billing_active'])
    .where((eb) => eb.or([eb('users.id', '=', q.q.trim()), eb(eb.fn('lower', ['users.email']), 'like', sql<string>`${pattern} escape '\\'`)]))
    .orderBy('users.email')
    .limit(q.limit)
    .execute();
  return {
    accounts: rows.map((r) => ({
      id: r.id,
      email: r.email,
      name: r.name,
      role: r.role,
      created_at: iso(Number(r.created_at)),
      balance: Number(r.balance ?? 0),
      billing_active: Number(r.billing_active ?? 0) === 1,
    })),
  };
}
