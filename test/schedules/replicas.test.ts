import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { openDatabase } from '../../src/db/index.ts';
import { createDeps } from '../../src/deps.ts';
import { createScheduler } from '../../src/schedules/runner.ts';
import { call, createTestApp, DB_KIND, registerUser, type TestApp } from '../helpers/app.ts';
import { FakeEngine } from '../helpers/fake-engine.ts';
import { LOOPBACK_ENV, LocalEndpoints, ManualClock } from './helpers.ts';

const REPLICA = fileURLToPath(new URL('./replica.ts', import.meta.url));

describe(`scheduler replicas on one database (${DB_KIND})`, () => {
  let t: TestApp;
  let ep: LocalEndpoints;
  const clock = new ManualClock();
  before(async () => {
    ep = await new LocalEndpoints().start();
    t = await createTestApp({ env: { ...LOOPBACK_ENV, SCHEDULE_LEASE_MS: '2000' }, overrides: { clock } });
  });
  after(async () => {
    await t.close();
    await ep.close();
  });

  const create = async (token: string, name: string) => {
    const r = await call(t, 'POST', '/v1/schedules', {
      token,
      body: {
        name,
        model: 'echo-last',
        cron_expression: name === 'crash' ? '0 0 1 1 *' : '* * * * *',
        source_url: `${ep.base}/source.csv`,
        callback_url: `${ep.base}/hook`,
      },
    });
    assert.equal(r.status, 200, r.text);
    return r.body.id as string;
  };

  it('three replicas, each with its own connection (pool), run each due run exactly once', async () => {
    const u = await registerUser(t);
    const ids = [await create(u.token, 'a'), await create(u.token, 'b'), await create(u.token, 'c'), await create(u.token, 'd')];
    const replicas = await Promise.all(
      [0, 1, 2].map(async () => {
        const database = await openDatabase(t.databaseTarget);
        const deps = await createDeps(t.deps.config, { database, engine: new FakeEngine(), logger: false, backgroundJobs: false, clock });
        return { deps, scheduler: createScheduler(deps) };
      }),
    );
    ep.deliveries.length = 0;
    for (let minute = 0; minute < 3; minute++) {
      clock.advance(60_000);
      await Promise.all(replicas.flatMap((r) => [r.scheduler.tick(), r.scheduler.tick()]));
    }
    assert.equal(ep.deliveries.length, 12, '4 schedules × 3 minutes');
    assert.equal(new Set(ep.deliveries.map((d) => d.headers['webhook-id'])).size, 12);
    const runs = await t.deps.database.db.selectFrom('schedule_runs').select(['status', 'attempts']).where('schedule_id', 'in', ids).execute();
    assert.equal(runs.length, 12);
    assert.ok(runs.every((r) => r.status === 'succeeded' && Number(r.attempts) === 1));
    const events = await t.deps.database.db.selectFrom('usage_events').select('id').where('user_id', '=', u.id).execute();
    assert.equal(events.length, 12, 'each run charged once');
    for (const r of replicas) await r.deps.close();
  });

  it('kill -9 mid-run: another replica takes the run over after the lease and delivers it once more with the same webhook-id', async () => {
    const u = await registerUser(t);
    const id = await create(u.token, 'crash');
    // Due now, for the replica's real clock.
    await t.deps.database.db
      .updateTable('schedules')
      .set({ next_run_at: Date.now() - 1 })
      .where('id', '=', id)
      .execute();
    ep.deliveries.length = 0;
    ep.hold = true;
    const child = spawn(process.execPath, [REPLICA, JSON.stringify(t.databaseTarget), t.dataDir], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c) => {
      stderr += String(c);
    });
    const delivered = new Promise<void>((resolve) => {
      ep.onDelivery = resolve;
    });
    const timeout = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await Promise.race([delivered, once(child, 'exit')]);
    clearTimeout(timeout);
    assert.equal(ep.deliveries.length, 1, `the replica delivered before dying (stderr: ${stderr})`);
    child.kill('SIGKILL');
    await once(child, 'exit');
    ep.hold = false;
    ep.onDelivery = null;
    let [run] = await t.deps.database.db.selectFrom('schedule_runs').selectAll().where('schedule_id', '=', id).execute();
    assert.equal(run?.status, 'running');
    assert.equal(Number(run?.attempts), 1);
    assert.ok(run?.payload, 'the forecast was stored before the delivery');

    const survivor = createScheduler(t.deps);
    clock.t = Date.now();
    await survivor.tick();
    assert.equal(ep.deliveries.length, 1, 'not before the lease has expired');
    clock.t = Date.now() + 2500;
    await survivor.tick();
    assert.equal(ep.deliveries.length, 2);
    assert.equal(ep.deliveries[1]!.headers['webhook-id'], ep.deliveries[0]!.headers['webhook-id']);
    assert.equal(ep.deliveries[1]!.body, ep.deliveries[0]!.body);
    [run] = await t.deps.database.db.selectFrom('schedule_runs').selectAll().where('schedule_id', '=', id).execute();
    assert.equal(run?.status, 'succeeded');
    assert.equal(Number(run?.attempts), 2);
    const events = await t.deps.database.db.selectFrom('usage_events').select('id').where('user_id', '=', u.id).execute();
    assert.equal(events.length, 1, 'the forecast was charged once');
    await survivor.tick();
    assert.equal(ep.deliveries.length, 2);
  });
});

