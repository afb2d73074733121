import type { DialectMigration } from './index.ts';

/**
 * password_resets by account and time: forgot-password counts an account's links of the last hour
 * (PASSWORD_RESET_MAILS_PER_HOUR) and a completed reset ends the account's other links, both by
 * user_id; without it each was a scan of every reset ever asked for.
 */
export const m0009_password_reset_index: DialectMigration = {
  async up(db) {
    await db.schema.createIndex('password_resets_user_idx').on('password_resets').columns(['user_id', 'created_at']).execute();
  },
};
