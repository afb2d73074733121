import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CompiledQuery } from 'kysely';
import { resolveCredential } from '../../src/accounts/credentials.ts';
import { call, createKey, createTestApp, DB_KIND, registerUser, type TestApp } from '../helpers/app.ts';

/**
 * The API-key lookup as one named statement (PostgreSQL's `Database.prepared`, issue #14): the
 * same principal as the query builder's, the same refusals, and the statement really is used.
 */
describe(`API-key lookup as a named statement (${DB_KIND})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  test('resolves the same principal as the query builder; a revoked or unknown key is refused either way', async () => {
    const u = await registerUser(t);
    const k = await createKey(t, u);
    const db = t.deps.database.db;
    const names: string[] = [];
    // The real named statement on PostgreSQL; elsewhere the same SQL text run as it is.
    const prepared = async (name: string, text: string, values: unknown[]) => {
      names.push(name);
      if (t.deps.database.prepared) return t.deps.database.prepared(name, text, values);
      return (await db.executeQuery(CompiledQuery.raw(text, values))).rows as Record<string, unknown>[];
    };
    const now = t.deps.clock.now();
    const viaBuilder = await resolveCredential(db, k.key, now);
    const viaStatement = await resolveCredential(db, k.key, now, [], { prepared });
    assert.deepEqual(viaStatement, viaBuilder);
    assert.equal(viaStatement.kind, 'api_key');
    assert.deepEqual(names, ['tsfm_api_key_v1']);
    await assert.rejects(resolveCredential(db, `${k.key.slice(0, -2)}xx`, now, [], { prepared }), { code: 'invalid_credential' });
    const del = await call(t, 'DELETE', `/api/account/keys/${k.id}`, { token: u.token });
    assert.ok(del.status < 300, del.text);
    await assert.rejects(resolveCredential(db, k.key, now, [], { prepared }), { code: 'invalid_credential' });
    await assert.rejects(resolveCredential(db, k.key, now), { code: 'invalid_credential' });
  });
});
