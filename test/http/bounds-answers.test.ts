import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ForecastJob } from '../../src/engine/types.ts';
import { runEnsemble } from '../../src/ensemble/service.ts';
import { balanceOf, booksOf, principalFor } from '../billing/helpers.ts';
import { call, createKey, DB_KIND, registerUser, type TestUser } from '../helpers/app.ts';
import { FakeEngine } from '../helpers/fake-engine.ts';
import { createListeningApp, type ListeningApp } from '../helpers/listen.ts';

type ToolResult = { isError?: boolean; structuredContent?: Record<string, any>; content: { type: string; text: string }[] };

/**
 * Issue #11, the answers of the ensemble and of MCP tools: bounded in size before any hold, and
 * serialised before the debit (an answer that cannot be written costs nothing).
 */
describe(`ensemble and MCP answers: output cap, serialised before the debit (${DB_KIND})`, () => {
  let t: ListeningApp;
  /** Set by a test: the fake engine's answers carry a value JSON cannot write. */
  let unwritable = false;
  const clients: Client[] = [];
  before(async () => {
    const engine = new FakeEngine();
    const forecast = engine.forecast.bind(engine);
    engine.forecast = async (job: ForecastJob, opts?: { tenant?: string }) => {
      const out = await forecast(job, opts);
      return unwritable ? out.map((f) => ({ ...f, info: { size: 1n } })) : out;
    };
    t = await createListeningApp({
      overrides: { engine },
      env: { FORECAST_MAX_OUTPUT_VALUES: '100000', MCP_MAX_OUTPUT_VALUES: '1000', AUTH_RATE_LIMIT_PER_MINUTE: '100000' },
    });
  });
  after(async () => {
    for (const c of clients) await c.close();
    await t.close();
  });

  async function mcp(u: TestUser): Promise<Client> {
    const { key } = await createKey(t, u, 'mcp');
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${t.baseUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
    clients.push(client);
    return client;
  }

  const target = Array.from({ length: 40 }, (_, i) => i % 7);

  test("the ensemble's whole answer (every candidate's final forecast and the blend) is capped: 413 naming the fields, before any hold", async () => {
    const u = await registerUser(t);
    const before = await balanceOf(t, u.id);
    const jobs = (t.deps.engine as FakeEngine).jobs.length;
    // One final forecast: 10,000 × 1 × (1 + 3 + 6) = 100,000 numbers, at the cap; with the blend, twice that.
    const body = { inputs: [{ target }], models: ['echo-last'], parameters: { prediction_length: 10_000, num_samples: 6 } };
    const r = await call(t, 'POST', '/v1/forecast/ensemble', { token: u.token, body });
    assert.equal(r.status, 413, r.text);
    assert.equal(r.body.code, 'request_too_large');
    for (const field of ['200000', '100000', 'prediction_length', 'num_samples', 'quantile_levels', 'models', 'ranked_results', 'ensemble_result']) {
      assert.match(r.body.error, new RegExp(field));
    }
    assert.equal(await balanceOf(t, u.id), before);
    assert.equal((await booksOf(t, u.id)).events, 0);
    assert.equal((t.deps.engine as FakeEngine).jobs.length, jobs, 'nothing ran');
    const quote = await call(t, 'POST', '/v1/forecast/quote', { token: u.token, body: { operation: 'forecastEnsemble', request: body } });
    assert.equal(quote.status, 200, quote.text);
    assert.equal(quote.body.would_refuse?.status, 413);
    // Under the cap it runs.
    const ok = await call(t, 'POST', '/v1/forecast/ensemble', { token: u.token, body: { ...body, parameters: { prediction_length: 5000, num_samples: 6 } } });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.ensemble_result.outputs[0].mean.length, 5000);
  });

  test('an ensemble whose answer cannot be written costs nothing (serialised before the debit; the hold is released)', async () => {
    const u = await registerUser(t);
    const before = await balanceOf(t, u.id);
    unwritable = true;
    try {
      const r = await call(t, 'POST', '/v1/forecast/ensemble', { token: u.token, body: { inputs: [{ target }], models: ['echo-last'] } });
      assert.equal(r.status, 500, r.text);
    } finally {
      unwritable = false;
    }
    assert.equal(await balanceOf(t, u.id), before);
    const books = await booksOf(t, u.id);
    assert.equal(books.events, 0);
    assert.equal(books.debits, 0);
    // The service's own finish step: a failure there releases the hold too.
    const principal = await principalFor(t, u.token);
    await assert.rejects(
      runEnsemble(
        t.deps,
        principal,
        { inputs: [{ target }], models: ['echo-last'], top_n: 3, scoring_metric: 'mase' } as never,
        { requestId: 'r1', source: 'api' },
        () => {
          throw new Error('cannot send');
        },
      ),
      /cannot send/,
    );
    assert.equal(await balanceOf(t, u.id), before);
  });

  test('an MCP forecast whose answer cannot be written costs nothing (serialised before the debit)', async () => {
    const u = await registerUser(t);
    const c = await mcp(u);
    const before = await balanceOf(t, u.id);
    unwritable = true;
    let r: ToolResult;
    try {
      r = (await c.callTool({ name: 'forecast', arguments: { model: 'echo-last', inputs: [{ target }] } })) as ToolResult;
    } finally {
      unwritable = false;
    }
    assert.equal(r.isError, true);
    assert.equal(await balanceOf(t, u.id), before);
    assert.equal((await booksOf(t, u.id)).events, 0);
    const ok = (await c.callTool({ name: 'forecast', arguments: { model: 'echo-last', inputs: [{ target }] } })) as ToolResult;
    assert.equal(ok.isError, undefined, ok.content[0]?.text);
    assert.equal(ok.structuredContent?.outputs[0].mean.length, 24);
    assert.ok(before > (await balanceOf(t, u.id)), 'a written answer is charged');
  });

  test('a cross-validation whose answer cannot be written costs nothing, over REST and MCP (analytics serialise before the debit)', async () => {
    const u = await registerUser(t);
    const c = await mcp(u);
    const before = await balanceOf(t, u.id);
    const body = { models: ['echo-last'], inputs: [{ target }], prediction_length: 2, n_windows: 2 };
    unwritable = true;
    let tool: ToolResult;
    try {
      const r = await call(t, 'POST', '/v1/cross-validation', { token: u.token, body });
      assert.equal(r.status, 500, r.text);
      tool = (await c.callTool({ name: 'crossValidate', arguments: body })) as ToolResult;
    } finally {
      unwritable = false;
    }
    assert.equal(tool.isError, true);
    assert.equal(await balanceOf(t, u.id), before);
    const books = await booksOf(t, u.id);
    assert.equal(books.events, 0);
    assert.equal(books.debits, 0);
    const ok = await call(t, 'POST', '/v1/cross-validation', { token: u.token, body });
    assert.equal(ok.status, 200, ok.text);
    assert.ok(before > (await balanceOf(t, u.id)), 'a written answer is charged');
  });

  test('MCP tool answers are capped at MCP_MAX_OUTPUT_VALUES (413 request_too_large before any hold); REST keeps its own cap', async () => {
    const u = await registerUser(t);
    const c = await mcp(u);
    const before = await balanceOf(t, u.id);
    const body = { model: 'echo-last', inputs: [{ target }], parameters: { prediction_length: 500 } }; // 500 × 4 = 2,000 numbers
    const r = (await c.callTool({ name: 'forecast', arguments: body })) as ToolResult;
    assert.equal(r.isError, true);
    assert.match(r.content[0]?.text ?? '', /request_too_large/);
    assert.match(r.content[0]?.text ?? '', /at most 1000/);
    assert.equal(await balanceOf(t, u.id), before);
    const rest = await call(t, 'POST', '/v1/forecast', { token: u.token, body });
    assert.equal(rest.status, 200, rest.text);
  });
});
