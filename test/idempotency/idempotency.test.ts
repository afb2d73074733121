import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ForecastRequest } from '../../src/forecasting/schemas.ts';
import { requestHash, sweepExpiredKeys } from '../../src/idempotency/store.ts';
import { balanceOf, booksOf, forecast, ONE_CREDIT } from '../billing/helpers.ts';
import { call, createKey, DB_KIND, registerUser, type TestUser } from '../helpers/app.ts';
import { FakeEngine } from '../helpers/fake-engine.ts';
import { createListeningApp, type ListeningApp } from '../helpers/listen.ts';

const clock = {
  t: Date.now(),
  now() {
    return this.t;
  },
};

describe(`Idempotency-Key on the forecast operations (${DB_KIND})`, () => {
  let t: ListeningApp;
  const engine = new FakeEngine();
  before(async () => {
    t = await createListeningApp({ overrides: { clock, engine, backgroundJobs: false }, env: { RATE_LIMIT_FREE_PER_MINUTE: '100000' } });
  });
  after(() => t.close());
  const fresh = () => registerUser(t);
  const withKey = (key: string) => ({ 'idempotency-key': key });

  test('a repeat returns the stored answer byte for byte, idempotent-replayed: true, and is not charged again', async () => {
    const u = await fresh();
    const before = await balanceOf(t, u.id);
    const first = await forecast(t, u.token, ONE_CREDIT, withKey('k-1'));
    assert.equal(first.status, 200, first.text);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    assert.equal(first.headers['x-credits-charged'], '1');
    assert.equal(first.headers['x-request-cost-nano-usd'], String(t.deps.config.billing.creditPriceNanoUsd));
    assert.equal(first.headers['x-credits-remaining'], String(before - 1));
    const again = await forecast(t, u.token, ONE_CREDIT, withKey('k-1'));
    assert.equal(again.status, 200, again.text);
    assert.equal(again.text, first.text);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.headers['x-credits-charged'], '0');
    assert.equal(again.headers['x-request-cost-nano-usd'], '0');
    assert.equal(again.headers['x-credits-remaining'], String(before - 1));
    const books = await booksOf(t, u.id);
    assert.equal(books.debits, 1);
    assert.equal(books.events, 1);
    assert.ok(books.balanced);
    assert.equal(await balanceOf(t, u.id), before - 1);
  });

  test('the same key with another body is 422 idempotency_mismatch; field order does not matter', async () => {
    const u = await fresh();
    assert.equal((await forecast(t, u.token, ONE_CREDIT, withKey('k-2'))).status, 200);
    const reordered = { parameters: ONE_CREDIT.parameters, inputs: ONE_CREDIT.inputs, model: ONE_CREDIT.model };
    const same = await forecast(t, u.token, reordered, withKey('k-2'));
    assert.equal(same.headers['idempotent-replayed'], 'true', 'the validated input is hashed canonically');
    const other = await forecast(t, u.token, { ...ONE_CREDIT, parameters: { prediction_length: 2 } }, withKey('k-2'));
    assert.equal(other.status, 422);
    assert.equal(other.body.code, 'idempotency_mismatch');
    // Another operation with the same key is a mismatch too.
    const batch = await call(t, 'POST', '/v1/forecast/batch', { token: u.token, body: { requests: [ONE_CREDIT] }, headers: withKey('k-2') });
    assert.equal(batch.status, 422, batch.text);
    assert.equal(batch.body.code, 'idempotency_mismatch');
    assert.equal((await booksOf(t, u.id)).debits, 1);
  });

  test('ten identical requests at once are charged once and all get the same answer', async () => {
    const u = await fresh();
    engine.delayMs = 30;
    try {
      const all = await Promise.all(Array.from({ length: 10 }, () => forecast(t, u.token, ONE_CREDIT, withKey('k-3'))));
      for (const r of all) assert.equal(r.status, 200, r.text);
      assert.equal(new Set(all.map((r) => r.text)).size, 1);
      assert.equal(all.filter((r) => r.headers['idempotent-replayed'] === undefined).length, 1);
      assert.deepEqual(all.map((r) => r.headers['x-credits-charged']).sort(), ['0', '0', '0', '0', '0', '0', '0', '0', '0', '1']);
    } finally {
      engine.delayMs = 0;
    }
    const books = await booksOf(t, u.id);
    assert.equal(books.debits, 1);
    assert.ok(books.balanced);
  });

  test('keys are scoped per account', async () => {
    const [a, b] = [await fresh(), await fresh()];
    assert.equal((await forecast(t, a.token, ONE_CREDIT, withKey('shared'))).status, 200);
    const other = await forecast(t, b.token, { ...ONE_CREDIT, parameters: { prediction_length: 3 } }, withKey('shared'));
    assert.equal(other.status, 200, other.text);
    assert.equal(other.headers['idempotent-replayed'], undefined);
    assert.equal((await booksOf(t, b.id)).debits, 1);
  });

  test('a failed first call gives the key back: the retry runs and is charged once', async () => {
    const u = await fresh();
    // A model failure is free (a timeout that computed its estimate is charged: ADR 0039).
    engine.behaviour = 'failed';
    try {
      const failed = await forecast(t, u.token, ONE_CREDIT, withKey('k-4'));
      assert.equal(failed.status, 502);
    } finally {
      engine.behaviour = 'ok';
    }
    const retry = await forecast(t, u.token, ONE_CREDIT, withKey('k-4'));
    assert.equal(retry.status, 200, retry.text);
    assert.equal(retry.headers['idempotent-replayed'], undefined);
    assert.equal((await booksOf(t, u.id)).debits, 1);
  });

  test('a malformed key is a 422 naming the header', async () => {
    const u = await fresh();
    for (const bad of ['x'.repeat(256), 'caf\u00e9']) {
      const r = await t.app.inject({
        method: 'POST',
        url: '/v1/forecast',
        headers: { authorization: `Bearer ${u.token}`, 'content-type': 'application/json', 'idempotency-key': bad },
        payload: JSON.stringify(ONE_CREDIT),
      });
      assert.equal(r.statusCode, 422, r.body);
      assert.deepEqual(JSON.parse(r.body).detail[0].loc, ['header', 'idempotency-key']);
    }
    assert.equal((await booksOf(t, u.id)).debits, 0);
  });

  test('batch and ensemble answers are replayed too', async () => {
    const u = await fresh();
    const batchBody = { requests: [ONE_CREDIT, { ...ONE_CREDIT, model: 'no-such-model' }] };
    const b1 = await call(t, 'POST', '/v1/forecast/batch', { token: u.token, body: batchBody, headers: withKey('b-1') });
    assert.equal(b1.status, 200, b1.text);
    assert.equal(b1.headers['x-credits-charged'], '1');
    const b2 = await call(t, 'POST', '/v1/forecast/batch', { token: u.token, body: batchBody, headers: withKey('b-1') });
    assert.equal(b2.text, b1.text);
    assert.equal(b2.headers['idempotent-replayed'], 'true');
    const ensBody = { inputs: [{ target: [1, 2, 3, 4, 5, 6, 7, 8] }], parameters: { prediction_length: 2 }, models: ['echo-last', 'echo-short'] };
    const e1 = await call(t, 'POST', '/v1/forecast/ensemble', { token: u.token, body: ensBody, headers: withKey('e-1') });
    assert.equal(e1.status, 200, e1.text);
    assert.equal(Number(e1.headers['x-credits-charged']), e1.body.ensemble_metadata.total_cost_credits);
    const e2 = await call(t, 'POST', '/v1/forecast/ensemble', { token: u.token, body: ensBody, headers: withKey('e-1') });
    assert.deepEqual(e2.body, e1.body);
    assert.equal(e2.headers['idempotent-replayed'], 'true');
    assert.equal((await booksOf(t, u.id)).debits, 2);
  });

  test('a key expires after IDEMPOTENCY_TTL_HOURS: the repeat runs afresh, and the sweeper deletes expired rows', async () => {
    const u = await fresh();
    assert.equal((await forecast(t, u.token, ONE_CREDIT, withKey('k-5'))).status, 200);
    clock.t += t.deps.config.idempotency.ttlMs + 1;
    const later = await forecast(t, u.token, ONE_CREDIT, withKey('k-5'));
    assert.equal(later.status, 200);
    assert.equal(later.headers['idempotent-replayed'], undefined);
    assert.equal((await booksOf(t, u.id)).debits, 2);
    clock.t += t.deps.config.idempotency.ttlMs + 1;
    const swept = await sweepExpiredKeys(t.deps.database.db, clock.now());
    assert.ok(swept >= 1);
    const left = await t.deps.database.db.selectFrom('idempotency_keys').select('key').where('account_id', '=', u.id).execute();
    assert.deepEqual(left, []);
  });

  test('an attempt that died after its debit: the repeat takes the claim over and is not charged again', async () => {
    const u = await fresh();
    // The dead attempt: its debit is in the ledger (request id R), its claim still in progress.
    const first = await forecast(t, u.token, ONE_CREDIT, { 'x-request-id': 'dead-attempt-1' });
    assert.equal(first.status, 200);
    await t.deps.database.db
      .insertInto('idempotency_keys')
      .values({
        account_id: u.id,
        key: 'k-6',
        operation: 'forecast',
        request_hash: requestHash('forecast', ForecastRequest.parse(ONE_CREDIT)),
        status: 'in_progress',
        request_id: 'dead-attempt-1',
        locked_until: clock.now() - 1,
        status_code: null,
        response_body: null,
        credits_charged: null,
        created_at: clock.now() - 1000,
        expires_at: clock.now() + 3600_000,
      })
      .execute();
    const retry = await forecast(t, u.token, ONE_CREDIT, withKey('k-6'));
    assert.equal(retry.status, 200, retry.text);
    assert.equal(retry.headers['x-credits-charged'], '0');
    assert.deepEqual(retry.body.outputs, first.body.outputs, 'forecasts are deterministic: the answer is the one paid for');
    assert.equal((await booksOf(t, u.id)).debits, 1);
    const again = await forecast(t, u.token, ONE_CREDIT, withKey('k-6'));
    assert.equal(again.headers['idempotent-replayed'], 'true');
  });

  test('the OpenAPI document declares the header, the cost headers and the new error codes', async () => {
    const doc = (await call(t, 'GET', '/openapi.json')).body;
    for (const path of ['/v1/forecast', '/v1/forecast/batch', '/v1/forecast/ensemble']) {
      const op = doc.paths[path].post;
      assert.ok(
        op.parameters.some((p: { in: string; name: string }) => p.in === 'header' && p.name === 'idempotency-key'),
        path,
      );
      const headers = op.responses['200'].headers;
      for (const h of ['x-credits-charged', 'x-credits-remaining', 'x-request-cost-nano-usd', 'idempotent-replayed']) assert.ok(headers[h], `${path} ${h}`);
    }
    const codes = doc.components.schemas.ErrorResponseBody.properties.code.enum;
    assert.ok(codes.includes('idempotency_mismatch') && codes.includes('idempotency_in_progress'));
  });
});

