import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { adjustBalance, getBillingAccount } from '../../src/billing/ledger.ts';
import { call, createKey, createTestApp, DB_KIND, expectSchema, registerUser, routeSchema, type TestApp, type TestUser } from '../helpers/app.ts';

const FORECAST = { model: 'echo-last', inputs: [{ target: [1, 2, 3, 4, 5, 6] }], parameters: { prediction_length: 3 } };

describe(`low-balance alert (${DB_KIND})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  const alertsTo = (u: TestUser) => t.mailer.sent.filter((m) => m.to === u.email && /balance is below/.test(m.subject));
  const balance = async (u: TestUser) => (await getBillingAccount(t.deps.database.db, u.id))!.balance;
  /** The mail leaves after the debit committed, off the request's path: wait for it (or for nothing more). */
  async function settle(u: TestUser, expected: number): Promise<void> {
    for (let i = 0; i < 50 && alertsTo(u).length < expected; i++) await sleep(20);
    await sleep(100);
  }

  test('setting: GET and PATCH, validated; a default API key may read but not change it', async () => {
    const u = await registerUser(t);
    const get = await call(t, 'GET', '/api/account/alerts', { token: u.token });
    assert.equal(get.status, 200);
    expectSchema(routeSchema(t, 'GET', '/api/account/alerts'), get.body);
    assert.deepEqual(get.body, { low_balance_threshold: null, low_balance_alerted: false });
    const set = await call(t, 'PATCH', '/api/account/alerts', { token: u.token, body: { low_balance_threshold: 500 } });
    assert.equal(set.status, 200, set.text);
    assert.equal((await call(t, 'GET', '/api/account/alerts', { token: u.token })).body.low_balance_threshold, 500);
    for (const bad of [{ low_balance_threshold: 0 }, { low_balance_threshold: 1.5 }, { low_balance_threshold: '5' }, {}]) {
      const r = await call(t, 'PATCH', '/api/account/alerts', { token: u.token, body: bad });
      assert.equal(r.status, 422, JSON.stringify(bad));
      assert.deepEqual(r.body.detail[0].loc, ['body', 'low_balance_threshold']);
    }
    const k = await createKey(t, u);
    assert.equal((await call(t, 'GET', '/api/account/alerts', { token: k.key })).status, 200);
    const refused = await call(t, 'PATCH', '/api/account/alerts', { token: k.key, body: { low_balance_threshold: null } });
    assert.equal(refused.status, 403);
    assert.match(refused.body.error, /scope account:write/);
  });

  test('concurrent debits that cross the threshold mail exactly once; a top-up re-arms it', async () => {
    const u = await registerUser(t);
    const start = await balance(u);
    assert.ok(start > 0);
    // No threshold: debits mail nothing.
    assert.equal((await call(t, 'POST', '/v1/forecast', { token: u.token, body: FORECAST })).status, 200);
    const afterOne = await balance(u);
    const price = start - afterOne;
    assert.ok(price > 0);
    // The threshold sits just under the balance: the next debit crosses it; six at once must mail once.
    await call(t, 'PATCH', '/api/account/alerts', { token: u.token, body: { low_balance_threshold: afterOne - 1 } });
    const rs = await Promise.all(Array.from({ length: 6 }, () => call(t, 'POST', '/v1/forecast', { token: u.token, body: FORECAST })));
    assert.deepEqual(
      rs.map((r) => r.status),
      [200, 200, 200, 200, 200, 200],
    );
    await settle(u, 1);
    assert.equal(alertsTo(u).length, 1);
    assert.match(alertsTo(u)[0]!.text, new RegExp(`below the alert threshold of ${afterOne - 1}`));
    assert.equal((await call(t, 'GET', '/api/account/alerts', { token: u.token })).body.low_balance_alerted, true);
    // Further debits below the threshold: no more mail.
    await call(t, 'POST', '/v1/forecast', { token: u.token, body: FORECAST });
    await settle(u, 2);
    assert.equal(alertsTo(u).length, 1);
    // A top-up back to the threshold re-arms it; the next crossing mails again.
    const now = await balance(u);
    await t.deps.database.db
      .transaction()
      .execute((trx) => adjustBalance(trx, u.id, afterOne - 1 - now, { kind: 'grant', auditId: 'aud_test', description: 'top-up', now: Date.now() }));
    assert.equal((await call(t, 'GET', '/api/account/alerts', { token: u.token })).body.low_balance_alerted, false);
    assert.equal((await call(t, 'POST', '/v1/forecast', { token: u.token, body: FORECAST })).status, 200);
    await settle(u, 2);
    assert.equal(alertsTo(u).length, 2);
  });
});
