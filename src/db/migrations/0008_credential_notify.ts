import { sql } from 'kysely';
import type { DialectMigration } from './index.ts';

/**
 * PostgreSQL: every committed change to what the API-key lookup reads is announced on the
 * `tsfm_credentials` channel with the account's id (ADR 0025: replicas cache the lookup and drop
 * an account's rows when it changes). Announced: any update or delete of `users`; updates of
 * `api_keys` other than `last_used_at` alone, and deletes; new or deleted `billing_accounts`, and
 * changes of `billing_active` (not the balance, written by every charge). SQLite needs nothing:
 * there the lookup is not cached.
 */
export const m0008_credential_notify: DialectMigration = {
  async up(db, dialect) {
    if (dialect !== 'postgres') return;
    await sql
      .raw(
        `create or replace function notify_credential_change() returns trigger language plpgsql as $$
declare
  r jsonb;
begin
  if tg_op = 'DELETE' then r := to_jsonb(old); else r := to_jsonb(new); end if;
  if tg_op = 'UPDATE' and tg_table_name = 'api_keys' and (to_jsonb(old) - 'last_used_at') = (r - 'last_used_at') then
    return null;
  end if;
  perform pg_notify('tsfm_credentials', coalesce(r->>'user_id', r->>'id'));
  return null;
end $$`,
      )
      .execute(db);
    await sql
      .raw('create trigger api_keys_credential_change after update or delete on api_keys for each row execute function notify_credential_change()')
      .execute(db);
    await sql
      .raw('create trigger users_credential_change after update or delete on users for each row execute function notify_credential_change()')
      .execute(db);
    await sql
      .raw(
        'create trigger billing_accounts_credential_change after insert or delete on billing_accounts for each row execute function notify_credential_change()',
      )
      .execute(db);
    await sql
      .raw(
        `create trigger billing_accounts_billing_active_change after update of billing_active on billing_accounts for each row
         when (old.billing_active is distinct from new.billing_active) execute function notify_credential_change()`,
      )
      .execute(db);
  },
};
