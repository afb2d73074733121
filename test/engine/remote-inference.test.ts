import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { loadConfig } from '../../src/config.ts';
import { gatewayEngine } from '../../src/deps.ts';
import { createEngine } from '../../src/engine/engine.ts';
import type { Engine } from '../../src/engine/types.ts';
import { buildInferenceNode } from '../../src/inference-node/app.ts';
import { FakeEngine } from '../helpers/fake-engine.ts';
import { call, createKey, createTestApp, DB_KIND, registerUser, type TestApp } from '../helpers/app.ts';

/*
 * The Open Inference Protocol v2 REST shapes, written from the published specification
 * (kserve/open-inference-protocol, specification/protocol/inference_rest.md), independently of
 * src/engine/remote/oip.ts: the node must answer what any OIP client expects.
 */
const MetadataTensor = z.object({ name: z.string(), datatype: z.string(), shape: z.array(z.number().int()) });
const ServerMetadata = z.object({ name: z.string(), version: z.string(), extensions: z.array(z.string()) });
const ModelMetadata = z.object({
  name: z.string(),
  versions: z.array(z.string()).optional(),
  platform: z.string(),
  inputs: z.array(MetadataTensor),
  outputs: z.array(MetadataTensor),
});
const ModelReady = z.object({ name: z.string(), ready: z.boolean() });
const DATATYPES = ['BOOL', 'UINT8', 'UINT16', 'UINT32', 'UINT64', 'INT8', 'INT16', 'INT32', 'INT64', 'FP16', 'FP32', 'FP64', 'BYTES'] as const;
const ResponseOutput = z.object({
  name: z.string(),
  shape: z.array(z.number().int().min(0)),
  datatype: z.enum(DATATYPES),
  parameters: z.record(z.string(), z.unknown()).optional(),
  data: z.array(z.unknown()),
});
const InferenceResponse = z.object({
  model_name: z.string(),
  model_version: z.string().optional(),
  id: z.string().optional(),
  parameters: z.record(z.string(), z.unknown()).optional(),
  outputs: z.array(ResponseOutput),
});
const ErrorObject = z.object({ error: z.string() });

const SERIES = [112, 118, 132, 129, 121, 135, 148, 148, 136, 119, 104, 118, 115, 126, 141, 135, 125, 149, 170, 170, 158, 133, 114, 140];

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

const pool = (): Engine => createEngine({ poolSize: 1, timeoutMs: 30_000, maxQueue: 16, modelsDir: '/nonexistent', threads: 1 });
const TOKEN = 'node-token-0123456789abcdef';

