import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createEngine } from '../../src/engine/engine.ts';
import { modelDir, pullModel, recordedHash, StoreError } from '../../src/engine/store/index.ts';
import type { Engine, ModelImpl } from '../../src/engine/types.ts';
import { buildGraph, type GraphSpec } from '../engine/onnx-graph-builder.ts';
import { CHRONOS2_LEVELS, DECILES, T0_LEVELS, catalogModel, levelOffsets } from '../engine/onnx-helpers.ts';
import { call, createTestApp, DB_KIND, expectSchema, registerUser, routeSchema, type TestApp, type TestUser } from '../helpers/app.ts';

/**
 * The ONNX exports end to end, the way an operator gets them: small contract graphs (built in
 * the test run) are published on a local stand-in for the Hugging Face hub under the catalog's
 * exact repos and file names, pulled with the real store (which records their sha256 on first
 * use, since the catalog cannot pin them), and served by the real engine (worker pool, sha256
 * verification, availability) behind the real HTTP routes.
 */

const CHRONOS = 'sktime/chronos2-onnx';
const CHRONOS_INT8 = 'sktime/chronos2-onnx-int8';
const TOTO = 'sktime/toto2-22m-onnx';
const TINYCAST = 'sktime/tinycast-onnx';
const T0 = 'sktime/t0-alpha-onnx';

// Chronos-2 test graph: quantiles[b, h, k] = mean over b's group of nanmean(row) + 0.1 (h + 1) + off(level k)
const off = (l: number): number => 10 * (l - 0.5) + 40 * (l - 0.5) ** 3;
const chronos = (base: number, h: number, l: number): number => base + 0.1 * (h + 1) + off(l);

interface Export {
  id: string;
  graph: GraphSpec;
  levels: number[];
}

const EXPORTS: Export[] = [
  {
    id: CHRONOS,
    levels: CHRONOS2_LEVELS,
    graph: {
      contextLength: 2048,
      idInput: { name: 'group_ids' },
      horizon: 64,
      offsets: levelOffsets(CHRONOS2_LEVELS, 10, 40),
      base: 'group_nanmean',
      stepSlope: 0.1,
    },
  },
  {
    id: TOTO,
    levels: DECILES,
    graph: { contextLength: 2048, idInput: { name: 'series_ids' }, horizon: 96, offsets: levelOffsets(DECILES), base: 'group_nanmean' },
  },
  // TinyCast: last value + (h + 1), so a rollout that feeds the median back continues the line.
  { id: TINYCAST, levels: DECILES, graph: { contextLength: 2048, horizon: 48, offsets: levelOffsets(DECILES), base: 'last', stepSlope: 1 } },
  { id: T0, levels: T0_LEVELS, graph: { contextLength: 512, horizon: 64, offsets: levelOffsets(T0_LEVELS), base: 'nanmean' } },
];

/** The repo's manifest.json as the exporter writes it (schema_version 1). */
function manifest(e: Export, file: string, bytes: Uint8Array): unknown {
  const ctx = e.graph.contextLength;
  return {
    schema_version: 1,
    artifact: { filename: file, bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') },
    contract: {
      inputs: [
        { name: 'context', dtype: 'float32', shape: ['batch', ctx] },
        ...(e.graph.idInput ? [{ name: e.graph.idInput.name, dtype: 'int64', shape: ['batch'] }] : []),
      ],
      output: { name: 'quantiles', dtype: 'float32', shape: ['batch', e.graph.horizon, e.levels.length], levels: e.levels },
    },
  };
}

/** Lays out one export repo under `hubDir/<org>/<repo>/` with every file its catalog entry lists. */
function publish(hubDir: string, impl: ModelImpl, e: Export): void {
  const files = impl.files;
  assert.ok(files, `${impl.info.id} has files`);
  const dir = path.join(hubDir, files.repo);
  mkdirSync(dir, { recursive: true });
  for (const f of files.files) {
    if (f.path.endsWith('.onnx')) {
      const bytes = buildGraph(e.graph);
      writeFileSync(path.join(dir, f.path), bytes);
      writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify(manifest(e, f.path, bytes)));
    } else if (f.path !== 'manifest.json') {
      writeFileSync(path.join(dir, f.path), `${f.path} of ${files.repo} (test copy)\n`);
    }
  }
}

