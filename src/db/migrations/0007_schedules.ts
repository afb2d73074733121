import type { DialectMigration } from './index.ts';

/**
 * Scheduled forecasts (ADR 0020).
 * - schedules: one cron schedule of an account; `next_run_at` is the next instant the scheduler
 *   loop materialises a run for (null while paused). `secret` is the webhook signing secret,
 *   encrypted with SCHEDULE_SECRET_KEY when set (it must be readable to sign: not a hash).
 * - schedule_runs: one row per due instant; `unique (schedule_id, scheduled_for)` is the claim that
 *   makes replicas create one run per instant. `lease_owner`/`lease_until` hold a running run; a
 *   lease that expires (its replica died) lets another replica take the run over. `webhook_id` is
 *   fixed per run, so a re-delivery carries the same id. `payload` is the signed body, kept so a
 *   delivery retry neither re-runs nor re-charges the forecast.
 */
export const m0007_schedules: DialectMigration = {
  async up(db) {
    await db.schema
      .createTable('schedules')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('model', 'text', (c) => c.notNull())
      .addColumn('cron_expression', 'text', (c) => c.notNull())
      .addColumn('parameters_json', 'text', (c) => c.notNull())
      .addColumn('ingest_json', 'text', (c) => c.notNull())
      .addColumn('source_url', 'text', (c) => c.notNull())
      .addColumn('callback_url', 'text', (c) => c.notNull())
      .addColumn('secret', 'text', (c) => c.notNull())
      .addColumn('credential_kind', 'text', (c) => c.notNull())
      .addColumn('credential_id', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('paused_reason', 'text')
      .addColumn('consecutive_failures', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('next_run_at', 'bigint')
      .addColumn('last_run_at', 'bigint')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema.createIndex('schedules_due_idx').on('schedules').columns(['status', 'next_run_at']).execute();
    await db.schema.createIndex('schedules_user_idx').on('schedules').columns(['user_id', 'created_at']).execute();

    await db.schema
      .createTable('schedule_runs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('schedule_id', 'text', (c) => c.notNull().references('schedules.id').onDelete('cascade'))
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('scheduled_for', 'bigint', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('lease_owner', 'text')
      .addColumn('lease_until', 'bigint')
      .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
      .addColumn('webhook_id', 'text', (c) => c.notNull())
      .addColumn('payload', 'text')
      .addColumn('credits', 'bigint')
      .addColumn('response_status', 'integer')
      .addColumn('error', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('started_at', 'bigint')
      .addColumn('finished_at', 'bigint')
      .addUniqueConstraint('schedule_runs_instant_unique', ['schedule_id', 'scheduled_for'])
      .execute();
    await db.schema.createIndex('schedule_runs_due_idx').on('schedule_runs').columns(['status', 'next_attempt_at']).execute();
  },
};
