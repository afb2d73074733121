import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { openDatabase, type Database } from '../../src/db/index.ts';
import { TEST_DATABASE_URL } from '../helpers/app.ts';

/**
 * #12.12 MIGRATION_DATABASE_URL: migrations run as a role that owns the schema; the service role
 * (DATABASE_URL) gets data rights only and cannot alter the audit table or drop its triggers.
 */
const skip = TEST_DATABASE_URL ? false : 'PostgreSQL only: set TEST_DATABASE_URL to run it';

describe('PostgreSQL: migration role and service role', { skip }, () => {
  const tag = randomBytes(4).toString('hex');
  const owner = `tsfm_owner_${tag}`;
  const service = `tsfm_app_${tag}`;
  const schema = `t_roles_${tag}`;
  const urlAs = (role: string) => {
    const u = new URL(TEST_DATABASE_URL as string);
    u.username = role;
    u.password = 'role-test-password';
    return u.href;
  };
  let admin: pg.Client;
  let database: Database;
  let asService: pg.Client;

  before(async () => {
    admin = new pg.Client({ connectionString: TEST_DATABASE_URL as string });
    await admin.connect();
    await admin.query(`create role ${owner} login password 'role-test-password'`);
    await admin.query(`create role ${service} login password 'role-test-password'`);
    await admin.query(`create schema ${schema} authorization ${owner}`);
    database = await openDatabase({ kind: 'postgres', url: urlAs(service), migrationUrl: urlAs(owner), schema });
    asService = new pg.Client({ connectionString: urlAs(service), options: `-c search_path=${schema}` });
    await asService.connect();
  });
  after(async () => {
    await asService?.end();
    await database?.close();
    await admin.query(`drop schema if exists ${schema} cascade`);
    for (const r of [service, owner]) {
      await admin.query(`drop owned by ${r} cascade`).catch(() => undefined);
      await admin.query(`drop role if exists ${r}`);
    }
    await admin.end();
  });

  test('the tables belong to the migration role; the service role reads and writes data', async () => {
    const owners = await admin.query<{ tableowner: string }>(`select distinct tableowner from pg_tables where schemaname = $1`, [schema]);
    assert.deepEqual(
      owners.rows.map((r) => r.tableowner),
      [owner],
    );
    const now = Date.now();
    await database.db
      .insertInto('users')
      .values({
        id: `usr_${tag}`,
        email: `${tag}@example.com`,
        name: null,
        password_hash: null,
        role: 'user',
        ref: null,
        accepted_data_terms_version: null,
        accepted_free_tier_data_terms: null,
        analytics_distinct_id: null,
        service_improvement_opt_in: 0,
        email_verified_at: null,
        free_credits_granted_at: null,
        created_at: now,
        updated_at: now,
      })
      .execute();
    await database.db.updateTable('users').set({ name: 'Ann' }).where('id', '=', `usr_${tag}`).execute();
    await database.db
      .insertInto('credit_ledger')
      .values({ id: `cle_${tag}`, user_id: `usr_${tag}`, kind: 'grant', amount: 5, metered_credits: 0, description: 'test', created_at: now })
      .execute();
    const n = await database.db.selectFrom('credit_ledger').select('id').where('user_id', '=', `usr_${tag}`).execute();
    assert.equal(n.length, 1);
  });

  test('the service role cannot drop the audit triggers, alter the audit table, or rewrite audit and ledger rows', async () => {
    const refused = async (q: string) => {
      await assert.rejects(asService.query(q), (e: { code?: string }) => e.code === '42501', q);
    };
    await refused('drop trigger audit_records_no_update_delete on audit_records');
    await refused('alter table audit_records disable trigger audit_records_no_update_delete');
    await refused('alter table audit_records add column x text');
    await refused('drop table audit_records');
    await refused('update credit_ledger set amount = 1000000');
    await refused('delete from audit_records');
    await refused('truncate credit_ledger');
  });
});
