import type { DialectMigration } from './index.ts';

/**
 * Idempotency keys of the forecast operations (docs/idempotency.md, ADR 0015): one row per
 * (account, key). A call claims its key with INSERT … ON CONFLICT DO NOTHING (`in_progress`,
 * leased until `locked_until` to the attempt `request_id`), then stores its answer (`done`) or
 * gives the key back (deleted) when it failed. Rows expire at `expires_at` and are swept.
 */
export const m0005_idempotency: DialectMigration = {
  async up(db) {
    await db.schema
      .createTable('idempotency_keys')
      .addColumn('account_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('operation', 'text', (c) => c.notNull())
      .addColumn('request_hash', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('request_id', 'text', (c) => c.notNull())
      .addColumn('locked_until', 'bigint', (c) => c.notNull())
      .addColumn('status_code', 'integer')
      .addColumn('response_body', 'text')
      .addColumn('credits_charged', 'bigint')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('idempotency_keys_pk', ['account_id', 'key'])
      .execute();
    await db.schema.createIndex('idempotency_keys_expiry_idx').on('idempotency_keys').column('expires_at').execute();
  },
};
