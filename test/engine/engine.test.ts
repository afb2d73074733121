import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createEngine } from '../../src/engine/engine.ts';
import { filesPresent } from '../../src/engine/files.ts';
import { BUILTIN_MODELS, MODEL_IMPLS } from '../../src/engine/registry.ts';
import { EngineError, type Engine, type ForecastJob } from '../../src/engine/types.ts';
import { missingFilesModel, sleepModel } from './fixtures/sleep-model.ts';

const workerFile = new URL('./fixtures/test-worker.ts', import.meta.url);
const impls = [...MODEL_IMPLS, sleepModel, missingFilesModel];
const series = Array.from({ length: 30 }, (_, t) => 10 + t + (t % 4));

function job(over: Partial<ForecastJob> = {}): ForecastJob {
  return { model: 'naive', series: [series], horizon: 5, quantileLevels: [0.1, 0.5, 0.9], numSamples: 2, seasonLength: null, seed: 1, ...over };
}

const sleepJob = (ms: number): ForecastJob => job({ model: 'test-sleep', series: [[ms]], numSamples: 0 });

function isEngineError(kind: string) {
  return (e: unknown): boolean => e instanceof EngineError && e.kind === kind;
}

describe('engine worker pool', () => {
  let engine: Engine;
  let modelsDir: string;
  before(() => {
    modelsDir = mkdtempSync(path.join(tmpdir(), 'engine-models-'));
    engine = createEngine({ poolSize: 1, timeoutMs: 30_000, maxQueue: 1, modelsDir, threads: 1, workerFile, impls });
  });
  after(async () => {
    await engine.close();
    rmSync(modelsDir, { recursive: true, force: true });
  });

  it('lists every model; built-ins available, models with missing files not', () => {
    const list = engine.models();
    assert.equal(list.length, impls.length);
    for (const m of list.filter((x) => x.provider === 'builtin')) assert.equal(m.available, true);
    const missing = list.find((m) => m.id === 'test/needs-files');
    assert.equal(missing?.available, false);
    assert.equal(missing?.unavailableReason, 'not downloaded: run npm run models -- pull test/needs-files');
  });

  it('runs a job in a worker and gives the same answer as in-process', async () => {
    const viaPool = await engine.forecast(job());
    const inProcess = await MODEL_IMPLS.find((m) => m.info.id === 'naive')!.forecast(job(), { modelsDir, threads: 1 });
    assert.deepEqual(viaPool, inProcess);
  });

  it('runs every built-in model in a worker thread (WASM initialised there)', async () => {
    for (const m of BUILTIN_MODELS) {
      const [fc] = await engine.forecast(job({ model: m.info.id }));
      assert.equal(fc!.mean.length, 5, m.info.id);
    }
  });

  it('rejects unknown and unavailable models, and bad input with its series index', async () => {
    await assert.rejects(engine.forecast(job({ model: 'nope' })), isEngineError('unknown_model'));
    await assert.rejects(engine.forecast(job({ model: 'test/needs-files' })), isEngineError('unavailable'));
    await assert.rejects(engine.forecast(job({ quantileLevels: [0.5, 0.1] })), isEngineError('bad_input'));
    await assert.rejects(
      engine.forecast(job({ series: [series, [NaN]] })),
      (e: unknown) => e instanceof EngineError && e.kind === 'bad_input' && e.seriesIndex === 1,
    );
  });

  it('rejects with busy when the thread is taken and the queue is full', async () => {
    await engine.forecast(job()); // the thread is up and idle
    const running = engine.forecast(sleepJob(1500));
    const queued = engine.forecast(sleepJob(1));
    await assert.rejects(engine.forecast(sleepJob(1)), isEngineError('busy'));
    await running;
    await queued;
  });

  it('aborts a job on the caller signal', async () => {
    const controller = new AbortController();
    const pending = engine.forecast(sleepJob(20_000), { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await assert.rejects(pending, isEngineError('failed'));
    // The pool recovers: the stuck thread was replaced.
    assert.equal((await engine.forecast(job()))[0]!.mean.length, 5);
  });
  it('runs a trivial model inline only when it is cheap: a long series without a season length goes to a worker', async () => {
    const long = Array.from({ length: 2048 }, (_, t) => Math.sin(t * 12.9898) * 100);
    assert.equal(engine.runsInline?.(job({ series: [series] })), true, '30 points, season detected: inline');
    assert.equal(engine.runsInline?.(job({ series: [long.slice(0, 256)] })), true, '256 points: inline');
    assert.equal(engine.runsInline?.(job({ series: [long] })), false, '2,048 points, season detected (27-50 ms): a worker');
    assert.equal(engine.runsInline?.(job({ series: [long], seasonLength: 24 })), true, '2,048 points, season given: inline');
    // Both paths answer the same forecast.
    const inWorker = (await engine.forecast(job({ series: [long], numSamples: 0 }))) as { mean: number[] }[];
    assert.equal(inWorker[0]?.mean.length, 5);
  });
});

describe('engine timeout', () => {
  it('rejects a job that runs past timeoutMs with timeout, and keeps serving', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'engine-models-'));
    const engine = createEngine({ poolSize: 1, timeoutMs: 3000, maxQueue: 4, modelsDir: dir, threads: 1, workerFile, impls });
    try {
      await assert.rejects(engine.forecast(sleepJob(20_000)), isEngineError('timeout'));
      assert.equal((await engine.forecast(job()))[0]!.mean.length, 5);
    } finally {
      await engine.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('filesPresent', () => {
  it('checks every file under <modelsDir>/<org>/<repo>/', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'engine-files-'));
    try {
      assert.equal(filesPresent(missingFilesModel, dir), false);
      mkdirSync(path.join(dir, 'test-org', 'absent-model'), { recursive: true });
      writeFileSync(path.join(dir, 'test-org', 'absent-model', 'model.onnx'), 'x');
      assert.equal(filesPresent(missingFilesModel, dir), true);
      assert.equal(filesPresent(MODEL_IMPLS[0]!, dir), true);
      const escaping = { ...missingFilesModel, files: { ...missingFilesModel.files!, files: [{ path: '../../etc/passwd', sha256: null }] } };
      assert.equal(filesPresent(escaping, dir), false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
