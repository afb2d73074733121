import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { resolveCredential } from '../../src/accounts/credentials.ts';
import { createLedgerMeter } from '../../src/billing/meter.ts';
import { openDatabase, type Database } from '../../src/db/index.ts';
import { call, createKey, createTestApp, DB_KIND, registerUser, TEST_DATABASE_URL, type TestApp } from '../helpers/app.ts';

/**
 * A key's monthly limit across processes: two meters on two connection pools of one PostgreSQL
 * schema (as two gateway replicas would have) hold for the same key at once. Only the key row's
 * lock keeps them from both taking the last credits (each meter's own group commit cannot see
 * the other's). SQLite has one writer per file, so this case is PostgreSQL's.
 */
describe(`key monthly limit across two pools (${DB_KIND})`, { skip: DB_KIND !== 'postgres' && 'PostgreSQL only' }, () => {
  let t: TestApp;
  let second: Database;
  before(async () => {
    t = await createTestApp();
    const schema = (await sql<{ s: string }>`select current_schema() as s`.execute(t.deps.database.db)).rows[0]!.s;
    second = await openDatabase({ kind: 'postgres', url: TEST_DATABASE_URL!, schema });
  });
  after(async () => {
    await second?.close();
    await t?.close();
  });

  test('holds from two pools at once never pass the limit', async () => {
    const u = await registerUser(t);
    const k = await createKey(t, u);
    await call(t, 'PATCH', `/api/account/keys/${k.id}`, { token: u.token, body: { monthly_credit_limit: 30 } });
    const principal = await resolveCredential(t.deps.database.db, k.key, Date.now());
    const meters = [t.deps.database, second].map((database) =>
      createLedgerMeter({ database, clock: t.deps.clock, config: t.deps.config, catalog: t.deps.catalog }),
    );
    const usage = { input_tokens: 1, output_tokens: 1, total_tokens: 2 };
    const tries = Array.from({ length: 16 }, (_, i) =>
      meters[i % 2]!.hold({ principal, requestId: `req_${i}`, source: 'api', model: 'echo-last', usage, credits: 4 }).then(
        () => 'held',
        (err: { code?: string }) => err.code ?? String(err),
      ),
    );
    const outcomes = await Promise.all(tries);
    assert.equal(outcomes.filter((o) => o === 'held').length, 7, outcomes.join(', '));
    assert.equal(outcomes.filter((o) => o === 'key_budget_exceeded').length, 9);
    const held = await t.deps.database.db
      .selectFrom('credit_holds')
      .select((eb) => eb.fn.sum<number>(sql`free_credits + metered_credits`).as('s'))
      .where('key_id', '=', k.id)
      .executeTakeFirst();
    assert.equal(Number(held?.s), 28);
  });

  test('charges at commit (inline jobs) from two pools at once never pass the limit either', async () => {
    const u = await registerUser(t);
    const k = await createKey(t, u);
    await call(t, 'PATCH', `/api/account/keys/${k.id}`, { token: u.token, body: { monthly_credit_limit: 30 } });
    const principal = await resolveCredential(t.deps.database.db, k.key, Date.now());
    const meters = [t.deps.database, second].map((database) =>
      createLedgerMeter({ database, clock: t.deps.clock, config: t.deps.config, catalog: t.deps.catalog }),
    );
    const usage = { input_tokens: 1, output_tokens: 1, total_tokens: 2 };
    const tries = Array.from({ length: 16 }, (_, i) =>
      meters[i % 2]!.hold({ principal, requestId: `chg_${i}`, source: 'api', model: 'naive', usage, credits: 4, chargeAtCommit: true })
        .then((h) => h.commit({ latencyMs: 1 }))
        .then(
          () => 'charged',
          (err: { code?: string }) => err.code ?? String(err),
        ),
    );
    const outcomes = await Promise.all(tries);
    assert.equal(outcomes.filter((o) => o === 'charged').length, 7, outcomes.join(', '));
    assert.equal(outcomes.filter((o) => o === 'key_budget_exceeded').length, 9);
    const used = await t.deps.database.db
      .selectFrom('usage_events')
      .select((eb) => eb.fn.sum<number>('credits').as('s'))
      .where('key_id', '=', k.id)
      .executeTakeFirst();
    assert.equal(Number(used?.s), 28);
  });
});
