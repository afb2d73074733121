import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { createScheduler, type Scheduler } from '../../src/schedules/runner.ts';
import { call, createKey, createTestApp, DB_KIND, registerUser, type TestApp, type TestUser } from '../helpers/app.ts';
import { FakeEngine } from '../helpers/fake-engine.ts';
import { LOOPBACK_ENV, LocalEndpoints, ManualClock } from './helpers.ts';

const MINUTE = 60_000;

describe(`scheduled runs (${DB_KIND})`, () => {
  let t: TestApp;
  let clock: ManualClock;
  let ep: LocalEndpoints;
  let sched: Scheduler;
  const engine = new FakeEngine();
  before(async () => {
    ep = await new LocalEndpoints().start();
    clock = new ManualClock();
    t = await createTestApp({
      env: { ...LOOPBACK_ENV, SCHEDULE_RETRY_BASE_MS: '1000', SCHEDULE_MAX_ATTEMPTS: '3', SCHEDULE_PAUSE_AFTER_FAILURES: '2', SCHEDULE_LEASE_MS: '10000' },
      overrides: { clock, engine },
    });
    sched = createScheduler(t.deps);
  });
  after(async () => {
    await sched.stop();
    await t.close();
    await ep.close();
  });

  async function newSchedule(u: TestUser, extra: Record<string, unknown> = {}) {
    const r = await call(t, 'POST', '/v1/schedules', {
      token: u.token,
      body: {
        name: 'every minute',
        model: 'echo-last',
        cron_expression: '* * * * *',
        parameters: { prediction_length: 2 },
        source_url: `${ep.base}/source.csv`,
        callback_url: `${ep.base}/hook`,
        ...extra,
      },
    });
    assert.equal(r.status, 200, r.text);
    return r.body as { id: string; secret: string; next_run_at: string };
  }
  /** An MCP client of the user's (the OAuth tables' foreign keys need one). */
  async function oauthClient(u: TestUser): Promise<string> {
    const id = `client-${u.id}`;
    const c = { id, client_name: 'test', redirect_uris: '[]', token_endpoint_auth_method: 'none' as const, client_secret_hash: null, metadata: '{}' };
    await t.deps.database.db
      .insertInto('oauth_clients')
      .values({ ...c, created_at: clock.now() })
      .execute();
    return id;
  }
  /** Schedules left active would deliver in later tests' ticks. */
  const removeSchedules = (u: TestUser) => t.deps.database.db.deleteFrom('schedules').where('user_id', '=', u.id).execute();
  const runs = async (u: TestUser, id: string) => (await call(t, 'GET', `/v1/schedules/${id}/runs`, { token: u.token })).body.data as any[];
  const balance = async (u: TestUser) => (await call(t, 'GET', '/api/account/billing', { token: u.token })).body;

  it('a due run fetches the source, forecasts as the owner (metered), and POSTs a Standard Webhooks signed result', async () => {
    const u = await registerUser(t);
    const s = await newSchedule(u);
    ep.deliveries.length = 0;
    await sched.tick();
    assert.equal(ep.deliveries.length, 0, 'nothing is due yet');
    clock.advance(MINUTE);
    await sched.tick();
    assert.equal(ep.deliveries.length, 1);
    const d = ep.deliveries[0]!;
    // The receiver's view: the standardwebhooks library verifies id, timestamp and signature.
    const event = new Webhook(s.secret).verify(d.body, {
      'webhook-id': String(d.headers['webhook-id']),
      'webhook-timestamp': String(d.headers['webhook-timestamp']),
      'webhook-signature': String(d.headers['webhook-signature']),
    }) as any;
    assert.equal(event.type, 'forecast.completed');
    assert.equal(event.data.schedule_id, s.id);
    assert.deepEqual(event.data.forecast.outputs[0].mean, [[3], [3]]);
    assert.deepEqual(event.data.forecast.outputs[0].timestamps, ['2024-01-04T00:00:00.000Z', '2024-01-05T00:00:00.000Z']);
    // A wrong secret does not verify.
    assert.throws(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(d.body, d.headers as Record<string, string>));
    const [run] = await runs(u, s.id);
    assert.equal(run.status, 'succeeded');
    assert.equal(run.attempts, 1);
    assert.equal(run.response_status, 200);
    assert.equal(run.webhook_id, d.headers['webhook-id']);
    assert.ok(run.credits >= 1);
    // Metered like a forecast: a usage event with source `schedule` and the run id as request id.
    const ev = await t.deps.database.db.selectFrom('usage_events').selectAll().where('user_id', '=', u.id).execute();
    assert.equal(ev.length, 1);
    assert.equal(ev[0]?.source, 'schedule');
    assert.equal(ev[0]?.request_id, run.id);
    assert.equal(Number(ev[0]?.credits), run.credits);
    // The next tick in the same minute does nothing more.
    await sched.tick();
    assert.equal(ep.deliveries.length, 1);
    await call(t, 'DELETE', `/v1/schedules/${s.id}`, { token: u.token });
  });

  it('a failed delivery is retried with backoff, with the same webhook-id and without charging again', async () => {
    const u = await registerUser(t);
    const s = await newSchedule(u);
    ep.deliveries.length = 0;
    ep.answer = 500;
    const before = await balance(u);
    clock.advance(MINUTE);
    await sched.tick();
    let [run] = await runs(u, s.id);
    assert.equal(run.status, 'retrying');
    assert.equal(run.response_status, 500);
    assert.match(run.error, /HTTP 500/);
    const sourceHits = ep.sourceHits;
    await sched.tick();
    assert.equal(ep.deliveries.length, 1, 'not before the backoff');
    ep.answer = 204;
    clock.advance(1000);
    await sched.tick();
    assert.equal(ep.deliveries.length, 2);
    assert.equal(ep.deliveries[0]!.headers['webhook-id'], ep.deliveries[1]!.headers['webhook-id']);
    assert.equal(ep.deliveries[0]!.body, ep.deliveries[1]!.body, 'the same payload');
    assert.equal(ep.sourceHits, sourceHits, 'the source was not fetched again');
    [run] = await runs(u, s.id);
    assert.equal(run.status, 'succeeded');
    assert.equal(run.attempts, 2);
    const after = await balance(u);
    const events = await t.deps.database.db.selectFrom('usage_events').select('credits').where('user_id', '=', u.id).execute();
    assert.equal(events.length, 1, 'charged once');
    assert.ok(before && after);
    ep.answer = 200;
    await call(t, 'DELETE', `/v1/schedules/${s.id}`, { token: u.token });
  });

  it('runs that keep failing are marked failed; the schedule pauses after repeated failed runs', async () => {
    const u = await registerUser(t);
    const s = await newSchedule(u);
    ep.answer = 503;
    for (let minute = 0; minute < 2; minute++) {
      clock.advance(MINUTE);
      await sched.tick(); // attempt 1
      clock.advance(1000);
      await sched.tick(); // attempt 2
      clock.advance(2000);
      await sched.tick(); // attempt 3: the last
    }
    const list = await runs(u, s.id);
    assert.deepEqual(
      list.map((r) => [r.status, r.attempts]),
      [
        ['failed', 3],
        ['failed', 3],
      ],
    );
    const got = (await call(t, 'GET', `/v1/schedules/${s.id}`, { token: u.token })).body;
    assert.equal(got.status, 'paused');
    assert.equal(got.consecutive_failures, 2);
    assert.match(got.paused_reason, /after 2 failed runs/);
    assert.equal(got.next_run_at, null);
    const n = ep.deliveries.length;
    clock.advance(5 * MINUTE);
    await sched.tick();
    assert.equal(ep.deliveries.length, n, 'a paused schedule does not run');
    ep.answer = 200;
    const resumed = await call(t, 'POST', `/v1/schedules/${s.id}/resume`, { token: u.token });
    assert.equal(resumed.body.consecutive_failures, 0);
    await call(t, 'DELETE', `/v1/schedules/${s.id}`, { token: u.token });
  });

  it('a source that does not make a forecast fails at once (no retry), naming the line, and costs nothing', async () => {
    const u = await registerUser(t);
    const s = await newSchedule(u);
    const csv = ep.csv;
    ep.csv = 'ds,y\n2024-01-01,1\n2024-01-02,abc\n';
    clock.advance(MINUTE);
    await sched.tick();
    ep.csv = csv;
    const [run] = await runs(u, s.id);
    assert.equal(run.status, 'failed');
    assert.equal(run.attempts, 1);
    assert.match(run.error, /line 3, column 'y': 'abc' is not a number/);
    assert.equal(run.credits, null);
    const events = await t.deps.database.db.selectFrom('usage_events').select('id').where('user_id', '=', u.id).execute();
    assert.equal(events.length, 0);
    await call(t, 'DELETE', `/v1/schedules/${s.id}`, { token: u.token });
  });

  it('a forecast that ran for the engine’s whole time limit fails the run at once (it would again), charged its price (ADR 0039)', async () => {
    const u = await registerUser(t);
    const s = await newSchedule(u);
    engine.behaviour = 'timeout';
    clock.advance(MINUTE);
    try {
      await sched.tick();
      // No retry later: an upstream_timeout is not retried like a passing failure.
      clock.advance(10_000);
      await sched.tick();
    } finally {
      engine.behaviour = 'ok';
    }
    const [run] = await runs(u, s.id);
    assert.equal(run.status, 'failed');
    assert.equal(run.attempts, 1);
    assert.match(run.error, /^upstream_timeout: /);
    assert.ok(run.credits >= 1);
    const events = await t.deps.database.db.selectFrom('usage_events').selectAll().where('user_id', '=', u.id).execute();
    assert.equal(events.length, 1);
    assert.equal(events[0]?.status, 'timed_out');
    assert.equal(events[0]?.request_id, run.id);
    assert.equal(Number(events[0]?.credits), run.credits);
    await call(t, 'DELETE', `/v1/schedules/${s.id}`, { token: u.token });
  });

  it('a forecast too large for SCHEDULE_MAX_PAYLOAD_BYTES is refused before it runs, and costs nothing', async () => {
    const u = await registerUser(t);
    // 10,000 steps × (1 + 3 quantiles + 100 samples) per series: past 1 MiB at two bytes a number.
    const s = await newSchedule(u, { parameters: { prediction_length: 10_000, num_samples: 100 } });
    clock.advance(MINUTE);
    await sched.tick();
    const [run] = await runs(u, s.id);
    assert.equal(run.status, 'failed');
    assert.equal(run.attempts, 1, 'a refusal is final at once');
    // Refused from the plan (before the model runs), not after writing the answer.
    assert.match(run.error, /would hold \d+ numbers, at least \d+ bytes: larger than SCHEDULE_MAX_PAYLOAD_BYTES/);
    assert.equal(run.credits, null);
    const events = await t.deps.database.db.selectFrom('usage_events').select('id').where('user_id', '=', u.id).execute();
    assert.equal(events.length, 0);
    await call(t, 'DELETE', `/v1/schedules/${s.id}`, { token: u.token });
  });

  it('a source on a private address is refused at run time too (DNS may change after creation)', async () => {
    const u = await registerUser(t);
    const s = await newSchedule(u);
    // As if the name now resolved elsewhere: the row points at the metadata address.
    await t.deps.database.db.updateTable('schedules').set({ source_url: 'http://169.254.169.254/latest' }).where('id', '=', s.id).execute();
    clock.advance(MINUTE);
    await sched.tick();
    const [run] = await runs(u, s.id);
    assert.equal(run.status, 'failed');
    assert.match(run.error, /refused/);
    await call(t, 'DELETE', `/v1/schedules/${s.id}`, { token: u.token });
  });

  it('a schedule whose API key was revoked pauses before fetching its source; resumed by the account holder, it runs as them', async () => {
    const u = await registerUser(t);
    const k = await createKey(t, u, 'scheduler');
    const s = await newSchedule({ ...u, token: k.key });
    const del = await call(t, 'DELETE', `/api/account/keys/${k.id}`, { token: u.token });
    assert.equal(del.status, 200, del.text);
    const [hits, sent] = [ep.sourceHits, ep.deliveries.length];
    clock.advance(MINUTE);
    await sched.tick();
    assert.equal(ep.sourceHits, hits, 'the source is not fetched for a revoked key');
    assert.equal(ep.deliveries.length, sent);
    const paused = (await call(t, 'GET', `/v1/schedules/${s.id}`, { token: u.token })).body;
    assert.equal(paused.status, 'paused');
    assert.match(paused.paused_reason, /API key .* revoked or expired; resume it/);
    const [run] = await runs(u, s.id);
    assert.equal(run.status, 'skipped');
    const resumed = await call(t, 'POST', `/v1/schedules/${s.id}/resume`, { token: u.token });
    assert.equal(resumed.status, 200, resumed.text);
    clock.advance(MINUTE);
    await sched.tick();
    assert.equal(ep.deliveries.length, sent + 1, 'resumed by the account holder, it runs as them');
    await removeSchedules(u);
  });

  it('signing out everywhere pauses the schedules made with sessions or OAuth; those made with a key keep running', async () => {
    const u = await registerUser(t);
    const k = await createKey(t, u, 'kept');
    const bySession = await newSchedule(u);
    const byKey = await newSchedule({ ...u, token: k.key });
    const byOAuth = await newSchedule(u);
    // An MCP client's grant: an access token and a refresh token (as the OAuth token endpoint makes them).
    const db = t.deps.database.db;
    const now = clock.now();
    const client = await oauthClient(u);
    const token = (id: string, kind: 'access' | 'refresh', ttl: number) => ({
      id,
      kind,
      token_hash: `hash-${id}`,
      grant_id: `grant-${u.id}`,
      client_id: client,
      user_id: u.id,
      scope: 'mcp',
      resource: 'http://x/mcp',
      created_at: now,
      expires_at: now + ttl,
      revoked_at: null,
    });
    await db
      .insertInto('oauth_tokens')
      .values([token(`at-${u.id}`, 'access', MINUTE / 2), token(`rt-${u.id}`, 'refresh', 30 * 24 * 60 * MINUTE)])
      .execute();
    await db
      .updateTable('schedules')
      .set({ credential_kind: 'oauth', credential_id: `at-${u.id}` })
      .where('id', '=', byOAuth.id)
      .execute();
    // The access token expires within the minute; the grant (its refresh token) still holds: the run goes ahead.
    const sent = ep.deliveries.length;
    clock.advance(MINUTE);
    await sched.tick();
    assert.equal(ep.deliveries.length, sent + 3);
    const out = await call(t, 'POST', '/api/auth/sign-out-everywhere', { token: u.token });
    assert.equal(out.status, 200, out.text);
    const status = async (id: string) => await db.selectFrom('schedules').select(['status', 'paused_reason']).where('id', '=', id).executeTakeFirstOrThrow();
    assert.equal((await status(bySession.id)).status, 'paused');
    assert.match(String((await status(bySession.id)).paused_reason), /signed out everywhere/);
    assert.equal((await status(byOAuth.id)).status, 'paused');
    assert.match(String((await status(byOAuth.id)).paused_reason), /MCP client .* lost its authorization/);
    assert.equal((await status(byKey.id)).status, 'active');
    clock.advance(MINUTE);
    await sched.tick();
    assert.equal(ep.deliveries.length, sent + 4, 'only the key’s schedule ran');
    await removeSchedules(u);
  });

  it('a schedule made by an MCP client stops when its grant is revoked, before fetching', async () => {
    const u = await registerUser(t);
    const s = await newSchedule(u);
    const db = t.deps.database.db;
    const now = clock.now();
    const client = await oauthClient(u);
    await db
      .insertInto('oauth_tokens')
      .values({
        id: `at2-${u.id}`,
        kind: 'access',
        token_hash: `hash2-${u.id}`,
        grant_id: `grant2-${u.id}`,
        client_id: client,
        user_id: u.id,
        scope: 'mcp',
        resource: 'http://x/mcp',
        created_at: now,
        expires_at: now + 60 * MINUTE,
        revoked_at: null,
      })
      .execute();
    await db
      .updateTable('schedules')
      .set({ credential_kind: 'oauth', credential_id: `at2-${u.id}` })
      .where('id', '=', s.id)
      .execute();
    await db.updateTable('oauth_tokens').set({ revoked_at: now }).where('grant_id', '=', `grant2-${u.id}`).execute();
    const hits = ep.sourceHits;
    clock.advance(MINUTE);
    await sched.tick();
    assert.equal(ep.sourceHits, hits);
    const row = await db.selectFrom('schedules').select(['status']).where('id', '=', s.id).executeTakeFirstOrThrow();
    assert.equal(row.status, 'paused');
    await removeSchedules(u);
  });

  it("a deleted account's schedules stop", async () => {
    const u = await registerUser(t);
    const s = await newSchedule(u);
    const del = await call(t, 'DELETE', '/api/account/me', { token: u.token });
    assert.equal(del.status, 200, del.text);
    const n = ep.deliveries.length;
    clock.advance(MINUTE);
    await sched.tick();
    assert.equal(ep.deliveries.length, n);
    const rows = await t.deps.database.db.selectFrom('schedule_runs').select('id').where('schedule_id', '=', s.id).execute();
    assert.equal(rows.length, 0);
  });

  it('three scheduler instances on one database: each due run happens exactly once', async () => {
    const u = await registerUser(t);
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await newSchedule(u, { name: `x${i}` })).id);
    ep.deliveries.length = 0;
    const replicas = [createScheduler(t.deps), createScheduler(t.deps), createScheduler(t.deps)];
    for (let minute = 0; minute < 3; minute++) {
      clock.advance(MINUTE);
      await Promise.all(replicas.map((r) => r.tick()));
      await Promise.all(replicas.map((r) => r.tick()));
    }
    assert.equal(ep.deliveries.length, 9, '3 schedules × 3 minutes');
    assert.equal(new Set(ep.deliveries.map((d) => d.headers['webhook-id'])).size, 9);
    for (const id of ids) {
      const list = await runs(u, id);
      assert.equal(list.length, 3);
      assert.ok(list.every((r) => r.status === 'succeeded' && r.attempts === 1));
    }
    for (const id of ids) await call(t, 'DELETE', `/v1/schedules/${id}`, { token: u.token });
  });
});