describe('inference node: Open Inference Protocol v2 contract', () => {
  let node: FastifyInstance;
  let base: string;
  before(async () => {
    node = await buildInferenceNode({ engine: pool(), token: TOKEN, bodyLimitBytes: 1 << 20, logLevel: false });
    await node.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(node.server.address() as { port: number }).port}`;
  });
  after(() => node.close());
  const auth = { authorization: `Bearer ${TOKEN}` };
  const get = async (path: string, headers: Record<string, string> = auth) => {
    const r = await fetch(`${base}${path}`, { headers });
    return { status: r.status, body: (await r.json()) as unknown };
  };
  const infer = async (model: string, body: unknown, headers: Record<string, string> = auth) => {
    const r = await fetch(`${base}/v2/models/${encodeURIComponent(model)}/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as unknown };
  };

  test('health, server metadata, model metadata and model ready have the protocol shapes', async () => {
    assert.deepEqual(await get('/v2/health/live', {}), { status: 200, body: { live: true } });
    assert.equal((await get('/v2/health/ready', {})).status, 200);
    ServerMetadata.parse((await get('/v2', {})).body);
    const meta = await get('/v2/models/naive');
    assert.equal(meta.status, 200);
    const m = ModelMetadata.parse(meta.body);
    assert.equal(m.name, 'naive');
    assert.deepEqual(
      m.inputs.map((t) => t.name),
      ['target', 'target_mask', 'quantile_levels', 'group_ids'],
    );
    assert.deepEqual(ModelReady.parse((await get('/v2/models/naive/ready')).body), { name: 'naive', ready: true });
  });

  test('an inference request in the protocol form (nested data, id echoed) gives the protocol response', async () => {
    const r = await infer('seasonal-naive', {
      id: 'req-42',
      parameters: { horizon: 3, num_samples: 2, season_length: 12, seed: 7 },
      inputs: [
        {
          name: 'target',
          shape: [2, 3],
          datatype: 'FP64',
          data: [
            [1, 2, 3],
            [0, 5, 6],
          ],
        },
        {
          name: 'target_mask',
          shape: [2, 3],
          datatype: 'BOOL',
          data: [
            [true, true, true],
            [false, true, true],
          ],
        },
        { name: 'quantile_levels', shape: [2], datatype: 'FP64', data: [0.1, 0.9] },
      ],
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const res = InferenceResponse.parse(r.body);
    assert.equal(res.model_name, 'seasonal-naive');
    assert.equal(res.id, 'req-42');
    const byName = new Map(res.outputs.map((o) => [o.name, o]));
    assert.deepEqual(byName.get('mean')?.shape, [2, 3]);
    assert.deepEqual(byName.get('quantiles')?.shape, [2, 2, 3]);
    assert.deepEqual(byName.get('samples')?.shape, [2, 2, 3]);
    assert.deepEqual(byName.get('info')?.shape, [2]);
    for (const o of res.outputs)
      assert.equal(
        o.data.length,
        o.shape.reduce((a, b) => a * b, 1),
        o.name,
      );
  });

  test('errors are the protocol error object with 4xx statuses, never a 500', async () => {
    const cases: Array<[string, unknown, number]> = [
      ['naive', '{"inputs": [', 400],
      ['naive', { inputs: [] }, 400],
      ['naive', { inputs: [{ name: 'target', shape: [1, 3], datatype: 'FP64', data: [1, 2] }], parameters: { horizon: 2 } }, 400],
      ['naive', { inputs: [{ name: 'target', shape: [1, 2], datatype: 'FP64', data: ['a', 2] }], parameters: { horizon: 2 } }, 400],
      ['naive', { inputs: [{ name: 'target', shape: [1, 2], datatype: 'FP64', data: [1, 2] }], parameters: { horizon: -1 } }, 400],
      ['naive', '{"inputs":[{"name":"target","shape":[1,2],"datatype":"FP64","data":[1,2]}],"parameters":{"horizon":0},"__proto__":{"x":1}}', 400],
      ['no-such-model', { inputs: [{ name: 'target', shape: [1, 2], datatype: 'FP64', data: [1, 2] }], parameters: { horizon: 2 } }, 404],
    ];
    for (const [model, body, status] of cases) {
      const r = await infer(model, body);
      assert.equal(r.status, status, `${JSON.stringify(body)} → ${JSON.stringify(r.body)}`);
      ErrorObject.parse(r.body);
    }
    assert.equal((await infer('naive', { inputs: [] }, {})).status, 401);
    assert.equal((await get('/v2/models/naive', { authorization: 'Bearer wrong-token-0000000000' })).status, 401);
  });
});

describe(`gateway with remote models (${DB_KIND})`, () => {
  let node: FastifyInstance;
  let nodeUrl: string;
  let deadUrl: string;
  before(async () => {
    node = await buildInferenceNode({ engine: pool(), token: TOKEN, bodyLimitBytes: 1 << 20, logLevel: false });
    await node.listen({ port: 0, host: '127.0.0.1' });
    nodeUrl = `http://127.0.0.1:${(node.server.address() as { port: number }).port}`;
    deadUrl = `http://127.0.0.1:${await freePort()}`;
  });
  after(() => node.close());

  async function gateway(env: Record<string, string>): Promise<TestApp> {
    const full = { INFERENCE_TOKEN: TOKEN, REMOTE_RETRIES: '1', REMOTE_HEALTH_INTERVAL_MS: '60000', ...env };
    return createTestApp({ env: full, overrides: { engine: gatewayEngine(loadConfig({ DATA_DIR: '/tmp', ...full }), pool()) } });
  }
  async function forecastWith(t: TestApp, model: string, target: (number | null)[] = SERIES) {
    const u = await registerUser(t);
    const { key } = await createKey(t, u);
    return call(t, 'POST', '/v1/forecast', {
      token: key,
      body: { model, inputs: [{ target }], parameters: { prediction_length: 6, frequency: 'MS', quantile_levels: [0.1, 0.5, 0.9], num_samples: 3 } },
    });
  }
  const nodeForecasts = async (model: string) => {
    const text = await (await fetch(`${nodeUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
    const line = text.split('\n').find((l) => l.startsWith(`tsfm_forecasts_total{model="${model}",outcome="ok"}`));
    return line ? Number(line.split(' ').at(-1)) : 0;
  };

  test('a routed model runs on the node (after a dead first node) and answers exactly what the local pool answers', async () => {
    const local = await createTestApp({ overrides: { engine: pool() } });
    const remote = await gateway({ REMOTE_MODELS: `seasonal-naive=${deadUrl}|${nodeUrl}` });
    try {
      const before = await nodeForecasts('seasonal-naive');
      const target = [...SERIES.slice(0, 10), null, ...SERIES.slice(11)];
      const a = await forecastWith(local, 'seasonal-naive', target);
      const b = await forecastWith(remote, 'seasonal-naive', target);
      assert.equal(a.status, 200, a.text);
      assert.equal(b.status, 200, b.text);
      assert.deepEqual(b.body.outputs, a.body.outputs);
      assert.equal(await nodeForecasts('seasonal-naive'), before + 1);
      const catalog = await call(remote, 'GET', '/api/models/seasonal-naive');
      assert.equal(catalog.body.available, true);
    } finally {
      await local.close();
      await remote.close();
    }
  });

  test('without a live node the model is unavailable (503 naming the node), and a fallback chain serves it', async () => {
    const down = await gateway({ REMOTE_MODELS: `auto-ets=${deadUrl}` });
    const withFallback = await gateway({ REMOTE_MODELS: `auto-ets=${deadUrl}`, MODEL_FALLBACKS: 'auto-ets>theta' });
    try {
      const m = await call(down, 'GET', '/api/models/auto-ets');
      assert.equal(m.body.available, false);
      assert.match(m.body.unavailable_reason, /no ready node/);
      const r = await forecastWith(down, 'auto-ets');
      assert.equal(r.status, 503, r.text);
      assert.equal(r.body.code, 'upstream_unavailable');
      const f = await forecastWith(withFallback, 'auto-ets');
      assert.equal(f.status, 200, f.text);
      assert.equal(f.body.model, 'auto-ets');
      assert.equal(f.body.outputs[0].metadata.model_info[0].served_by, 'theta');
      assert.equal(f.body.outputs[0].mean.length, 6);
    } finally {
      await down.close();
      await withFallback.close();
    }
  });

  test("the node's engine errors reach the caller as the gateway's own: bad series → 422 naming the input, busy → 503", async () => {
    const fake = new FakeEngine();
    const fakeNode = await buildInferenceNode({ engine: fake, token: null, bodyLimitBytes: 1 << 20, logLevel: false });
    await fakeNode.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(fakeNode.server.address() as { port: number }).port}`;
    const env = { REMOTE_MODELS: `echo-last=${url}`, REMOTE_RETRIES: '0' };
    const t = await createTestApp({ env, overrides: { engine: gatewayEngine(loadConfig({ DATA_DIR: '/tmp', ...env }), new FakeEngine()) } });
    try {
      fake.behaviour = 'ok';
      const ok = await forecastWith(t, 'echo-last', [1, 2, 3]);
      assert.equal(ok.status, 200, ok.text);
      assert.equal(fake.jobs.length, 1);
      fake.behaviour = 'bad_input';
      const bad = await forecastWith(t, 'echo-last', [1, 2, 3]);
      assert.equal(bad.status, 422, bad.text);
      assert.deepEqual(bad.body.detail[0].loc.slice(0, 3), ['body', 'inputs', 0]);
      fake.behaviour = 'busy';
      const busy = await forecastWith(t, 'echo-last', [1, 2, 3]);
      assert.equal(busy.status, 503, busy.text);
    } finally {
      await t.close();
      await fakeNode.close();
    }
  });

  test('a wrong token between gateway and node makes the model unavailable, not a caller error', async () => {
    const t = await createTestApp({
      env: { REMOTE_MODELS: `seasonal-naive=${nodeUrl}` },
      overrides: {
        engine: gatewayEngine(loadConfig({ DATA_DIR: '/tmp', REMOTE_MODELS: `seasonal-naive=${nodeUrl}`, INFERENCE_TOKEN: 'not-the-node-token-000' }), pool()),
      },
    });
    try {
      const r = await forecastWith(t, 'seasonal-naive');
      assert.equal(r.status, 503, r.text);
    } finally {
      await t.close();
    }
  });
});

describe('configuration of remote models', () => {
  test('REMOTE_MODELS and MODEL_FALLBACKS are parsed, and bad values stop start-up naming the variable', () => {
    const c = loadConfig({ REMOTE_MODELS: 'a/b=http://x:1|https://y:2, c=http://z:3', MODEL_FALLBACKS: 'a/b>c>naive' });
    assert.deepEqual(c.remote.routes, [
      { model: 'a/b', endpoints: ['http://x:1', 'https://y:2'] },
      { model: 'c', endpoints: ['http://z:3'] },
    ]);
    assert.deepEqual([...c.remote.fallbacks], [['a/b', ['c', 'naive']]]);
    for (const env of [
      { REMOTE_MODELS: 'a' },
      { REMOTE_MODELS: 'a=ftp://x' },
      { REMOTE_MODELS: 'a=http://x,a=http://y' },
      { MODEL_FALLBACKS: 'a' },
      { MODEL_FALLBACKS: 'a>a' },
    ]) {
      assert.throws(
        () => loadConfig(env),
        (e: Error) => /REMOTE_MODELS|MODEL_FALLBACKS/.test(e.message),
        JSON.stringify(env),
      );
    }
  });
});
