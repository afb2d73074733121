import type { DialectMigration } from './index.ts';

/**
 * API keys with limits and scopes, and the low-balance alert (ADR 0016, docs/keys.md).
 * - api_keys.scopes: what the key may do, space-separated. Existing keys get the default
 *   (`forecast usage:read billing:read`): they keep forecasting and reading, and lose nothing
 *   else they were meant to do; managing keys, the account or checkout needs a session or a
 *   key created with the scope.
 * - api_keys.expires_at, allowed_models (JSON array of ids or `*` patterns), monthly_credit_limit,
 *   rate_limit_per_minute: optional limits, null = none.
 * - credit_holds.key_id: open holds count towards the key's monthly limit; usage_events(key_id,
 *   created_at) makes "spend of this key this month" an index range.
 * - billing_accounts.low_balance_threshold / low_balance_alerted_at: the alert mails once when a
 *   debit takes the balance below the threshold; a top-up above it re-arms it.
 */
export const m0006_key_limits: DialectMigration = {
  async up(db) {
    await db.schema
      .alterTable('api_keys')
      .addColumn('scopes', 'text', (c) => c.notNull().defaultTo('forecast usage:read billing:read'))
      .execute();
    await db.schema.alterTable('api_keys').addColumn('expires_at', 'bigint').execute();
    await db.schema.alterTable('api_keys').addColumn('allowed_models', 'text').execute();
    await db.schema.alterTable('api_keys').addColumn('monthly_credit_limit', 'bigint').execute();
    await db.schema.alterTable('api_keys').addColumn('rate_limit_per_minute', 'integer').execute();
    await db.schema.alterTable('credit_holds').addColumn('key_id', 'text').execute();
    await db.schema.createIndex('credit_holds_key_idx').on('credit_holds').column('key_id').execute();
    await db.schema.createIndex('usage_events_key_time_idx').on('usage_events').columns(['key_id', 'created_at']).execute();
    await db.schema.alterTable('billing_accounts').addColumn('low_balance_threshold', 'bigint').execute();
    await db.schema.alterTable('billing_accounts').addColumn('low_balance_alerted_at', 'bigint').execute();
  },
};
