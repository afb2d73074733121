import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ledgerCheck, planPayment, sweepExpiredHolds } from '../../src/billing/ledger.ts';
import { call, createTestApp, DB_KIND, registerUser, type TestApp } from '../helpers/app.ts';
import { FakeEngine } from '../helpers/fake-engine.ts';
import { activateBillingLocally, balanceOf, booksOf, forecast, ONE_CREDIT, principalFor } from './helpers.ts';

const usage = { input_tokens: 10, output_tokens: 5, total_tokens: 15 };

describe(`meter and credit ledger (${DB_KIND})`, () => {
  let t: TestApp;
  let engine: FakeEngine;
  before(async () => {
    engine = new FakeEngine();
    t = await createTestApp({ overrides: { engine }, env: { MODELS_BILLING_ONLY: 'echo-short', CREDIT_PRICE_NANO_USD: '250' } });
  });
  after(() => t.close());

  test('planPayment: free credits first, then metered only when billing is active', () => {
    assert.deepEqual(planPayment(10, false, 4), { free: 4, metered: 0 });
    assert.deepEqual(planPayment(10, true, 4), { free: 4, metered: 0 });
    assert.deepEqual(planPayment(3, true, 10), { free: 3, metered: 7 });
    assert.deepEqual(planPayment(0, true, 10), { free: 0, metered: 10 });
    assert.equal(planPayment(3, false, 10), null);
  });

  test('a new account gets 80000 free credits in the registration transaction, as a ledger grant', async () => {
    const u = await registerUser(t);
    assert.equal(await balanceOf(t, u.id), 80000);
    const grants = await t.deps.database.db.selectFrom('credit_ledger').selectAll().where('user_id', '=', u.id).execute();
    assert.equal(grants.length, 1);
    assert.equal(grants[0]?.kind, 'grant');
    assert.equal(Number(grants[0]?.amount), 80000);
    assert.deepEqual(await ledgerCheck(t.deps.database.db, u.id), { ledger: 80000, balance: 80000, held: 0, balanced: true });
  });

  test('hold → commit writes the debit and the usage event together; hold → release costs nothing', async () => {
    const u = await registerUser(t);
    const p = await principalFor(t, u.token);
    const h = await t.deps.meter.hold({ principal: p, requestId: 'req_a', source: 'api', model: 'echo-last', usage, credits: 7 });
    assert.equal(await balanceOf(t, u.id), 80000 - 7);
    const during = await booksOf(t, u.id);
    assert.equal(during.held, 7);
    assert.equal(during.balanced, true);
    await h.commit({ latencyMs: 12.5 });
    await h.commit({ latencyMs: 99 }); // a second settle is a no-op
    const books = await booksOf(t, u.id);
    assert.equal(books.balance, 80000 - 7);
    assert.equal(books.held, 0);
    assert.equal(books.debits, 1);
    assert.equal(books.events, 1);
    assert.deepEqual(books.eventIds, books.debitEventIds);
    const ev = await t.deps.database.db.selectFrom('usage_events').selectAll().where('user_id', '=', u.id).executeTakeFirstOrThrow();
    assert.equal(ev.request_id, 'req_a');
    assert.equal(ev.credential_kind, 'session');
    assert.equal(ev.key_id, null);
    assert.equal(Number(ev.credits), 7);
    assert.equal(Number(ev.cost_nano_usd), 7 * 250);
    assert.equal(Number(ev.latency_ms), 12.5);
    assert.equal(Number(ev.total_tokens), 15);
    assert.equal(ev.status, 'succeeded');

    const h2 = await t.deps.meter.hold({ principal: p, requestId: 'req_b', source: 'api', model: 'echo-last', usage, credits: 5 });
    await h2.release('boom');
    await h2.release('again');
    const after = await booksOf(t, u.id);
    assert.equal(after.balance, 80000 - 7);
    assert.equal(after.events, 1);
    assert.equal(after.balanced, true);
  });

  test('commit with a lower actual price gives the difference back (ensemble whose candidate failed)', async () => {
    const u = await registerUser(t);
    const p = await principalFor(t, u.token);
    const h = await t.deps.meter.hold({ principal: p, requestId: 'req_e', source: 'ensemble', model: 'ensemble', usage, credits: 30 });
    await h.commit({ latencyMs: 1, credits: 12, usage: { input_tokens: 4, output_tokens: 2, total_tokens: 6 } });
    const b = await booksOf(t, u.id);
    assert.equal(b.balance, 80000 - 12);
    assert.equal(b.eventCredits, 12);
    assert.equal(b.balanced, true);
  });

  test('402 billing_required when free credits are exhausted and billing is off: nothing charged, no inference', async () => {
    const u = await registerUser(t);
    await t.deps.database.db.updateTable('billing_accounts').set({ balance: 0 }).where('user_id', '=', u.id).execute();
    // (the counter was zeroed behind the ledger's back only to set the scene; compare deltas below)
    const jobs = engine.jobs.length;
    const r = await forecast(t, u.token);
    assert.equal(r.status, 402, r.text);
    assert.equal(r.body.code, 'billing_required');
    assert.equal(engine.jobs.length, jobs, 'no inference ran');
    const b = await booksOf(t, u.id);
    assert.equal(b.events, 0);
    assert.equal(b.debits, 0);
    assert.equal(b.held, 0);
    assert.equal(b.balance, 0);
  });

  test('partial free credits and billing off: 402 and the free credits stay untouched', async () => {
    const u = await registerUser(t);
    const p = await principalFor(t, u.token);
    await t.deps.meter
      .hold({ principal: p, requestId: 'x', source: 'api', model: 'echo-last', usage, credits: 79_995 })
      .then((h) => h.commit({ latencyMs: 1 }));
    await assert.rejects(
      t.deps.meter.hold({ principal: p, requestId: 'y', source: 'api', model: 'echo-last', usage, credits: 6 }),
      (err: Error & { code?: string }) => err.code === 'billing_required',
    );
    assert.equal(await balanceOf(t, u.id), 5);
  });

  test('with billing active, free credits are used first and the rest is metered (recorded in the outbox)', async () => {
    const u = await registerUser(t);
    const p = await principalFor(t, u.token);
    await t.deps.meter
      .hold({ principal: p, requestId: 'x', source: 'api', model: 'echo-last', usage, credits: 79_997 })
      .then((h) => h.commit({ latencyMs: 1 }));
    await activateBillingLocally(t, u);
    const h = await t.deps.meter.hold({ principal: p, requestId: 'split', source: 'api', model: 'echo-last', usage, credits: 10 });
    await h.commit({ latencyMs: 1 });
    const ev = await t.deps.database.db
      .selectFrom('usage_events')
      .selectAll()
      .where('request_id', '=', 'split')
      .where('user_id', '=', u.id)
      .executeTakeFirstOrThrow();
    assert.equal(Number(ev.free_credits), 3);
    assert.equal(Number(ev.metered_credits), 7);
    assert.equal(await balanceOf(t, u.id), 0);
    const outbox = await t.deps.database.db.selectFrom('metered_usage_outbox').selectAll().where('user_id', '=', u.id).execute();
    assert.equal(outbox.length, 1);
    assert.equal(Number(outbox[0]?.credits), 7);
    // Fully metered call through HTTP now answers 200.
    const r = await forecast(t, u.token);
    assert.equal(r.status, 200, r.text);
    const b = await booksOf(t, u.id);
    assert.equal(b.debitedMetered, 8);
    assert.equal(b.balanced, true);
  });

  test('a failed forecast costs nothing (hold released)', async () => {
    const u = await registerUser(t);
    engine.behaviour = 'failed';
    try {
      const r = await forecast(t, u.token);
      assert.equal(r.status, 502);
    } finally {
      engine.behaviour = 'ok';
    }
    const b = await booksOf(t, u.id);
    assert.equal(b.balance, 80000);
    assert.equal(b.events, 0);
    assert.equal(b.held, 0);
  });

  test('a forecast that ran for the engine’s whole time limit is charged its price: a usage event with status timed_out, the books balanced (ADR 0039)', async () => {
    const u = await registerUser(t);
    engine.behaviour = 'timeout';
    let r: Awaited<ReturnType<typeof forecast>>;
    try {
      r = await forecast(t, u.token);
    } finally {
      engine.behaviour = 'ok';
    }
    assert.equal(r.status, 504);
    assert.equal(r.body.code, 'upstream_timeout');
    assert.match(r.body.error, /charged its price \(1 credits\)/);
    assert.equal(r.headers['x-credits-charged'], '1');
    const b = await booksOf(t, u.id);
    assert.equal(b.balance, 79999);
    assert.equal(b.events, 1);
    assert.equal(b.debits, 1);
    assert.equal(b.held, 0);
    assert.equal(b.balanced, true);
    const list = await call(t, 'GET', '/api/account/usage', { token: u.token });
    assert.equal(list.status, 200, list.text);
    assert.equal(list.body.events[0].status, 'timed_out');
    assert.equal(list.body.events[0].credits, 1);
  });

  test('a job the machine starved (its thread computed less than the job was estimated at) ran out of time for free; one that computed is charged', async () => {
    const u = await registerUser(t);
    engine.behaviour = 'timeout';
    try {
      // echo-last has no work estimate: the bound is INFERENCE_MAX_JOB_WORK_MS (15 s) of CPU time.
      engine.timeoutCpuMs = 2_000;
      const starved = await forecast(t, u.token);
      assert.equal(starved.status, 504);
      assert.equal(starved.body.code, 'upstream_timeout');
      assert.match(starved.body.error, /too busy .* Nothing is charged/);
      assert.equal(starved.headers['x-credits-charged'], undefined);
      assert.equal((await booksOf(t, u.id)).events, 0);
      engine.timeoutCpuMs = 29_000;
      const computed = await forecast(t, u.token);
      assert.equal(computed.status, 504);
      assert.equal(computed.headers['x-credits-charged'], '1');
    } finally {
      engine.behaviour = 'ok';
      engine.timeoutCpuMs = undefined;
    }
    const b = await booksOf(t, u.id);
    assert.equal(b.balance, 79999);
    assert.equal(b.events, 1);
    assert.equal(b.held, 0);
    assert.equal(b.balanced, true);
  });

  test('a 200 forecast has its usage event with the request id, credential kind and key id', async () => {
    const u = await registerUser(t);
    const key = await call(t, 'POST', '/api/account/keys', { token: u.token, body: { label: 'k' } });
    const r = await forecast(t, key.body.key, ONE_CREDIT, { 'x-request-id': 'req-client-1' });
    assert.equal(r.status, 200, r.text);
    const ev = await t.deps.database.db.selectFrom('usage_events').selectAll().where('user_id', '=', u.id).executeTakeFirstOrThrow();
    assert.equal(ev.request_id, 'req-client-1');
    assert.equal(ev.credential_kind, 'api_key');
    assert.equal(ev.key_id, key.body.id);
    assert.equal(ev.source, 'api');
    assert.equal(ev.model, 'echo-last');
    assert.deepEqual(
      [Number(ev.input_tokens), Number(ev.output_tokens), Number(ev.total_tokens)],
      [r.body.usage.input_tokens, r.body.usage.output_tokens, r.body.usage.total_tokens],
    );
    assert.equal(Number(ev.credits), 1);
  });

  test('batch items are each metered under <id>:<k>', async () => {
    const u = await registerUser(t);
    const r = await call(t, 'POST', '/v1/forecast/batch', {
      token: u.token,
      body: { requests: [ONE_CREDIT, { model: 'nope', inputs: [] }, ONE_CREDIT] },
      headers: { 'x-request-id': 'batch-1' },
    });
    assert.equal(r.status, 200, r.text);
    const b = await booksOf(t, u.id);
    assert.deepEqual(b.requestIds.sort(), ['batch-1:0', 'batch-1:2']);
    assert.equal(b.balance, 80000 - 2);
  });

  test('model access: a billing-only model is 403 no_model_access without active billing, 200 with it', async () => {
    const u = await registerUser(t);
    const body = { model: 'echo-short', inputs: [{ target: [1, 2, 3] }], parameters: { prediction_length: 1 } };
    const r = await forecast(t, u.token, body);
    assert.equal(r.status, 403, r.text);
    assert.equal(r.body.code, 'no_model_access');
    assert.equal((await booksOf(t, u.id)).balance, 80000);
    await activateBillingLocally(t, u);
    const ok = await forecast(t, u.token, body);
    assert.equal(ok.status, 200, ok.text);
    const cat = await call(t, 'GET', '/api/models/echo-short');
    assert.equal(cat.body.access, 'billing');
  });

  test('holds of a dead process are released by the sweeper once expired; the books balance throughout', async () => {
    const u = await registerUser(t);
    const p = await principalFor(t, u.token);
    await t.deps.meter.hold({ principal: p, requestId: 'orphan', source: 'api', model: 'echo-last', usage, credits: 40 });
    assert.equal((await booksOf(t, u.id)).balance, 80000 - 40);
    assert.equal(await sweepExpiredHolds(t.deps.database.db, Date.now()), 0, 'not expired yet');
    const released = await sweepExpiredHolds(t.deps.database.db, Date.now() + 24 * 3600_000);
    assert.ok(released >= 1);
    const b = await booksOf(t, u.id);
    assert.equal(b.balance, 80000);
    assert.equal(b.held, 0);
    assert.equal(b.balanced, true);
  });

  test('the ledger is append-only: UPDATE and DELETE are refused by the database', async () => {
    const u = await registerUser(t);
    const db = t.deps.database.db;
    await assert.rejects(db.updateTable('credit_ledger').set({ amount: 1_000_000 }).where('user_id', '=', u.id).execute(), /append-only/);
    await assert.rejects(db.deleteFrom('credit_ledger').where('user_id', '=', u.id).execute(), /append-only/);
    assert.equal((await ledgerCheck(db, u.id)).ledger, 80000);
  });

  test('deleting the account keeps the ledger (financial history) but removes usage and the counter', async () => {
    const u = await registerUser(t);
    assert.equal((await forecast(t, u.token)).status, 200);
    assert.equal((await call(t, 'DELETE', '/api/account/me', { token: u.token })).status, 200);
    const db = t.deps.database.db;
    assert.equal((await db.selectFrom('usage_events').select('id').where('user_id', '=', u.id).execute()).length, 0);
    assert.equal((await db.selectFrom('billing_accounts').select('user_id').where('user_id', '=', u.id).execute()).length, 0);
    assert.equal((await db.selectFrom('credit_ledger').select('id').where('user_id', '=', u.id).execute()).length, 2);
  });
});