describe(`Idempotency: a repeat while the first call runs (${DB_KIND})`, () => {
  let t: ListeningApp;
  const engine = new FakeEngine();
  before(async () => {
    t = await createListeningApp({ env: { IDEMPOTENCY_WAIT_MS: '0' }, overrides: { engine, backgroundJobs: false } });
  });
  after(() => t.close());

  test('with no wait allowed, the repeat is 409 idempotency_in_progress with retry-after; after the first ends it is replayed', async () => {
    const u = await registerUser(t);
    engine.delayMs = 400;
    let first: ReturnType<typeof forecast>;
    try {
      first = forecast(t, u.token, ONE_CREDIT, { 'idempotency-key': 'slow' });
      // Wait until the first call holds the key.
      for (let i = 0; i < 100; i++) {
        const row = await t.deps.database.db.selectFrom('idempotency_keys').select('status').where('account_id', '=', u.id).executeTakeFirst();
        if (row) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      const second = await forecast(t, u.token, ONE_CREDIT, { 'idempotency-key': 'slow' });
      assert.equal(second.status, 409, second.text);
      assert.equal(second.body.code, 'idempotency_in_progress');
      assert.equal(second.headers['retry-after'], '1');
      assert.equal((await first).status, 200);
    } finally {
      engine.delayMs = 0;
    }
    const third = await forecast(t, u.token, ONE_CREDIT, { 'idempotency-key': 'slow' });
    assert.equal(third.headers['idempotent-replayed'], 'true');
    assert.equal((await booksOf(t, u.id)).debits, 1);
  });
});

describe(`Idempotency over MCP with the SDK client (${DB_KIND})`, () => {
  let t: ListeningApp;
  let u: TestUser;
  let client: Client;
  before(async () => {
    t = await createListeningApp({ overrides: { backgroundJobs: false } });
    u = await registerUser(t);
    const key = (await createKey(t, u, 'mcp')).key;
    client = new Client({ name: 'test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${t.baseUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  });
  after(async () => {
    await client.close();
    await t.close();
  });

  test('idempotency_key: the repeat returns the first result, charged once; cost in _meta; a malformed key is refused', async () => {
    const tools = await client.listTools();
    const fc = tools.tools.find((x) => x.name === 'forecast');
    assert.ok((fc?.inputSchema.properties as Record<string, unknown> | undefined)?.idempotency_key, 'the argument is advertised');
    const args = { ...ONE_CREDIT, idempotency_key: 'mcp-1' };
    const a = await client.callTool({ name: 'forecast', arguments: args });
    assert.equal(a.isError, undefined, JSON.stringify(a.content));
    assert.equal(a._meta?.['tsfm/credits_charged'], 1);
    const b = await client.callTool({ name: 'forecast', arguments: args });
    assert.deepEqual(b.structuredContent, a.structuredContent);
    assert.equal(b._meta?.['tsfm/idempotent_replayed'], true);
    assert.equal(b._meta?.['tsfm/credits_charged'], 0);
    assert.equal((await booksOf(t, u.id)).debits, 1);
    // REST with the same key and body gets the same answer (keys are per account, not per surface).
    const rest = await forecast(t, u.token, ONE_CREDIT, { 'idempotency-key': 'mcp-1' });
    assert.equal(rest.headers['idempotent-replayed'], 'true');
    assert.deepEqual(rest.body, a.structuredContent);
    const bad = await client.callTool({ name: 'forecast', arguments: { ...ONE_CREDIT, idempotency_key: 'x'.repeat(300) } });
    assert.equal(bad.isError, true);
    const mismatch = await client.callTool({ name: 'forecast', arguments: { ...args, parameters: { prediction_length: 2 } } });
    assert.equal(mismatch.isError, true);
    assert.match(JSON.stringify(mismatch.content), /idempotency_mismatch/);
    // The quote is a tool too: free, and it says what the call would cost.
    const q = await client.callTool({ name: 'quoteForecast', arguments: { request: ONE_CREDIT } });
    assert.equal(q.isError, undefined, JSON.stringify(q.content));
    assert.equal((q.structuredContent as { credits: number }).credits, 1);
    assert.equal((await booksOf(t, u.id)).debits, 1);
  });
});
