import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Schedule, ScheduleCreated, ScheduleList } from '../../src/schedules/schemas.ts';
import { call, createKey, createTestApp, DB_KIND, expectSchema, registerUser, type TestApp, type TestUser } from '../helpers/app.ts';
import { LOOPBACK_ENV, LocalEndpoints } from './helpers.ts';

describe(`/v1/schedules CRUD (${DB_KIND})`, () => {
  let t: TestApp;
  let u: TestUser;
  let ep: LocalEndpoints;
  const body = () => ({
    name: 'daily',
    model: 'echo-last',
    cron_expression: '0 6 * * *',
    parameters: { prediction_length: 2 },
    source_url: `${ep.base}/source.csv`,
    callback_url: `${ep.base}/hook`,
  });
  before(async () => {
    ep = await new LocalEndpoints().start();
    t = await createTestApp({ env: { ...LOOPBACK_ENV, SCHEDULES_MAX_ACTIVE: '3' } });
    u = await registerUser(t);
  });
  after(async () => {
    await t.close();
    await ep.close();
  });

  it('creates a schedule; the secret is shown once and never again', async () => {
    const r = await call(t, 'POST', '/v1/schedules', { token: u.token, body: body() });
    assert.equal(r.status, 200, r.text);
    const s = expectSchema(ScheduleCreated, r.body);
    assert.match(s.secret, /^whsec_[A-Za-z0-9+/=]{40,}$/);
    assert.equal(s.status, 'active');
    assert.match(s.next_run_at ?? '', /T06:00:00.000Z$/);
    const got = await call(t, 'GET', `/v1/schedules/${s.id}`, { token: u.token });
    assert.equal(got.status, 200);
    expectSchema(Schedule, got.body);
    assert.equal(got.body.secret, undefined);
    assert.ok(!got.text.includes(s.secret));
    const list = await call(t, 'GET', '/v1/schedules', { token: u.token });
    expectSchema(ScheduleList, list.body);
    assert.ok(!list.text.includes(s.secret));
    // Stored encrypted or as is, but never echoed; here without SCHEDULE_SECRET_KEY it is stored as is.
    const row = await t.deps.database.db.selectFrom('schedules').select('secret').where('id', '=', s.id).executeTakeFirstOrThrow();
    assert.equal(row.secret, s.secret);
    await call(t, 'DELETE', `/v1/schedules/${s.id}`, { token: u.token });
  });

  it('with SCHEDULE_SECRET_KEY the secret is stored encrypted', async () => {
    const k = await createTestApp({ env: { ...LOOPBACK_ENV, SCHEDULE_SECRET_KEY: 'a'.repeat(64) } });
    const ku = await registerUser(k);
    const r = await call(k, 'POST', '/v1/schedules', { token: ku.token, body: body() });
    assert.equal(r.status, 200, r.text);
    const row = await k.deps.database.db.selectFrom('schedules').select('secret').where('id', '=', r.body.id).executeTakeFirstOrThrow();
    assert.match(row.secret, /^enc:v1:/);
    assert.ok(!row.secret.includes(r.body.secret.slice(6)));
    await k.close();
  });

  it('validation: bad cron names the field; bad URLs; unknown model; unknown fields', async () => {
    for (const cron of ['61 * * * *', '* * * * * *', 'every day', '0 0 31 2 *']) {
      const r = await call(t, 'POST', '/v1/schedules', { token: u.token, body: { ...body(), cron_expression: cron } });
      assert.equal(r.status, 422, `${cron}: ${r.text}`);
      assert.deepEqual(r.body.detail[0].loc, ['body', 'cron_expression']);
      assert.doesNotMatch(r.body.detail[0].msg, /CronPattern/, 'croner’s class name is not part of the message');
    }
    const port0 = await call(t, 'POST', '/v1/schedules', { token: u.token, body: { ...body(), source_url: 'https://example.com:0/x.csv' } });
    assert.equal(port0.status, 422, port0.text);
    assert.match(port0.body.detail[0].msg, /port 0/);
    const priv = await call(t, 'POST', '/v1/schedules', { token: u.token, body: { ...body(), callback_url: 'https://169.254.169.254/hook' } });
    assert.equal(priv.status, 422);
    assert.deepEqual(priv.body.detail[0].loc, ['body', 'callback_url']);
    const ftp = await call(t, 'POST', '/v1/schedules', { token: u.token, body: { ...body(), source_url: 'ftp://example.com/x.csv' } });
    assert.deepEqual(ftp.body.detail[0].loc, ['body', 'source_url']);
    const model = await call(t, 'POST', '/v1/schedules', { token: u.token, body: { ...body(), model: 'nope' } });
    assert.equal(model.status, 404);
    const extra = await call(t, 'POST', '/v1/schedules', { token: u.token, body: { ...body(), cron: '* * * * *' } });
    assert.equal(extra.status, 422);
    const params = await call(t, 'POST', '/v1/schedules', { token: u.token, body: { ...body(), parameters: { prediction_length: 0 } } });
    assert.deepEqual(params.body.detail[0].loc, ['body', 'parameters', 'prediction_length']);
    assert.equal((await call(t, 'POST', '/v1/schedules', { body: body() })).status, 400);
  });

  it('at most SCHEDULES_MAX_ACTIVE active; pause frees a place, resume is refused while full', async () => {
    const v = await registerUser(t);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await call(t, 'POST', '/v1/schedules', { token: v.token, body: { ...body(), name: `s${i}` } });
      assert.equal(r.status, 200, r.text);
      ids.push(r.body.id);
    }
    const full = await call(t, 'POST', '/v1/schedules', { token: v.token, body: body() });
    assert.equal(full.status, 409);
    assert.equal(full.body.code, 'conflict');
    assert.match(full.body.error, /At most 3/);
    const paused = await call(t, 'POST', `/v1/schedules/${ids[0]}/pause`, { token: v.token });
    assert.equal(paused.status, 200, paused.text);
    assert.equal(paused.body.status, 'paused');
    assert.equal(paused.body.next_run_at, null);
    const fourth = await call(t, 'POST', '/v1/schedules', { token: v.token, body: body() });
    assert.equal(fourth.status, 200);
    assert.equal((await call(t, 'POST', `/v1/schedules/${ids[0]}/resume`, { token: v.token })).status, 409);
    await call(t, 'DELETE', `/v1/schedules/${fourth.body.id}`, { token: v.token });
    const resumed = await call(t, 'POST', `/v1/schedules/${ids[0]}/resume`, { token: v.token });
    assert.equal(resumed.status, 200);
    assert.equal(resumed.body.status, 'active');
    assert.ok(resumed.body.next_run_at);
  });

  it('concurrent creations cannot pass the active limit together', async () => {
    const w = await registerUser(t);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => call(t, 'POST', '/v1/schedules', { token: w.token, body: { ...body(), name: `c${i}` } })),
    );
    assert.equal(results.filter((r) => r.status === 200).length, 3);
    assert.equal(results.filter((r) => r.status === 409).length, 3);
  });

  it('PATCH changes fields (next run follows a new cron); DELETE removes; another account sees 404', async () => {
    const r = await call(t, 'POST', '/v1/schedules', { token: u.token, body: body() });
    const id = r.body.id;
    const p = await call(t, 'PATCH', `/v1/schedules/${id}`, { token: u.token, body: { cron_expression: '30 7 * * 1', name: 'weekly' } });
    assert.equal(p.status, 200, p.text);
    assert.equal(p.body.name, 'weekly');
    assert.match(p.body.next_run_at, /T07:30:00.000Z$/);
    assert.equal(new Date(p.body.next_run_at).getUTCDay(), 1);
    const bad = await call(t, 'PATCH', `/v1/schedules/${id}`, { token: u.token, body: { cron_expression: 'nope' } });
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.body.detail[0].loc, ['body', 'cron_expression']);
    const other = await registerUser(t);
    for (const [m, path] of [
      ['GET', ''],
      ['PATCH', ''],
      ['DELETE', ''],
      ['POST', '/pause'],
      ['GET', '/runs'],
    ] as const) {
      const x = await call(t, m, `/v1/schedules/${id}${path}`, { token: other.token, ...(m === 'PATCH' ? { body: { name: 'x' } } : {}) });
      assert.equal(x.status, 404, `${m} ${path}`);
    }
    const runs = await call(t, 'GET', `/v1/schedules/${id}/runs`, { token: u.token });
    assert.deepEqual(runs.body, { object: 'list', data: [] });
    const d = await call(t, 'DELETE', `/v1/schedules/${id}`, { token: u.token });
    assert.deepEqual(d.body, { id, object: 'schedule', deleted: true });
    assert.equal((await call(t, 'GET', `/v1/schedules/${id}`, { token: u.token })).status, 404);
  });

  it('works with an API key too', async () => {
    const key = await createKey(t, u);
    const r = await call(t, 'POST', '/v1/schedules', { token: key.key, body: body() });
    assert.equal(r.status, 200, r.text);
    const row = await t.deps.database.db
      .selectFrom('schedules')
      .select(['credential_kind', 'credential_id'])
      .where('id', '=', r.body.id)
      .executeTakeFirstOrThrow();
    assert.deepEqual({ ...row }, { credential_kind: 'api_key', credential_id: key.id });
    await call(t, 'DELETE', `/v1/schedules/${r.body.id}`, { token: key.key });
  });
});
