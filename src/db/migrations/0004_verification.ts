import { sql } from 'kysely';
import type { DialectMigration } from './index.ts';

/**
 * E-mail verification and provider event ordering.
 * - users.email_verified_at: when the owner proved the address (mailed single-use link, or an
 *   identity provider that verified it). Accounts that existed before stay unverified.
 * - users.free_credits_granted_at: the free-credit grant happens once per account, whether at
 *   register or at verification (FREE_CREDITS_ON); existing accounts already had theirs.
 * - email_verifications: the mailed links (SHA-256 of the secret only), single use, expiring.
 * - billing_accounts.provider_event_at: `created` time of the last payment event applied, so a
 *   late delivery of an older event cannot undo a newer one.
 */
export const m0004_verification: DialectMigration = {
  async up(db) {
    await db.schema.alterTable('users').addColumn('email_verified_at', 'bigint').execute();
    await db.schema.alterTable('users').addColumn('free_credits_granted_at', 'bigint').execute();
    await sql`update users set free_credits_granted_at = created_at`.execute(db);

    await db.schema
      .createTable('email_verifications')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('email', 'text', (c) => c.notNull())
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .addColumn('used_at', 'bigint')
      .execute();
    await db.schema.createIndex('email_verifications_user_idx').on('email_verifications').columns(['user_id', 'created_at']).execute();

    await db.schema.alterTable('billing_accounts').addColumn('provider_event_at', 'bigint').execute();
    await db.schema.createIndex('invites_user_time_idx').on('invites').columns(['user_id', 'created_at']).execute();
  },
};