/** A stand-in for the hub: `/<org>/<repo>/resolve/<revision>/<file>` served from a folder. */
async function startHub(root: string): Promise<{ url: string; server: Server; requests: string[] }> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    const url = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    requests.push(url);
    const m = /^\/([^/]+\/[^/]+)\/resolve\/[^/]+\/(.+)$/.exec(url);
    const file = m ? path.resolve(root, m[1] ?? '', m[2] ?? '') : '';
    if (!m || !file.startsWith(root + path.sep) || !existsSync(file)) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Entry not found');
      return;
    }
    const body = readFileSync(file);
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': body.length }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, requests };
}

const close = (actual: unknown, expected: number, tol = 1e-4): boolean =>
  typeof actual === 'number' && Math.abs(actual - expected) <= tol * Math.max(1, Math.abs(expected));

describe(`ONNX exports through the API, pulled from a local hub (${DB_KIND})`, () => {
  const hubDir = mkdtempSync(path.join(tmpdir(), 'onnx-hub-'));
  const modelsDir = mkdtempSync(path.join(tmpdir(), 'onnx-models-'));
  let hub: Awaited<ReturnType<typeof startHub>>;
  let engine: Engine;
  let t: TestApp;
  let u: TestUser;

  before(async () => {
    for (const e of EXPORTS) publish(hubDir, catalogModel(e.id), e);
    // The int8 Chronos-2 entry carries a real pin: a test graph under its name must be refused.
    publish(hubDir, catalogModel(CHRONOS_INT8), EXPORTS[0] as Export);
    hub = await startHub(hubDir);
    engine = createEngine({ poolSize: 2, timeoutMs: 60_000, maxQueue: 64, modelsDir, threads: 1 });
    t = await createTestApp({ overrides: { engine } });
    u = await registerUser(t);
  });
  after(async () => {
    await t.close(); // closes the engine too
    await new Promise<void>((resolve) => hub.server.close(() => resolve()));
    rmSync(hubDir, { recursive: true, force: true });
    rmSync(modelsDir, { recursive: true, force: true });
  });

  const forecast = (model: string, body: Record<string, unknown>) => call(t, 'POST', '/v1/forecast', { token: u.token, body: { model, ...body } });

  test('before the pull: listed as unavailable with the pull command, and a forecast is refused', async () => {
    await engine.refresh?.();
    const list = await call(t, 'GET', '/api/models');
    assert.equal(list.status, 200);
    for (const id of [CHRONOS, CHRONOS_INT8, TOTO, TINYCAST, T0, `${TINYCAST}-int8`, `${T0}-int8`, `${TOTO}-int8`]) {
      const m = list.body.models.find((x: { id: string }) => x.id === id);
      assert.ok(m, `${id} is in the catalog`);
      assert.equal(m.available, false, id);
      assert.equal(m.pull_command, `npm run models -- pull ${id}`);
      assert.match(m.unavailable_reason, new RegExp(`npm run models -- pull ${id}`));
    }
    const r = await forecast(CHRONOS, { inputs: [{ target: [1, 2, 3] }] });
    assert.equal(r.status, 409, r.text);
    assert.equal(r.body.code, 'model_not_installed');
    assert.match(r.text, /npm run models -- pull sktime\/chronos2-onnx/);
  });

  test('the store refuses unpinned files by default; trusting on first use, it records the manifest and checks the graph against it', async () => {
    await assert.rejects(pullModel(catalogModel(CHRONOS), { modelsDir, endpoint: hub.url }), (e: unknown) => e instanceof StoreError && e.kind === 'unpinned');
    for (const e of EXPORTS) {
      const impl = catalogModel(e.id);
      const pulled = await pullModel(impl, { modelsDir, endpoint: hub.url, trustOnFirstUse: true });
      assert.deepEqual(
        pulled.map((f) => f.status),
        impl.files?.files.map(() => 'downloaded'),
        e.id,
      );
      const graph = impl.files?.files.find((f) => f.path.endsWith('.onnx'));
      assert.equal(graph?.sha256, null, `${e.id}: no pin in the catalog`);
      const dir = modelDir(modelsDir, impl.files?.repo ?? '');
      const served = readFileSync(path.join(hubDir, impl.files?.repo ?? '', 'manifest.json'));
      const rec = await recordedHash(dir, impl.files?.revision ?? '', 'manifest.json');
      assert.equal(rec?.sha256, createHash('sha256').update(served).digest('hex'), `${e.id}: manifest recorded on first use`);
      // The graph is held to the manifest's sha256, not recorded on trust.
      assert.equal(await recordedHash(dir, impl.files?.revision ?? '', graph?.path ?? ''), null);
      // pulling again is a no-op
      const again = await pullModel(impl, { modelsDir, endpoint: hub.url });
      assert.ok(again.every((f) => f.status === 'skipped'));
    }
    assert.ok(
      hub.requests.some((p) => p === `/${CHRONOS}/resolve/main/chronos2-ctx2048-h64.onnx`),
      hub.requests.join('\n'),
    );
    await assert.rejects(pullModel(catalogModel(CHRONOS_INT8), { modelsDir, endpoint: hub.url, trustOnFirstUse: true }), (e: unknown) => {
      return e instanceof StoreError && (e.kind === 'size_mismatch' || e.kind === 'hash_mismatch');
    });
    assert.equal(existsSync(path.join(modelsDir, CHRONOS_INT8, 'chronos2-ctx2048-h64-int8.onnx')), false);
  });

  test('after the pull: the four exports are available, the refused one and the unpulled ones are not', async () => {
    await engine.refresh?.();
    const list = await call(t, 'GET', '/api/models');
    expectSchema(routeSchema(t, 'GET', '/api/models'), list.body);
    const byId = new Map<string, { available: boolean; unavailable_reason: string | null; multivariate: string }>(
      list.body.models.map((m: { id: string }) => [m.id, m]),
    );
    for (const e of EXPORTS) assert.equal(byId.get(e.id)?.available, true, `${e.id}: ${byId.get(e.id)?.unavailable_reason}`);
    assert.equal(byId.get(CHRONOS_INT8)?.available, false);
    assert.equal(byId.get(`${TINYCAST}-int8`)?.available, false);
    // Chronos-2 and Toto-2 forecast the variates of one target jointly.
    assert.equal(byId.get(CHRONOS)?.multivariate, 'native');
    assert.equal(byId.get(TOTO)?.multivariate, 'native');
    assert.equal(byId.get(T0)?.multivariate, 'channel_wise');
    const one = await call(t, 'GET', `/api/models/${CHRONOS}`);
    assert.equal(one.status, 200);
    assert.equal(one.body.pull_command, null);
  });

  test('univariate with nulls: the graph sees only the observed points; quantiles by interpolation, in the asked order', async () => {
    const r = await forecast(CHRONOS, {
      inputs: [{ target: [1, null, 3, null], start: '2024-01-01T00:00:00Z' }],
      parameters: { prediction_length: 5, frequency: 'h', quantile_levels: [0.9, 0.12, 0.5, 0.97] },
    });
    assert.equal(r.status, 200, r.text);
    expectSchema(routeSchema(t, 'POST', '/v1/forecast'), r.body);
    const out = r.body.outputs[0];
    assert.equal(out.mean.length, 5);
    assert.equal(out.timestamps.length, 5);
    const lin = (q: number, a: number, b: number): number => off(a) + ((off(b) - off(a)) * (q - a)) / (b - a);
    for (let h = 0; h < 5; h++) {
      assert.ok(close(out.mean[h][0], chronos(2, h, 0.5)), `mean[${h}] = ${out.mean[h][0]}`);
      const byLevel = new Map<number, number[][]>(out.quantile_predictions.map((q: { level: number; values: number[][] }) => [q.level, q.values]));
      assert.deepEqual([...byLevel.keys()], [0.9, 0.12, 0.5, 0.97]);
      assert.ok(close(byLevel.get(0.9)?.[h]?.[0], chronos(2, h, 0.9)));
      assert.ok(close(byLevel.get(0.12)?.[h]?.[0], 2 + 0.1 * (h + 1) + lin(0.12, 0.1, 0.15)));
      assert.ok(close(byLevel.get(0.97)?.[h]?.[0], 2 + 0.1 * (h + 1) + lin(0.97, 0.95, 0.99)));
    }
    const info = out.metadata.model_info[0];
    assert.equal(info.padded, 2044);
    assert.equal(info.point, 'median');
  });

  test('multivariate: the variates of one input form one joint group, separate inputs stay independent', async () => {
    const r = await forecast(CHRONOS, {
      inputs: [
        {
          target: [
            [2, 10],
            [2, 10],
            [2, 10],
          ],
        },
        { target: [7, 7] },
      ],
      parameters: { prediction_length: 3, quantile_levels: [0.5], num_samples: 4 },
    });
    assert.equal(r.status, 200, r.text);
    const [a, b] = r.body.outputs;
    for (let h = 0; h < 3; h++) {
      // both variates of input 0 see the group mean (2 + 10) / 2; input 1 only itself
      assert.ok(close(a.mean[h][0], chronos(6, h, 0.5)), `${a.mean[h]}`);
      assert.ok(close(a.mean[h][1], chronos(6, h, 0.5)));
      assert.ok(close(b.mean[h][0], chronos(7, h, 0.5)));
    }
    assert.equal(a.samples.length, 4);
    assert.equal(a.samples[0].length, 3);
    assert.equal(a.samples[0][0].length, 2);
    // Toto-2 takes the same groups through series_ids
    const toto = await forecast(TOTO, {
      inputs: [
        {
          target: [
            [1, 5],
            [3, 7],
          ],
        },
      ],
      parameters: { prediction_length: 96 },
    });
    assert.equal(toto.status, 200, toto.text);
    assert.ok(close(toto.body.outputs[0].mean[95][0], 4) && close(toto.body.outputs[0].mean[0][1], 4));
  });

  test('levels outside the graph range and horizons past the graph are 422s', async () => {
    const tooHigh = await forecast(CHRONOS, { inputs: [{ target: [1, 2, 3] }], parameters: { quantile_levels: [0.5, 0.995] } });
    assert.equal(tooHigh.status, 422, tooHigh.text);
    assert.match(tooHigh.text, /0\.995/);
    assert.deepEqual(tooHigh.body.detail[0].loc, ['body', 'parameters', 'quantile_levels']);
    const tooLow = await forecast(T0, { inputs: [{ target: [1, 2, 3] }], parameters: { quantile_levels: [0.05, 0.5] } });
    assert.equal(tooLow.status, 422, tooLow.text);
    assert.match(tooLow.text, /between 0\.1 and 0\.9/);
    for (const [id, h] of [
      [CHRONOS, 65],
      [TOTO, 97],
      [T0, 65],
      [TINYCAST, 721],
    ] as const) {
      const r = await forecast(id, { inputs: [{ target: [1, 2, 3] }], parameters: { prediction_length: h } });
      assert.equal(r.status, 422, `${id} h=${h}: ${r.text}`);
      assert.deepEqual(r.body.detail[0].loc, ['body', 'parameters', 'prediction_length']);
    }
    const empty = await forecast(T0, { inputs: [{ target: [1, 2] }, { target: [null, 4, null] }] });
    assert.equal(empty.status, 422);
    assert.deepEqual(empty.body.detail[0].loc, ['body', 'inputs', 1, 'target']);
  });

  test('TinyCast rolls a long horizon out block by block; t0-alpha truncates to its 512-point context', async () => {
    const r = await forecast(TINYCAST, { inputs: [{ target: [3, null, 10] }], parameters: { prediction_length: 100, quantile_levels: [0.1, 0.5, 0.9] } });
    assert.equal(r.status, 200, r.text);
    const out = r.body.outputs[0];
    assert.equal(out.mean.length, 100);
    for (const s of [0, 47, 48, 95, 96, 99]) assert.ok(close(out.mean[s][0], 10 + s + 1), `step ${s}: ${out.mean[s][0]}`);
    assert.ok(close(out.quantile_predictions[0].values[99][0], 10 + 100 - 4));
    assert.equal(out.metadata.model_info[0].rollout_blocks, 3);
    assert.equal(out.metadata.model_info[0].imputed, 1);
    const long = [...Array<number>(300).fill(1000), ...Array<number>(512).fill(5)];
    const t0 = await forecast(T0, { inputs: [{ target: long }], parameters: { prediction_length: 64 } });
    assert.equal(t0.status, 200, t0.text);
    assert.ok(close(t0.body.outputs[0].mean[63][0], 5));
  });

  test('the batch and the ensemble run the exports next to the built-in models', async () => {
    const series = Array.from({ length: 200 }, (_, i) => 50 + ((i * 7) % 5));
    const b = await call(t, 'POST', '/v1/forecast/batch', {
      token: u.token,
      body: {
        requests: [
          { model: CHRONOS, inputs: [{ target: series }], parameters: { prediction_length: 12 } },
          { model: TINYCAST, inputs: [{ target: series }], parameters: { prediction_length: 60 } },
          { model: CHRONOS, inputs: [{ target: series }], parameters: { quantile_levels: [0.001] } },
          { model: 'naive', inputs: [{ target: series }] },
        ],
      },
    });
    assert.equal(b.status, 200, b.text);
    assert.deepEqual(
      b.body.data.map((d: { ok: boolean }) => d.ok),
      [true, true, false, true],
    );
    assert.equal(b.body.data[0].result.outputs[0].mean.length, 12);
    assert.equal(b.body.data[1].result.outputs[0].mean.length, 60);
    const e = await call(t, 'POST', '/v1/forecast/ensemble', {
      token: u.token,
      body: { inputs: [{ target: series }], parameters: { prediction_length: 24 }, models: [CHRONOS, T0, 'naive', 'seasonal-naive'], top_n: 2 },
    });
    assert.equal(e.status, 200, e.text);
    expectSchema(routeSchema(t, 'POST', '/v1/forecast/ensemble'), e.body);
    const evaluated = e.body.ensemble_metadata.models_evaluated;
    assert.ok(evaluated.includes(CHRONOS) && evaluated.includes(T0), JSON.stringify(e.body.ensemble_metadata));
    assert.equal(e.body.ensemble_result.outputs[0].mean.length, 24);
  });

  test("a graph changed after the pull no longer matches the manifest's sha256 and is unavailable", async () => {
    const file = path.join(modelsDir, T0, 't0-alpha-ctx512-h64.onnx');
    writeFileSync(file, buildGraph({ contextLength: 512, horizon: 64, offsets: levelOffsets(T0_LEVELS), base: 'last' }));
    await engine.refresh?.();
    const m = await call(t, 'GET', `/api/models/${T0}`);
    assert.equal(m.body.available, false);
    assert.match(m.body.unavailable_reason, /sha256/);
    assert.equal(m.body.pull_command, `npm run models -- pull ${T0}`);
    const r = await forecast(T0, { inputs: [{ target: [1, 2, 3] }] });
    assert.equal(r.status, 409);
    // pulling again replaces it with the recorded version
    const again = await pullModel(catalogModel(T0), { modelsDir, endpoint: hub.url });
    assert.equal(again.find((f) => f.path.endsWith('.onnx'))?.status, 'downloaded');
    await engine.refresh?.();
    assert.equal((await call(t, 'GET', `/api/models/${T0}`)).body.available, true);
  });
});
