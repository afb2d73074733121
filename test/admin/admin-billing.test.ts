import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ledgerCheck } from '../../src/billing/ledger.ts';
import { call, createTestApp, DB_KIND, expectSchema, registerUser, routeSchema, uniqueEmail, type TestApp, type TestUser } from '../helpers/app.ts';
import { balanceOf, booksOf, forecast } from '../billing/helpers.ts';

describe(`administrator billing operations (${DB_KIND})`, () => {
  let t: TestApp;
  let admin: TestUser;
  const adminEmail = uniqueEmail('admin');
  before(async () => {
    t = await createTestApp({ env: { ADMIN_EMAILS: adminEmail } });
    admin = await registerUser(t, { email: adminEmail });
  });
  after(() => t.close());

  const grant = (body: Record<string, unknown>, token = admin.token) => call(t, 'POST', '/api/admin/billing/credits', { token, body });
  const reset = (body: Record<string, unknown>, token = admin.token) => call(t, 'POST', '/api/admin/billing/usage/reset', { token, body });

  test('grant credits: balance, ledger and an audit record move together', async () => {
    const u = await registerUser(t);
    const r = await grant({ target_user_id: u.id, amount: 500, reason: 'support ticket 42', note: 'goodwill' });
    assert.equal(r.status, 200, r.text);
    const body = expectSchema(routeSchema(t, 'POST', '/api/admin/billing/credits'), r.body) as Record<string, any>;
    assert.equal(body.balance, 80500);
    assert.equal(body.adjustment.balance_before, 80000);
    assert.equal(body.adjustment.balance_after, 80500);
    assert.equal(body.adjustment.actor_user_id, admin.id);
    assert.equal(body.adjustment.target_user_id, u.id);
    assert.equal(body.adjustment.reason, 'support ticket 42');
    assert.equal(body.adjustment.note, 'goodwill');
    assert.equal(await balanceOf(t, u.id), 80500);
    assert.equal((await ledgerCheck(t.deps.database.db, u.id)).balanced, true);
    const removed = await grant({ target_user_id: u.id, amount: -80500, reason: 'abuse' });
    assert.equal(removed.status, 200, removed.text);
    assert.equal(removed.body.balance, 0);
    const tooMuch = await grant({ target_user_id: u.id, amount: -1, reason: 'abuse' });
    assert.equal(tooMuch.status, 409);
    assert.equal(await balanceOf(t, u.id), 0);
    const summary = await call(t, 'GET', '/api/account/billing', { token: u.token });
    assert.deepEqual(summary.body.free_credits, { granted: 0, used: 0, remaining: 0 });
  });

  test('validation: amount integer and non-zero, reason required; unknown target → 404', async () => {
    const u = await registerUser(t);
    for (const body of [
      { target_user_id: u.id, amount: 1.5, reason: 'x' },
      { target_user_id: u.id, amount: 0, reason: 'x' },
      { target_user_id: u.id, amount: 5 },
      { amount: 5, reason: 'x' },
    ]) {
      const r = await grant(body);
      assert.equal(r.status, 422, JSON.stringify(body));
    }
    const ghost = await grant({ target_user_id: 'usr_nobody', amount: 5, reason: 'x' });
    assert.equal(ghost.status, 404);
    assert.equal(ghost.body.code, 'not_found');
    assert.equal((await reset({ target_user_id: 'usr_nobody', reason: 'x' })).status, 404);
    const badWindow = await reset({ target_user_id: u.id, reason: 'x', start: 'tuesday' });
    assert.equal(badWindow.status, 422);
    assert.deepEqual(badWindow.body.detail[0].loc, ['body', 'start']);
  });

  test('idempotency_key: same key + same body → the first response, nothing more; different body → 409', async () => {
    const u = await registerUser(t);
    const key = `idem-${u.id}`;
    const first = await grant({ target_user_id: u.id, amount: 100, reason: 'promo', idempotency_key: key });
    assert.equal(first.status, 200);
    const again = await grant({ target_user_id: u.id, amount: 100, reason: 'promo', idempotency_key: key, note: null });
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, first.body);
    assert.equal(await balanceOf(t, u.id), 80100);
    const different = await grant({ target_user_id: u.id, amount: 999, reason: 'promo', idempotency_key: key });
    assert.equal(different.status, 409);
    assert.equal(different.body.code, 'conflict');
    const otherAction = await reset({ target_user_id: u.id, reason: 'promo', idempotency_key: key });
    assert.equal(otherAction.status, 409);
    // Simultaneous first tries with one key: one effect.
    const key2 = `${key}-race`;
    const race = await Promise.all(Array.from({ length: 5 }, () => grant({ target_user_id: u.id, amount: 7, reason: 'race', idempotency_key: key2 })));
    assert.ok(
      race.every((r) => r.status === 200),
      race.map((r) => r.status).join(','),
    );
    assert.equal(new Set(race.map((r) => r.body.adjustment.id)).size, 1);
    assert.equal(await balanceOf(t, u.id), 80107);
    const audits = await t.deps.database.db.selectFrom('audit_records').select('id').where('target_user_id', '=', u.id).execute();
    assert.equal(audits.length, 2);
  });

  test('usage reset: all events, or a window; free credits they consumed come back as an adjustment', async () => {
    const u = await registerUser(t);
    for (let i = 0; i < 3; i++) assert.equal((await forecast(t, u.token)).status, 200);
    const old = await t.deps.database.db.selectFrom('usage_events').select('id').where('user_id', '=', u.id).orderBy('id').executeTakeFirstOrThrow();
    // Move one event into the past (usage events are the user's history, not the books).
    await t.deps.database.db
      .updateTable('usage_events')
      .set({ created_at: Date.parse('2024-01-15T00:00:00Z') })
      .where('id', '=', old.id)
      .execute();
    const windowed = await reset({ target_user_id: u.id, reason: 'incident 7', start: '2024-01-01', end: '2024-02-01T00:00:00Z' });
    assert.equal(windowed.status, 200, windowed.text);
    expectSchema(routeSchema(t, 'POST', '/api/admin/billing/usage/reset'), windowed.body);
    assert.equal(windowed.body.usage_events_deleted, 1);
    assert.equal(windowed.body.credits_restored, 1);
    assert.equal(windowed.body.adjustment.window_start, '2024-01-01T00:00:00.000Z');
    assert.equal(await balanceOf(t, u.id), 80000 - 2);
    const all = await reset({ target_user_id: u.id, reason: 'incident 7b' });
    assert.equal(all.body.usage_events_deleted, 2);
    assert.equal(all.body.credits_restored, 2);
    assert.equal(all.body.balance, 80000);
    const b = await booksOf(t, u.id);
    assert.equal(b.events, 0);
    assert.equal(b.balanced, true);
    const none = await reset({ target_user_id: u.id, reason: 'nothing left' });
    assert.equal(none.body.credits_restored, 0);
  });

  test('GET adjustments: newest first, filter by target, limit/offset bounds', async () => {
    const u = await registerUser(t);
    await grant({ target_user_id: u.id, amount: 1, reason: 'a' });
    await grant({ target_user_id: u.id, amount: 2, reason: 'b' });
    const r = await call(t, 'GET', `/api/admin/billing/adjustments?target_user_id=${u.id}`, { token: admin.token });
    assert.equal(r.status, 200, r.text);
    expectSchema(routeSchema(t, 'GET', '/api/admin/billing/adjustments'), r.body);
    assert.deepEqual(
      r.body.adjustments.map((a: { reason: string }) => a.reason),
      ['b', 'a'],
    );
    assert.equal(r.body.limit, 100);
    const one = await call(t, 'GET', `/api/admin/billing/adjustments?target_user_id=${u.id}&limit=1&offset=1`, { token: admin.token });
    assert.deepEqual(
      one.body.adjustments.map((a: { reason: string }) => a.reason),
      ['a'],
    );
    const everyone = await call(t, 'GET', '/api/admin/billing/adjustments', { token: admin.token });
    assert.ok(everyone.body.adjustments.length >= 2);
    for (const qs of ['limit=0', 'limit=501', 'offset=-1', 'limit=abc']) {
      assert.equal((await call(t, 'GET', `/api/admin/billing/adjustments?${qs}`, { token: admin.token })).status, 422, qs);
    }
  });

  test('admin routes: no credential 400, invalid 401, non-administrator 403', async () => {
    const u = await registerUser(t);
    const key = await call(t, 'POST', '/api/account/keys', { token: u.token, body: { label: 'k' } });
    for (const [m, url, body] of [
      ['GET', '/api/admin/billing/adjustments', undefined],
      ['POST', '/api/admin/billing/credits', { target_user_id: u.id, amount: 5, reason: 'self-service' }],
      ['POST', '/api/admin/billing/usage/reset', { target_user_id: u.id, reason: 'self-service' }],
    ] as const) {
      assert.equal((await call(t, m, url, { body })).status, 400);
      assert.equal((await call(t, m, url, { body, token: 'tsfs_bogus' })).status, 401);
      for (const token of [u.token, key.body.key]) {
        const r = await call(t, m, url, { body, token });
        assert.equal(r.status, 403, `${m} ${url}`);
        assert.equal(r.body.code, 'forbidden');
      }
    }
    assert.equal(await balanceOf(t, u.id), 80000);
  });

  test('audit records are immutable: the database refuses UPDATE and DELETE', async () => {
    const u = await registerUser(t);
    await grant({ target_user_id: u.id, amount: 3, reason: 'to be tampered with' });
    const db = t.deps.database.db;
    await assert.rejects(db.updateTable('audit_records').set({ amount: 3_000_000 }).where('target_user_id', '=', u.id).execute(), /append-only/);
    await assert.rejects(db.deleteFrom('audit_records').where('target_user_id', '=', u.id).execute(), /append-only/);
    const rows = await db.selectFrom('audit_records').selectAll().where('target_user_id', '=', u.id).execute();
    assert.equal(rows.length, 1);
    assert.equal(Number(rows[0]?.amount), 3);
    // Deleting the target account keeps its audit trail.
    await call(t, 'DELETE', '/api/account/me', { token: u.token });
    assert.equal((await db.selectFrom('audit_records').select('id').where('target_user_id', '=', u.id).execute()).length, 1);
  });
});
