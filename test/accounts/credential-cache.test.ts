import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Kysely, PostgresDialect, type RootOperationNode } from 'kysely';
import pg from 'pg';
import { CredentialCache, writesCredentialRows } from '../../src/db/credential-cache.ts';
import { createEngine } from '../../src/engine/engine.ts';
import type { DB } from '../../src/db/schema.ts';
import { call, createKey, createTestApp, DB_KIND, registerUser, TEST_DATABASE_URL, type TestApp } from '../helpers/app.ts';

/**
 * The API-key lookup cache of PostgreSQL deployments (ADR 0025): what it serves, and every way a
 * change reaches it (this process's writes, other connections' commits through LISTEN/NOTIFY,
 * a lost listening connection, the lifetime).
 */
describe('credential cache: the cache itself', () => {
  test('serves nothing until live; a lookup that spans an invalidation is not stored; entries expire; one account is dropped alone', () => {
    let now = 0;
    const c = new CredentialCache<string>(1000, { clock: () => now, maxEntries: 3 });
    c.set('a', 'u1', 'row-a', c.snapshot());
    assert.equal(c.get('a'), undefined, 'not live: nothing stored or served');
    c.setLive(true);
    const g = c.snapshot();
    c.invalidateUser('someone');
    c.set('a', 'u1', 'row-a', g);
    assert.equal(c.get('a'), undefined, 'read before an invalidation: not stored');
    c.set('a', 'u1', 'row-a', c.snapshot());
    c.set('b', 'u2', 'row-b', c.snapshot());
    assert.equal(c.get('a'), 'row-a');
    c.invalidateUser('u1');
    assert.equal(c.get('a'), undefined);
    assert.equal(c.get('b'), 'row-b', "another account's row stays");
    now = 1000;
    assert.equal(c.get('b'), undefined, 'expired after its lifetime');
    for (const k of ['x', 'y', 'z', 'w']) c.set(k, 'u3', k, c.snapshot());
    assert.equal(c.size, 3, 'bounded');
    assert.equal(c.get('x'), undefined, 'the oldest entry made room');
    c.setLive(false);
    assert.equal(c.get('w'), undefined, 'a lost feed turns it off');
    assert.equal(new CredentialCache<string>(0).enabled, false, 'lifetime 0: off');
  });

  test('which statements count as writes of the lookup rows', () => {
    // Compiled against PostgreSQL's query compiler; nothing is executed.
    const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool: new pg.Pool() }) });
    const node = (q: { toOperationNode(): unknown }) => q.toOperationNode() as RootOperationNode;
    assert.equal(writesCredentialRows(node(db.updateTable('api_keys').set({ revoked_at: 1 }).where('id', '=', 'k'))), true);
    assert.equal(writesCredentialRows(node(db.updateTable('api_keys').set({ last_used_at: 1 }).where('id', '=', 'k'))), false);
    assert.equal(writesCredentialRows(node(db.updateTable('api_keys').set({ last_used_at: 1, scopes: 'forecast' }))), true);
    assert.equal(writesCredentialRows(node(db.updateTable('users').set({ role: 'admin' }))), true);
    assert.equal(writesCredentialRows(node(db.updateTable('billing_accounts').set({ balance: 5 }))), false);
    assert.equal(writesCredentialRows(node(db.updateTable('billing_accounts').set({ billing_active: 1 }))), true);
    assert.equal(writesCredentialRows(node(db.deleteFrom('users').where('id', '=', 'u'))), true);
    assert.equal(writesCredentialRows(node(db.deleteFrom('sessions').where('id', '=', 's'))), false);
    assert.equal(
      writesCredentialRows(
        node(db.insertInto('billing_accounts').values({ user_id: 'u', balance: 0, billing_active: 0, created_at: 0, updated_at: 0 } as never)),
      ),
      true,
    );
    assert.equal(writesCredentialRows(node(db.selectFrom('api_keys').selectAll())), false);
    void db.destroy();
  });
});

