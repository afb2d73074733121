import { sql, type Kysely } from 'kysely';
import type { Dialect } from '../dialect.ts';
import type { DialectMigration } from './index.ts';

/** Free credits of accounts that existed before billing (the same as FREE_CREDITS' default). */
const BACKFILL_FREE_CREDITS = 80000;

/**
 * Credits, usage, payments and audit.
 *
 * Money tables and who may change them:
 * - credit_ledger and audit_records are append-only: triggers refuse UPDATE and DELETE on both
 *   dialects. They carry no foreign key to users, so financial history outlives a deleted account.
 * - billing_accounts.balance is the guarded counter (never below zero, CHECK + guarded UPDATE);
 *   credit_holds are reservations in flight. At every instant:
 *     sum(credit_ledger.amount) = balance + sum(credit_holds.free_credits)   (per account)
 * - usage_events are the user's history; deleting them never touches the ledger.
 */
export const m0002_billing: DialectMigration = {
  async up(db, dialect) {
    await db.schema
      .createTable('billing_accounts')
      .addColumn('user_id', 'text', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
      .addColumn('balance', 'bigint', (c) => c.notNull().check(sql`balance >= 0`))
      .addColumn('billing_active', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('provider', 'text')
      .addColumn('customer_id', 'text')
      .addColumn('subscription_id', 'text')
      .addColumn('billing_changed_at', 'bigint')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('billing_accounts_customer_idx').on('billing_accounts').columns(['provider', 'customer_id']).execute();

    await db.schema
      .createTable('credit_ledger')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('amount', 'bigint', (c) => c.notNull())
      .addColumn('metered_credits', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('request_id', 'text')
      .addColumn('usage_event_id', 'text')
      .addColumn('audit_id', 'text')
      .addColumn('description', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('credit_ledger_user_idx').on('credit_ledger').columns(['user_id', 'created_at']).execute();

    await db.schema
      .createTable('credit_holds')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('request_id', 'text', (c) => c.notNull())
      .addColumn('free_credits', 'bigint', (c) => c.notNull())
      .addColumn('metered_credits', 'bigint', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('credit_holds_expiry_idx').on('credit_holds').column('expires_at').execute();
    await db.schema.createIndex('credit_holds_user_idx').on('credit_holds').column('user_id').execute();

    await db.schema
      .createTable('usage_events')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('request_id', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('model', 'text', (c) => c.notNull())
      .addColumn('source', 'text', (c) => c.notNull())
      .addColumn('credential_kind', 'text', (c) => c.notNull())
      .addColumn('key_id', 'text')
      .addColumn('input_tokens', 'bigint', (c) => c.notNull())
      .addColumn('output_tokens', 'bigint', (c) => c.notNull())
      .addColumn('total_tokens', 'bigint', (c) => c.notNull())
      .addColumn('credits', 'bigint', (c) => c.notNull())
      .addColumn('free_credits', 'bigint', (c) => c.notNull())
      .addColumn('metered_credits', 'bigint', (c) => c.notNull())
      .addColumn('cost_nano_usd', 'bigint', (c) => c.notNull())
      .addColumn('latency_ms', 'double precision', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('usage_events_user_time_idx').on('usage_events').columns(['user_id', 'created_at']).execute();
    await db.schema.createIndex('usage_events_user_request_idx').on('usage_events').columns(['user_id', 'request_id']).execute();

    // Metered usage waiting to be reported to the payment provider (transactional outbox).
    await db.schema
      .createTable('metered_usage_outbox')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull())
      .addColumn('provider', 'text', (c) => c.notNull())
      .addColumn('customer_id', 'text')
      .addColumn('usage_event_id', 'text', (c) => c.notNull())
      .addColumn('credits', 'bigint', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('reported_at', 'bigint')
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('last_error', 'text')
      .execute();
    await db.schema.createIndex('metered_usage_outbox_pending_idx').on('metered_usage_outbox').columns(['reported_at', 'created_at']).execute();

    await db.schema
      .createTable('audit_records')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('actor_user_id', 'text', (c) => c.notNull())
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('target_user_id', 'text', (c) => c.notNull())
      .addColumn('amount', 'bigint', (c) => c.notNull())
      .addColumn('balance_before', 'bigint', (c) => c.notNull())
      .addColumn('balance_after', 'bigint', (c) => c.notNull())
      .addColumn('usage_events_deleted', 'bigint')
      .addColumn('window_start', 'bigint')
      .addColumn('window_end', 'bigint')
      .addColumn('reason', 'text', (c) => c.notNull())
      .addColumn('note', 'text')
      .addColumn('idempotency_key', 'text', (c) => c.unique())
      .addColumn('request_hash', 'text', (c) => c.notNull())
      .addColumn('response_json', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('audit_records_target_idx').on('audit_records').columns(['target_user_id', 'created_at']).execute();

    await db.schema
      .createTable('billing_sessions')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('success_url', 'text')
      .addColumn('cancel_url', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .addColumn('used_at', 'bigint')
      .execute();

    // Webhook deliveries already applied (providers retry; each event id takes effect once).
    await db.schema
      .createTable('payment_events')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('provider', 'text', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('received_at', 'bigint', (c) => c.notNull())
      .execute();

    await appendOnly(db, dialect, ['credit_ledger', 'audit_records']);

    // Accounts that existed before billing get their free credits now.
    await sql`insert into billing_accounts (user_id, balance, billing_active, created_at, updated_at)
              select id, ${BACKFILL_FREE_CREDITS}, 0, created_at, created_at from users`.execute(db);
    await sql`insert into credit_ledger (id, user_id, kind, amount, metered_credits, description, created_at)
              select 'cle_backfill_' || id, id, 'grant', ${BACKFILL_FREE_CREDITS}, 0, 'free credits', created_at from users`.execute(db);
  },
};

/** The database itself refuses UPDATE and DELETE (and TRUNCATE on PostgreSQL) on these tables. */
// biome-ignore lint: migrations run against a schema that is still changing
async function appendOnly(db: Kysely<any>, dialect: Dialect, tables: string[]): Promise<void> {
  if (dialect === 'postgres') {
    await sql
      .raw(
        `create or replace function refuse_append_only_change() returns trigger language plpgsql as $$
         begin raise exception 'table % is append-only: % refused', tg_table_name, tg_op using errcode = 'P0001'; end $$`,
      )
      .execute(db);
    for (const t of tables) {
      await sql
        .raw(`create trigger ${t}_no_update_delete before update or delete on ${t} for each row execute function refuse_append_only_change()`)
        .execute(db);
      await sql.raw(`create trigger ${t}_no_truncate before truncate on ${t} for each statement execute function refuse_append_only_change()`).execute(db);
    }
    return;
  }
  for (const t of tables) {
    await sql
      .raw(`create trigger ${t}_no_update before update on ${t} begin select raise(abort, 'table ${t} is append-only: UPDATE refused'); end`)
      .execute(db);
    await sql
      .raw(`create trigger ${t}_no_delete before delete on ${t} begin select raise(abort, 'table ${t} is append-only: DELETE refused'); end`)
      .execute(db);
  }
}
