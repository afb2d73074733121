import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createEngine, type EngineOptions } from '../../src/engine/engine.ts';
import { MODEL_IMPLS } from '../../src/engine/registry.ts';
import { EngineError, type Engine, type ForecastJob } from '../../src/engine/types.ts';
import { missingFilesModel, sleepModel, spinModel } from './fixtures/sleep-model.ts';

const workerFile = new URL('./fixtures/test-worker.ts', import.meta.url);
const impls = [...MODEL_IMPLS, sleepModel, spinModel, missingFilesModel];
const sleepJob = (ms: number): ForecastJob => ({
  model: 'test-sleep',
  series: [[ms]],
  horizon: 1,
  quantileLevels: [0.5],
  numSamples: 0,
  seasonLength: null,
  seed: 1,
});
const isEngineError = (kind: string) => (e: unknown) => e instanceof EngineError && e.kind === kind;

/** Admission: running-time timeout, queue-wait bound, per-tenant share of the threads (issue #11). */
describe('engine admission', () => {
  let dir: string;
  const engines: Engine[] = [];
  const make = (over: Partial<EngineOptions>) => {
    const e = createEngine({ poolSize: 1, timeoutMs: 3000, maxQueue: 8, modelsDir: dir, threads: 1, workerFile, impls, ...over });
    engines.push(e);
    return e;
  };
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'engine-admission-'));
  });
  after(async () => {
    for (const e of engines) await e.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the timeout measures running time: a job that first waited for the thread still gets its whole budget', async () => {
    const engine = make({ timeoutMs: 3000, queueWaitMs: 20_000 });
    await engine.forecast(sleepJob(1)); // the thread is up
    // The second job waits ~2 s for the thread, then runs 2 s: 4 s after it was queued, under 3 s of running time.
    const first = engine.forecast(sleepJob(2000));
    const second = engine.forecast(sleepJob(2000));
    await first;
    assert.equal((await second).length, 1);
  });

  it('waiting longer than queueWaitMs for a thread is busy (503 upstream_unavailable at the API)', async () => {
    const engine = make({ timeoutMs: 10_000, queueWaitMs: 200 });
    await engine.forecast(sleepJob(1));
    const running = engine.forecast(sleepJob(1500));
    await assert.rejects(engine.forecast(sleepJob(1)), (e: unknown) => isEngineError('busy')(e) && /within 200 ms/.test((e as Error).message));
    await running;
  });

  it('one tenant runs at most tenantConcurrency jobs at once; other tenants overtake its waiting jobs', async () => {
    const engine = make({ poolSize: 2, tenantConcurrency: 1, timeoutMs: 10_000, queueWaitMs: 20_000 });
    await Promise.all([engine.forecast(sleepJob(1)), engine.forecast(sleepJob(1))]);
    const done: string[] = [];
    const a1 = engine.forecast(sleepJob(1500), { tenant: 'a' }).then(() => done.push('a1'));
    const a2 = engine.forecast(sleepJob(1), { tenant: 'a' }).then(() => done.push('a2'));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(engine.stats?.(), { running: 1, waiting: 1, runningByTenant: { a: 1 }, recycled: 0 });
    const b = engine.forecast(sleepJob(1), { tenant: 'b' }).then(() => done.push('b'));
    await Promise.all([a1, a2, b]);
    assert.deepEqual(done, ['b', 'a1', 'a2']);
  });

  it('a timed-out job keeps its slot until its thread has exited, then the slot is free', async () => {
    const engine = make({ timeoutMs: 300, queueWaitMs: 20_000, tenantConcurrency: 1 });
    await engine.forecast(sleepJob(1));
    await assert.rejects(engine.forecast(sleepJob(20_000), { tenant: 'a' }), isEngineError('timeout'));
    assert.deepEqual(engine.stats?.().runningByTenant, { a: 1 }, 'still counted while the thread is being terminated');
    for (let i = 0; i < 100 && engine.stats?.().running !== 0; i++) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(engine.stats?.(), { running: 0, waiting: 0, runningByTenant: {}, recycled: 0 });
    assert.equal((await engine.forecast(sleepJob(1), { tenant: 'a' })).length, 1);
  });

  it('a timed-out job says how much CPU time its thread used: a job that computed, not one that was starved or blocked (ADR 0039)', async () => {
    const engine = make({ timeoutMs: 400, queueWaitMs: 20_000 });
    await engine.forecast(sleepJob(1));
    const cpuOf = async (model: string) => {
      const err = await engine.forecast({ ...sleepJob(20_000), model }).then(
        () => assert.fail('not timed out'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof EngineError && err.kind === 'timeout', String(err));
      assert.match(err.message, /ms of CPU time/);
      return err.cpuMs as number;
    };
    // Blocked (the thread waits, as one starved of CPU by a loaded machine would): next to nothing.
    assert.ok((await cpuOf('test-sleep')) < 100);
    assert.ok((await cpuOf('test-spin')) > 0);
  });

  it('a caller abort while waiting leaves the queue', async () => {
    const engine = make({ timeoutMs: 10_000, queueWaitMs: 20_000 });
    await engine.forecast(sleepJob(1));
    const running = engine.forecast(sleepJob(800));
    const controller = new AbortController();
    const waiting = engine.forecast(sleepJob(1), { signal: controller.signal });
    controller.abort();
    await assert.rejects(waiting, isEngineError('failed'));
    assert.equal(engine.stats?.().waiting, 0);
    await running;
  });

  it("one tenant cannot fill the queue: past its share (tenantQueue) its jobs are refused while other tenants' are admitted", async () => {
    const engine = make({ poolSize: 1, tenantConcurrency: 1, maxQueue: 8, tenantQueue: 2, timeoutMs: 10_000, queueWaitMs: 20_000 });
    await engine.forecast(sleepJob(1));
    const a = [engine.forecast(sleepJob(600), { tenant: 'a' }), engine.forecast(sleepJob(1), { tenant: 'a' }), engine.forecast(sleepJob(1), { tenant: 'a' })];
    await new Promise((r) => setImmediate(r));
    // a runs one and has two waiting: its share. A third waiting job of a is refused at once…
    await assert.rejects(
      engine.forecast(sleepJob(1), { tenant: 'a' }),
      (e: unknown) => isEngineError('share_exceeded')(e) && /2 jobs waiting/.test((e as Error).message),
    );
    // …while b (and jobs without a tenant) still get in, with room left in the queue.
    const b = engine.forecast(sleepJob(1), { tenant: 'b' });
    assert.equal(engine.stats?.().waiting, 3);
    assert.equal((await b).length, 1);
    await Promise.all(a);
    assert.equal((await engine.forecast(sleepJob(1), { tenant: 'a' })).length, 1, 'the share is free again once its jobs ran');
  });

  it('the default share is a quarter of the queue (at least one)', async () => {
    const engine = make({ poolSize: 1, tenantConcurrency: 1, maxQueue: 4, timeoutMs: 10_000, queueWaitMs: 20_000 });
    await engine.forecast(sleepJob(1));
    const running = engine.forecast(sleepJob(500), { tenant: 'a' });
    const queued = engine.forecast(sleepJob(1), { tenant: 'a' });
    await new Promise((r) => setImmediate(r));
    await assert.rejects(engine.forecast(sleepJob(1), { tenant: 'a' }), isEngineError('share_exceeded'));
    await Promise.all([running, queued]);
  });
  const naive: ForecastJob = { model: 'naive', series: [[1, 2, 3]], horizon: 2, quantileLevels: [0.5], numSamples: 0, seasonLength: null, seed: 1 };
  const counting = () => {
    const naiveImpl = impls.find((m) => m.info.id === 'naive');
    assert.ok(naiveImpl);
    const log: string[] = [];
    const impl = {
      ...naiveImpl,
      forecast: (j: ForecastJob, env: Parameters<typeof naiveImpl.forecast>[1]) => {
        log.push(String(j.seed));
        return naiveImpl.forecast(j, env);
      },
    };
    return { impl, log };
  };

  it('inline jobs (naive, small) run in turns of the event loop, never inside the call that submits them (issue #11: a batch of 64 held the loop)', async () => {
    const { impl, log } = counting();
    const engine = make({ impls: [impl], inlineTurnMs: 0 });
    const jobs = Array.from({ length: 64 }, () => engine.forecast(naive, { tenant: 'a' }));
    assert.equal(log.length, 0, 'submitting ran nothing');
    const seen: number[] = [];
    setImmediate(() => seen.push(log.length));
    await Promise.all(jobs);
    assert.equal(log.length, 64);
    assert.deepEqual(seen, [1], 'one job per turn with inlineTurnMs 0: the loop turned between them');
  });

  it("one account's burst of inline jobs does not hold back another account's: one job per account in rotation", async () => {
    const { impl, log } = counting();
    const engine = make({ impls: [impl], inlineTurnMs: 0 });
    const burst = Array.from({ length: 20 }, (_, k) => engine.forecast({ ...naive, seed: 100 + k }, { tenant: 'a' }));
    const other = engine.forecast({ ...naive, seed: 1 }, { tenant: 'b' });
    await Promise.all([...burst, other]);
    assert.deepEqual(log.slice(0, 3), ['100', '1', '101']);
  });

  it('a worker thread whose heap grew past workerRecycleBytes is replaced after its job (memory goes back); the next job runs on a fresh one', async () => {
    const engine = make({ workerRecycleBytes: 1 });
    const job: ForecastJob = { ...naive, series: [Array.from({ length: 30_000 }, (_, i) => i % 7)], horizon: 100 };
    // The decision is taken after the answer is handed back: wait for the slot to be given back.
    const settled = async (e: Engine) => {
      for (let i = 0; i < 500 && (e.stats?.().running ?? 0) > 0; i++) await new Promise((r) => setTimeout(r, 10));
      return e.stats?.().recycled;
    };
    assert.equal((await engine.forecast(job)).length, 1);
    assert.equal(await settled(engine), 1);
    assert.equal((await engine.forecast(job)).length, 1);
    assert.equal(await settled(engine), 2);
    const keep = make({ workerRecycleBytes: 0 });
    await keep.forecast(job);
    assert.equal(await settled(keep), 0);
  });

  it('a worker thread left with a heap past workerIdleRecycleBytes is replaced once the pool has had no job for idleRecycleMs, never while a job runs', async () => {
    const engine = make({ workerRecycleBytes: 0, workerIdleRecycleBytes: 1, idleRecycleMs: 300, timeoutMs: 10_000 });
    const job: ForecastJob = { ...naive, series: [Array.from({ length: 30_000 }, (_, i) => i % 7)], horizon: 100 };
    const recycledAfter = async (ms: number) => {
      await new Promise((r) => setTimeout(r, ms));
      return engine.stats?.().recycled;
    };
    await engine.forecast(job);
    // A job keeps the pool busy: its thread is not replaced however long it runs.
    const busy = engine.forecast(sleepJob(1500));
    assert.equal(await recycledAfter(1000), 0, 'a job is running');
    await busy;
    assert.equal(await recycledAfter(50), 0, 'not before idleRecycleMs');
    let recycled = 0;
    for (let i = 0; i < 100 && recycled === 0; i++) recycled = (await recycledAfter(20)) ?? 0;
    assert.equal(recycled, 1, 'replaced once idle');
    assert.equal((await engine.forecast(job)).length, 1, 'the next job runs on a fresh thread');
    const never = make({ workerRecycleBytes: 0, workerIdleRecycleBytes: 0, idleRecycleMs: 50 });
    await never.forecast(job);
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(never.stats?.().recycled, 0, 'workerIdleRecycleBytes 0: never');
  });
});