describe(`credential cache: through the API (${DB_KIND})`, {
  skip: DB_KIND !== 'postgres' && 'PostgreSQL only (TEST_DATABASE_URL): SQLite does not cache the lookup',
}, () => {
  let t: TestApp;
  let sqlClient: pg.Client;
  const naive = { model: 'naive', inputs: [{ target: [1, 2, 3, 4, 5, 6, 7, 8] }], parameters: { prediction_length: 2 } };
  before(async () => {
    const engine = createEngine({ poolSize: 1, timeoutMs: 30_000, maxQueue: 16, modelsDir: '/nonexistent', threads: 1 });
    t = await createTestApp({ overrides: { engine } });
    await engine.refresh?.();
    const target = t.databaseTarget;
    assert.equal(target.kind, 'postgres');
    // Another connection, as another replica or an operator's psql would be.
    sqlClient = new pg.Client({ connectionString: TEST_DATABASE_URL!, options: `-c search_path=${target.kind === 'postgres' ? target.schema : ''}` });
    await sqlClient.connect();
  });
  after(async () => {
    await sqlClient.end();
    await t.close();
  });

  /** Lookups that reach the database (the named statement), counted while `fn` runs. */
  async function lookupsDuring(fn: () => Promise<unknown>): Promise<number> {
    const database = t.deps.database;
    const original = database.prepared!;
    let n = 0;
    database.prepared = (name, text, values) => {
      if (name === 'tsfm_api_key_v1') n += 1;
      return original(name, text, values);
    };
    try {
      await fn();
    } finally {
      database.prepared = original;
    }
    return n;
  }

  async function eventually(what: string, check: () => Promise<boolean>, ms = 3000): Promise<number> {
    const began = Date.now();
    while (Date.now() - began < ms) {
      if (await check()) return Date.now() - began;
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.fail(`${what}: not within ${ms} ms`);
  }

  test('a key is looked up once, then served from memory', async () => {
    assert.equal(t.deps.database.credentialCache?.enabled, true);
    const u = await registerUser(t);
    const k = await createKey(t, u);
    const n = await lookupsDuring(async () => {
      for (let i = 0; i < 5; i++) assert.equal((await call(t, 'POST', '/v1/forecast', { token: k.key, body: naive })).status, 200);
    });
    assert.equal(n, 1);
  });

  test('revoked here: refused by the very next request', async () => {
    const u = await registerUser(t);
    const k = await createKey(t, u);
    assert.equal((await call(t, 'POST', '/v1/forecast', { token: k.key, body: naive })).status, 200);
    assert.equal((await call(t, 'DELETE', `/api/account/keys/${k.id}`, { token: u.token })).status, 200);
    const r = await call(t, 'POST', '/v1/forecast', { token: k.key, body: naive });
    assert.equal(r.status, 401, r.text);
  });

  test("this process's writes drop the cache as the statement returns, before any notification (the plugin)", async () => {
    const cache = t.deps.database.credentialCache!;
    const db = t.deps.database.db;
    const fill = () => cache.set('digest', 'usr_x', { row: true }, cache.snapshot());
    // Updates of no row fire no row trigger, so no NOTIFY: only the plugin can have dropped the entry.
    fill();
    await db.updateTable('api_keys').set({ last_used_at: 1 }).where('id', '=', 'key_none').execute();
    assert.equal(cache.get('digest') !== undefined, true, 'last_used_at alone keeps it');
    await db.updateTable('api_keys').set({ revoked_at: 1 }).where('id', '=', 'key_none').execute();
    assert.equal(cache.get('digest'), undefined, 'a revoke drops it');
    fill();
    await db.updateTable('billing_accounts').set({ balance: 1 }).where('user_id', '=', 'usr_none').execute();
    assert.equal(cache.get('digest') !== undefined, true, 'a balance change keeps it');
    await db.updateTable('billing_accounts').set({ billing_active: 1 }).where('user_id', '=', 'usr_none').execute();
    assert.equal(cache.get('digest'), undefined, 'a billing_active change drops it');
    fill();
    await db.transaction().execute((trx) => trx.deleteFrom('users').where('id', '=', 'usr_none').execute());
    assert.equal(cache.get('digest'), undefined, 'inside a transaction too');
  });

  test('revoked, rescoped or its account made admin by another connection: seen through NOTIFY, long before the lifetime', async () => {
    const u = await registerUser(t);
    const k = await createKey(t, u);
    const k2 = await createKey(t, u, 'second');
    assert.equal((await call(t, 'POST', '/v1/forecast', { token: k.key, body: naive })).status, 200);
    const privacy = () => call(t, 'PATCH', '/api/account/privacy', { token: k2.key, body: { service_improvement_opt_in: false } });
    assert.equal((await privacy()).status, 403, 'default scopes cannot change the account');
    await sqlClient.query("update api_keys set scopes = 'forecast account:write' where id = $1", [k2.id]);
    await eventually('new scope honoured', async () => (await privacy()).status === 200);
    await sqlClient.query('update api_keys set revoked_at = $1 where id = $2', [Date.now(), k.id]);
    const ms = await eventually('revoked key refused', async () => (await call(t, 'POST', '/v1/forecast', { token: k.key, body: naive })).status === 401);
    assert.ok(ms < 3000);
    assert.equal((await call(t, 'GET', '/api/account/me', { token: k2.key })).body.role, 'user');
    await sqlClient.query("update users set role = 'admin' where id = $1", [u.id]);
    await eventually('role change seen', async () => (await call(t, 'GET', '/api/account/me', { token: k2.key })).body?.role === 'admin');
  });

  test('a lost listening connection turns the cache off until it is back; requests keep working meanwhile', async () => {
    const cache = t.deps.database.credentialCache!;
    const u = await registerUser(t);
    const k = await createKey(t, u);
    assert.equal((await call(t, 'POST', '/v1/forecast', { token: k.key, body: naive })).status, 200);
    await sqlClient.query("select pg_terminate_backend(pid) from pg_stat_activity where query = 'listen tsfm_credentials' and pid <> pg_backend_pid()");
    await eventually('cache off', async () => !cache.enabled);
    const n = await lookupsDuring(async () => {
      for (let i = 0; i < 3; i++) assert.equal((await call(t, 'POST', '/v1/forecast', { token: k.key, body: naive })).status, 200);
    });
    assert.ok(n >= 1, 'looked up while the feed is down');
    await eventually('cache back on', async () => cache.enabled, 5000);
    assert.equal((await call(t, 'POST', '/v1/forecast', { token: k.key, body: naive })).status, 200);
  });
});
