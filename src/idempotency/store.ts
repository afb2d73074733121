import { createHash } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import stringify from 'safe-stable-stringify';
import type { DB, IdempotencyKeysTable } from '../db/schema.ts';

/**
 * The idempotency-key table (migration 0005, ADR 0015). Every decision is one statement whose
 * changed-row count (or returned row) says who won: the claim is an INSERT … ON CONFLICT DO
 * NOTHING on the primary key (account, key), the completion and the release are guarded by the
 * attempt's request id, the take-over of an abandoned claim by the lease it replaces.
 */
type Db = Kysely<DB>;
export type KeyRow = Selectable<IdempotencyKeysTable>;

/**
 * SHA-256 of the operation id and the validated input as canonical JSON (sorted keys, the same
 * bytes whatever order the client sent its fields in; `safe-stable-stringify`).
 */
export function requestHash(operation: string, input: unknown): string {
  return createHash('sha256')
    .update(stringify({ operation, input }) ?? '')
    .digest('hex');
}

export interface ClaimInput {
  accountId: string;
  key: string;
  operation: string;
  requestHash: string;
  requestId: string;
  now: number;
  lockedUntil: number;
  expiresAt: number;
}

/** Claims the key for this attempt; false when a row for (account, key) exists already. */
export async function claimKey(db: Db, c: ClaimInput): Promise<boolean> {
  const row = await db
    .insertInto('idempotency_keys')
    .values({
      account_id: c.accountId,
      key: c.key,
      operation: c.operation,
      request_hash: c.requestHash,
      status: 'in_progress',
      request_id: c.requestId,
      locked_until: c.lockedUntil,
      status_code: null,
      response_body: null,
      credits_charged: null,
      created_at: c.now,
      expires_at: c.expiresAt,
    })
    .onConflict((oc) => oc.columns(['account_id', 'key']).doNothing())
    .returning('key')
    .executeTakeFirst();
  return row !== undefined;
}

export async function readKey(db: Db, accountId: string, key: string): Promise<KeyRow | undefined> {
  const row = await db.selectFrom('idempotency_keys').selectAll().where('account_id', '=', accountId).where('key', '=', key).executeTakeFirst();
  if (!row) return undefined;
  // bigint columns come back as strings on PostgreSQL.
  return {
    ...row,
    locked_until: Number(row.locked_until),
    created_at: Number(row.created_at),
    expires_at: Number(row.expires_at),
    status_code: row.status_code === null ? null : Number(row.status_code),
    credits_charged: row.credits_charged === null ? null : Number(row.credits_charged),
  };
}

/** Stores the answer of the attempt that holds the key; false when it no longer holds it. */
export async function completeKey(
  db: Db,
  accountId: string,
  key: string,
  requestId: string,
  answer: { statusCode: number; body: string | null; credits: number },
): Promise<boolean> {
  const r = await db
    .updateTable('idempotency_keys')
    .set({ status: 'done', status_code: answer.statusCode, response_body: answer.body, credits_charged: answer.credits })
    .where('account_id', '=', accountId)
    .where('key', '=', key)
    .where('request_id', '=', requestId)
    .where('status', '=', 'in_progress')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** Gives the key back after a failed attempt (nothing was charged): the next repeat runs afresh. */
export async function releaseKey(db: Db, accountId: string, key: string, requestId: string): Promise<void> {
  await db
    .deleteFrom('idempotency_keys')
    .where('account_id', '=', accountId)
    .where('key', '=', key)
    .where('request_id', '=', requestId)
    .where('status', '=', 'in_progress')
    .execute();
}

/** Deletes the row of (account, key) if it expired; the caller then claims again. */
export async function dropIfExpired(db: Db, accountId: string, key: string, now: number): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('account_id', '=', accountId).where('key', '=', key).where('expires_at', '<=', now).execute();
}

/**
 * Takes over a claim whose lease ran out (its process died or lost its database): guarded by the
 * request id it replaces, so of several repeats exactly one wins.
 */
export async function takeOver(db: Db, row: KeyRow, requestId: string, lockedUntil: number): Promise<boolean> {
  const r = await db
    .updateTable('idempotency_keys')
    .set({ request_id: requestId, locked_until: lockedUntil })
    .where('account_id', '=', row.account_id)
    .where('key', '=', row.key)
    .where('request_id', '=', row.request_id)
    .where('status', '=', 'in_progress')
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/**
 * Request ids of `attempt` (and of its items, `<attempt>:<k>`) that the ledger shows debited: an
 * attempt that died after its debit and before storing its answer. A range, not LIKE (`_` and `%`
 * may occur in request ids).
 */
export async function debitedRequestIds(db: Db, accountId: string, attempt: string): Promise<Set<string>> {
  const rows = await db
    .selectFrom('credit_ledger')
    .select('request_id')
    .where('user_id', '=', accountId)
    .where('kind', '=', 'debit')
    .where((eb) => eb.or([eb('request_id', '=', attempt), eb.and([eb('request_id', '>', `${attempt}:`), eb('request_id', '<', `${attempt};`)])]))
    .execute();
  return new Set(rows.map((r) => r.request_id).filter((x): x is string => x !== null));
}

/** Deletes expired keys, at most `limit` per statement (a long delete would hold SQLite's one connection); returns how many. */
export async function sweepExpiredKeys(db: Db, now: number, limit = 1000): Promise<number> {
  const r = await db
    .deleteFrom('idempotency_keys')
    .where((eb) =>
      eb(
        eb.refTuple('account_id', 'key'),
        'in',
        eb.selectFrom('idempotency_keys').select(['account_id', 'key']).where('expires_at', '<=', now).limit(limit).$asTuple('account_id', 'key'),
      ),
    )
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}