describe(`200 concurrent forecasts against exactly N credits (${DB_KIND})`, () => {
  const N = 37;
  let t: TestApp;
  let engine: FakeEngine;
  before(async () => {
    engine = new FakeEngine();
    engine.delayMs = 2;
    t = await createTestApp({ overrides: { engine }, env: { FREE_CREDITS: String(N) } });
  });
  after(() => t.close());

  test('exactly N succeed, the rest get 402, the balance is exactly zero, and the ledger and usage events agree', async () => {
    const u = await registerUser(t);
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => forecast(t, u.token, ONE_CREDIT, { 'x-request-id': `c-${i}` })));
    const statuses = results.map((r) => r.status);
    assert.equal(statuses.filter((s) => s === 200).length, N, `statuses: ${[...new Set(statuses)].join(',')}`);
    assert.equal(statuses.filter((s) => s === 402).length, 200 - N);
    const b = await booksOf(t, u.id);
    assert.equal(b.balance, 0);
    assert.equal(b.held, 0);
    assert.equal(b.ledger, 0);
    assert.equal(b.events, N);
    assert.equal(b.debits, N);
    assert.equal(b.debitedFree, N);
    assert.equal(b.eventCredits, N);
    assert.deepEqual(b.eventIds, b.debitEventIds);
    const ok = new Set(results.flatMap((r, i) => (r.status === 200 ? [`c-${i}`] : [])));
    assert.deepEqual(new Set(b.requestIds), ok);
  });
});
