import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { adjustBalance, getBillingAccount } from '../../src/billing/ledger.ts';
import { createEngine } from '../../src/engine/engine.ts';
import type { Engine } from '../../src/engine/types.ts';
import { call, createKey, createTestApp, DB_KIND, registerUser, type TestApp, type TestUser } from '../helpers/app.ts';
import { activateBillingLocally, booksOf } from './helpers.ts';

/**
 * Inline jobs (naive, seasonal-naive, drift on small inputs) run before their credits are taken:
 * the reservation and the debit + usage event are one group-committed transaction at the end
 * (ADR 0014), on PostgreSQL one statement for the accounts whose balance covers their calls.
 * These tests drive the real engine, so the path is the one production takes, and check that it
 * keeps the ledger's promises: a usage record for every 200, balanced books, no overspend at the
 * credit boundary, metered billing and key budgets as with holds.
 */
const NAIVE = { model: 'naive', inputs: [{ target: [5, 7, 6, 8, 7, 9, 8, 10, 9, 11, 10, 12] }], parameters: { prediction_length: 12 } };

describe(`inline jobs: reserved and debited in one step (${DB_KIND})`, () => {
  let t: TestApp;
  let engine: Engine;
  let price: number;
  before(async () => {
    engine = createEngine({ poolSize: 1, timeoutMs: 30_000, maxQueue: 64, modelsDir: '/nonexistent', threads: 1 });
    t = await createTestApp({ overrides: { engine } });
    const u = await registerUser(t);
    const q = await call(t, 'POST', '/v1/forecast/quote', { token: u.token, body: { operation: 'forecast', request: NAIVE } });
    assert.equal(q.status, 200, q.text);
    price = q.body.credits;
    assert.ok(price > 0);
  });
  after(() => t.close());

  /** Sets the prepaid balance to exactly `credits`, through the ledger (so the books stay balanced). */
  async function setBalance(u: TestUser, credits: number): Promise<void> {
    const now = (await getBillingAccount(t.deps.database.db, u.id))!.balance;
    await t.deps.database.db
      .transaction()
      .execute((trx) => adjustBalance(trx, u.id, credits - now, { kind: 'adjustment', auditId: 'aud_test', description: 'test', now: Date.now() }));
  }
  const forecast = (token: string, headers: Record<string, string> = {}) => call(t, 'POST', '/v1/forecast', { token, body: NAIVE, headers });

  test('the engine runs naive inline; a 200 has its usage event and debit, and no hold is ever written', async () => {
    const u = await registerUser(t);
    const before = (await getBillingAccount(t.deps.database.db, u.id))!.balance;
    // What the forecasting service asks of the meter: charge at commit, for naive; hold first, for theta.
    const asked: (boolean | undefined)[] = [];
    const hold = t.deps.meter.hold;
    t.deps.meter.hold = (req) => {
      asked.push(req.chargeAtCommit);
      return hold.call(t.deps.meter, req);
    };
    let r: Awaited<ReturnType<typeof forecast>>;
    try {
      r = await forecast(u.token, { 'x-request-id': 'inline-1' });
      const theta = await call(t, 'POST', '/v1/forecast', { token: u.token, body: { ...NAIVE, model: 'theta' }, headers: { 'x-request-id': 'pooled-1' } });
      assert.equal(theta.status, 200, theta.text);
    } finally {
      t.deps.meter.hold = hold;
    }
    assert.deepEqual(asked, [true, undefined]);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers['x-credits-charged'], String(price));
    assert.equal(r.headers['x-credits-remaining'], String(before - price));
    const b = await booksOf(t, u.id);
    assert.equal(b.balanced, true);
    assert.equal(b.held, 0);
    assert.deepEqual(new Set(b.requestIds), new Set(['inline-1', 'pooled-1']));
    const holds = await t.deps.database.db.selectFrom('credit_holds').select('id').where('user_id', '=', u.id).execute();
    assert.equal(holds.length, 0);
  });

  test('a call the balance does not cover: 402 billing_required, nothing written', async () => {
    const u = await registerUser(t);
    await setBalance(u, price - 1);
    const r = await forecast(u.token);
    assert.equal(r.status, 402, r.text);
    assert.equal(r.body.code, 'billing_required');
    const b = await booksOf(t, u.id);
    assert.equal(b.events, 0);
    assert.equal(b.debits, 0);
    assert.equal(b.balance, price - 1);
    assert.equal(b.balanced, true);
  });

  test('300 concurrent forecasts against exactly N calls of credits: N succeed, the rest 402, balance 0, books agree', async () => {
    const N = 41;
    const u = await registerUser(t);
    await setBalance(u, N * price);
    const results = await Promise.all(Array.from({ length: 300 }, (_, i) => forecast(u.token, { 'x-request-id': `inl-${i}` })));
    const statuses = results.map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 200).length, N, `statuses: ${[...new Set(statuses)].join(',')}`);
    assert.equal(statuses.filter((s) => s === 402).length, 300 - N);
    const b = await booksOf(t, u.id);
    assert.equal(b.balance, 0);
    assert.equal(b.held, 0);
    assert.equal(b.balanced, true);
    assert.equal(b.events, N);
    assert.equal(b.debits, N);
    assert.equal(b.eventCredits, N * price);
    assert.deepEqual(b.eventIds, b.debitEventIds);
    assert.deepEqual(new Set(b.requestIds), new Set(results.flatMap((r, i) => (r.status === 200 ? [`inl-${i}`] : []))));
  });

  test('three batches of 64 at once against exactly N items of credits: N items succeed, each with its usage event', async () => {
    const N = 50;
    const u = await registerUser(t);
    await setBalance(u, N * price);
    const batch = { requests: Array.from({ length: 64 }, () => NAIVE) };
    const rs = await Promise.all(
      [0, 1, 2].map((k) => call(t, 'POST', '/v1/forecast/batch', { token: u.token, body: batch, headers: { 'x-request-id': `b${k}` } })),
    );
    for (const r of rs) assert.equal(r.status, 200, r.text);
    const items = rs.flatMap((r, k) => r.body.data.map((d: { ok: boolean; error: { code: string } | null }, i: number) => ({ d, id: `b${k}:${i}` })));
    const ok = items.filter((x) => x.d.ok);
    assert.equal(ok.length, N);
    assert.ok(items.filter((x) => !x.d.ok).every((x) => x.d.error?.code === 'billing_required'));
    const b = await booksOf(t, u.id);
    assert.equal(b.balance, 0);
    assert.equal(b.balanced, true);
    assert.equal(b.events, N);
    assert.deepEqual(new Set(b.requestIds), new Set(ok.map((x) => x.id)));
  });

  test('two accounts in one group: the one whose balance covers its calls is debited whole, the other call by call', async () => {
    const rich = await registerUser(t);
    const poor = await registerUser(t);
    await setBalance(poor, 2 * price);
    const richBefore = (await getBillingAccount(t.deps.database.db, rich.id))!.balance;
    const rs = await Promise.all(Array.from({ length: 20 }, (_, i) => forecast(i % 2 ? poor.token : rich.token)));
    const of = (parity: number) => rs.filter((_, i) => i % 2 === parity).map((r) => r.status);
    assert.deepEqual(of(0), new Array(10).fill(200));
    assert.equal(of(1).filter((s) => s === 200).length, 2);
    assert.equal(of(1).filter((s) => s === 402).length, 8);
    const r = await booksOf(t, rich.id);
    const p = await booksOf(t, poor.id);
    assert.equal(r.balance, richBefore - 10 * price);
    assert.equal(r.events, 10);
    assert.equal(p.balance, 0);
    assert.equal(p.events, 2);
    assert.equal(r.balanced && p.balanced, true);
  });

  test('with billing active, free credits go first and the rest is metered, with its outbox row', async () => {
    const u = await registerUser(t);
    await activateBillingLocally(t, u);
    await setBalance(u, 3 * price);
    const rs = await Promise.all(Array.from({ length: 8 }, () => forecast(u.token)));
    assert.deepEqual(
      rs.map((r) => r.status),
      new Array(8).fill(200),
    );
    const b = await booksOf(t, u.id);
    assert.equal(b.balance, 0);
    assert.equal(b.balanced, true);
    assert.equal(b.events, 8);
    assert.equal(b.debitedFree, 3 * price);
    assert.equal(b.debitedMetered, 5 * price);
    const outbox = await t.deps.database.db.selectFrom('metered_usage_outbox').select('credits').where('user_id', '=', u.id).execute();
    assert.equal(
      outbox.reduce((a, o) => a + Number(o.credits), 0),
      5 * price,
    );
  });

  test("an API key's monthly limit holds for inline calls too: 20 at once against a limit of 7 calls", async () => {
    const u = await registerUser(t);
    const k = await createKey(t, u);
    const patch = await call(t, 'PATCH', `/api/account/keys/${k.id}`, { token: u.token, body: { monthly_credit_limit: 7 * price } });
    assert.equal(patch.status, 200, patch.text);
    const rs = await Promise.all(Array.from({ length: 20 }, () => forecast(k.key)));
    const statuses = rs.map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 200).length, 7, statuses.join(','));
    assert.ok(rs.filter((r) => r.status !== 200).every((r) => r.status === 402 && r.body.code === 'key_budget_exceeded'));
    const b = await booksOf(t, u.id);
    assert.equal(b.events, 7);
    assert.equal(b.balanced, true);
  });

  test('concurrent inline debits that cross the low-balance threshold mail once', async () => {
    const u = await registerUser(t);
    await setBalance(u, 20 * price);
    await call(t, 'PATCH', '/api/account/alerts', { token: u.token, body: { low_balance_threshold: 15 * price } });
    const rs = await Promise.all(Array.from({ length: 8 }, () => forecast(u.token)));
    assert.ok(rs.every((r) => r.status === 200));
    const mails = () => t.mailer.sent.filter((m) => m.to === u.email && /balance is below/.test(m.subject));
    for (let i = 0; i < 50 && mails().length < 1; i++) await sleep(20);
    await sleep(100);
    assert.equal(mails().length, 1);
    assert.equal((await call(t, 'GET', '/api/account/alerts', { token: u.token })).body.low_balance_alerted, true);
  });
});