describe(`a run's lease and charge (${DB_KIND})`, () => {
  let t: TestApp;
  let ep: LocalEndpoints;
  const clock = new ManualClock();
  before(async () => {
    ep = await new LocalEndpoints().start();
    t = await createTestApp({ env: { ...LOOPBACK_ENV, SCHEDULE_LEASE_MS: '2000' }, overrides: { clock } });
  });
  after(async () => {
    await t.close();
    await ep.close();
  });
  const dueSchedule = async () => {
    const u = await registerUser(t);
    const r = await call(t, 'POST', '/v1/schedules', {
      token: u.token,
      body: { name: 'yearly', model: 'echo-last', cron_expression: '0 0 1 1 *', source_url: `${ep.base}/source.csv`, callback_url: `${ep.base}/hook` },
    });
    assert.equal(r.status, 200, r.text);
    await t.deps.database.db
      .updateTable('schedules')
      .set({ next_run_at: clock.now() - 1 })
      .where('id', '=', r.body.id)
      .execute();
    return { u, id: r.body.id as string };
  };
  const runsOf = (id: string) => t.deps.database.db.selectFrom('schedule_runs').selectAll().where('schedule_id', '=', id).execute();
  const eventsOf = (userId: string) => t.deps.database.db.selectFrom('usage_events').select('id').where('user_id', '=', userId).execute();

  it('a replica still working on a run renews its lease: a slow run is not taken over', async () => {
    const { u, id } = await dueSchedule();
    ep.deliveries.length = 0;
    const engine = new FakeEngine();
    engine.delayMs = 3000;
    const database = await openDatabase(t.databaseTarget);
    const slowDeps = await createDeps(t.deps.config, { database, engine, logger: false, backgroundJobs: false, clock });
    const slow = createScheduler(slowDeps);
    const working = slow.tick();
    while ((await runsOf(id))[0]?.status !== 'running') await new Promise((r) => setTimeout(r, 20));
    // Past the lease as first granted; the heartbeat (every lease/3) renews it from the moved clock.
    clock.advance(2500);
    await new Promise((r) => setTimeout(r, 1000));
    const other = createScheduler(t.deps);
    await other.tick();
    assert.equal(ep.deliveries.length, 0, 'the other replica did not take the run over');
    await working;
    assert.equal(ep.deliveries.length, 1);
    const [run] = await runsOf(id);
    assert.equal(run?.status, 'succeeded');
    assert.equal(Number(run?.attempts), 1);
    assert.equal((await eventsOf(u.id)).length, 1);
    await slowDeps.close();
  });

  it('a replica that died after the debit but before storing the forecast: the run is redone, delivered, not charged again', async () => {
    const { u, id } = await dueSchedule();
    ep.deliveries.length = 0;
    await createScheduler(t.deps).tick();
    assert.equal(ep.deliveries.length, 1);
    assert.equal((await eventsOf(u.id)).length, 1);
    // The state a kill -9 between the commit of the charge and the payload's write leaves behind.
    const [done] = await runsOf(id);
    await t.deps.database.db
      .updateTable('schedule_runs')
      .set({ status: 'running', lease_owner: 'sched_dead', lease_until: clock.now() - 1, payload: null, finished_at: null, response_status: null })
      .where('id', '=', done!.id)
      .execute();
    await createScheduler(t.deps).tick();
    assert.equal(ep.deliveries.length, 2);
    assert.equal(ep.deliveries[1]!.headers['webhook-id'], ep.deliveries[0]!.headers['webhook-id']);
    const [run] = await runsOf(id);
    assert.equal(run?.status, 'succeeded');
    assert.equal(Number(run?.attempts), 2);
    assert.equal((await eventsOf(u.id)).length, 1, 'charged once');
  });
});

describe(`the app's own scheduler loop (SCHEDULER=on, ${DB_KIND})`, () => {
  it('starts with the app and stops with it', async () => {
    const ep = await new LocalEndpoints().start();
    const t = await createTestApp({ env: { ...LOOPBACK_ENV, SCHEDULER: 'on', SCHEDULER_INTERVAL_MS: '50' } });
    try {
      const u = await registerUser(t);
      const r = await call(t, 'POST', '/v1/schedules', {
        token: u.token,
        body: { name: 'loop', model: 'echo-last', cron_expression: '0 0 1 1 *', source_url: `${ep.base}/source.csv`, callback_url: `${ep.base}/hook` },
      });
      const delivered = new Promise<void>((resolve) => {
        ep.onDelivery = resolve;
      });
      await t.deps.database.db
        .updateTable('schedules')
        .set({ next_run_at: Date.now() - 1 })
        .where('id', '=', r.body.id)
        .execute();
      await delivered;
      assert.equal(ep.deliveries.length, 1);
    } finally {
      await t.close();
      await ep.close();
    }
  });
});
