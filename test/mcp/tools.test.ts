import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { operations } from '../../src/operations.ts';
import { call, createKey, DB_KIND, registerUser, type TestUser } from '../helpers/app.ts';
import { createListeningApp, RecordingMeter, type ListeningApp } from '../helpers/listen.ts';

const ONE = { model: 'echo-last', inputs: [{ target: [1, 2, 3] }], parameters: { prediction_length: 1 } };

type ToolResult = { isError?: boolean; structuredContent?: Record<string, any>; content: unknown };

describe(`MCP tools are the declared operations (${DB_KIND})`, () => {
  let t: ListeningApp;
  let meter: RecordingMeter;
  let u: TestUser;
  let key: string;
  const clients: Client[] = [];
  before(async () => {
    meter = new RecordingMeter();
    t = await createListeningApp({ overrides: { meter }, env: { RATE_LIMIT_FREE_PER_MINUTE: '500' } });
    u = await registerUser(t);
    key = (await createKey(t, u, 'mcp')).key;
  });
  after(async () => {
    for (const c of clients) await c.close();
    await t.close();
  });

  async function connect(headers: Record<string, string> = {}): Promise<Client> {
    const client = new Client({ name: 'test', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${t.baseUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}`, ...headers } } }),
    );
    clients.push(client);
    return client;
  }
  const callTool = async (c: Client, name: string, args: Record<string, unknown>) => (await c.callTool({ name, arguments: args })) as ToolResult;
  const remaining = async () => Number((await call(t, 'GET', '/api/account/me', { token: key })).headers['x-ratelimit-remaining']);

  test('every declared operation is a REST route (its operation id) and an MCP tool (same name)', async () => {
    const c = await connect();
    const tools = (await c.listTools()).tools.map((x) => x.name).sort();
    assert.deepEqual(tools, operations.map((op) => op.id).sort());
    for (const op of operations) {
      const schema = t.app.routeSchemas.get(`${op.method} ${op.path}`) as { operationId?: string } | undefined;
      assert.equal(schema?.operationId, op.id, `${op.method} ${op.path}`);
    }
  });

  test('an MCP forecastBatch of n items costs n rate-limit points, like REST; a single call costs 1', async () => {
    const c = await connect();
    const r0 = await remaining();
    const r = await callTool(c, 'forecastBatch', { requests: Array.from({ length: 10 }, () => ONE) });
    assert.notEqual(r.isError, true, JSON.stringify(r.content));
    const r1 = await remaining();
    assert.equal(r0 - r1, 10 + 1, 'ten items plus the GET that reads the header');
    await callTool(c, 'listModels', {});
    assert.equal(r1 - (await remaining()), 1 + 1);
    // REST counts the same batch the same way.
    const rest = await call(t, 'POST', '/v1/forecast/batch', { token: key, body: { requests: Array.from({ length: 10 }, () => ONE) } });
    assert.equal(rest.status, 200, rest.text);
    const r2 = Number(rest.headers['x-ratelimit-remaining']);
    assert.equal((await remaining()) + 1, r2);
  });

  test('the batch limit is the service’s: an MCP batch over it is request_too_large (413)', async () => {
    const c = await connect();
    const r = await callTool(c, 'forecastBatch', { requests: Array.from({ length: 65 }, () => ONE) });
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent, undefined, 'errors are text only');
    assert.match(JSON.stringify(r.content), /Error request_too_large \(HTTP 413\)/);
  });

  test('an MCP request body past MCP_BODY_LIMIT_BYTES (2 MiB) is a JSON-RPC 413, before any tool runs; the SDK client sees the error', async () => {
    const big = Array.from({ length: 100_000 }, (_, i) => i % 997);
    const inputs = Array.from({ length: 7 }, () => ({ target: big }));
    const body = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'forecast', arguments: { ...ONE, inputs } } };
    assert.ok(JSON.stringify(body).length > 2 * 1024 * 1024);
    const r = await call(t, 'POST', '/mcp', { token: key, body, headers: { accept: 'application/json, text/event-stream' } });
    assert.equal(r.status, 413, r.text);
    assert.equal(r.body.error.code, -32000);
    assert.match(r.body.error.message, /too large: at most 2097152 bytes over MCP \(MCP_BODY_LIMIT_BYTES\)/);
    const c = await connect();
    await assert.rejects(callTool(c, 'forecast', { ...ONE, inputs }), /413|too large/i);
    // Under the limit the same tool answers.
    const ok = await callTool(c, 'forecast', { ...ONE, inputs: [{ target: big }] });
    assert.equal(ok.isError, undefined, JSON.stringify(ok.content).slice(0, 300));
  });

  test('MCP ensembles are recorded with source mcp', async () => {
    const c = await connect();
    const before = meter.committed.length;
    const r = await callTool(c, 'forecastEnsemble', {
      inputs: [{ target: [1, 2, 3, 4, 5, 6, 7, 8] }],
      models: ['echo-last', 'echo-short'],
      parameters: { prediction_length: 2 },
    });
    assert.notEqual(r.isError, true, JSON.stringify(r.content));
    const ev = meter.committed.slice(before);
    assert.equal(ev.length, 1);
    assert.equal(ev[0]?.model, 'ensemble');
    assert.equal(ev[0]?.source, 'mcp');
  });

  test('each MCP call has its own usage request id, under the HTTP request id, even when the client repeats x-request-id', async () => {
    const a = await connect({ 'x-request-id': 'req-repeated' });
    const b = await connect({ 'x-request-id': 'req-repeated' });
    const before = meter.committed.length;
    for (const c of [a, b, a]) assert.notEqual((await callTool(c, 'forecast', ONE)).isError, true);
    const batch = await callTool(a, 'forecastBatch', { requests: [ONE, ONE] });
    assert.notEqual(batch.isError, true);
    const ids = meter.committed.slice(before).map((e) => e.requestId);
    assert.equal(ids.length, 5);
    assert.equal(new Set(ids).size, 5, ids.join(' '));
    for (const id of ids) assert.ok(id.startsWith('req-repeated:'), id);
    // Batch items sit under their call's id.
    const items = ids.slice(3);
    assert.equal(items[0]?.replace(/:0$/, ''), items[1]?.replace(/:1$/, ''));
  });

  const rpc = (body: unknown, token: string | null = key) =>
    call(t, 'POST', '/mcp', { ...(token ? { token } : {}), body, headers: { accept: 'application/json, text/event-stream' } });

  test('a JSON-RPC batch is refused (400, -32600) before any tool runs: one HTTP request cannot multiply the output cap', async () => {
    const msg = (id: number) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'forecast', arguments: ONE } });
    const before = meter.committed.length;
    const r = await rpc([msg(1), msg(2)]);
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.error.code, -32600);
    assert.match(r.body.error.message, /batches are not supported/);
    assert.equal(meter.committed.length, before, 'nothing ran, nothing charged');
  });

  test('a NUL in tool arguments is that tool’s error result with the field; without a credential it is still 401 first', async () => {
    const args = { model: 'echo-last', inputs: [{ target: [1, 2, 3], item_id: 'a\u0000b' }], parameters: { prediction_length: 1 } };
    const body = { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'forecast', arguments: args } };
    const r = await rpc(body);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.id, 9);
    assert.equal(r.body.result.isError, true);
    assert.match(r.body.result.content[0].text, /^Error validation_error \(HTTP 422\): [\s\S]*\n- inputs\.0\.item_id: /);
    const anon = await rpc(body, null);
    assert.equal(anon.status, 401);
    assert.match(String(anon.headers['www-authenticate']), /resource_metadata=/);
    assert.equal(anon.body.code, 'missing_credential');
    assert.equal(typeof anon.body.request_id, 'string', 'every error carries its request id');
    // Elsewhere in the message: a JSON-RPC Invalid Request.
    const m = await rpc({ jsonrpc: '2.0', id: 'x\u0000', method: 'tools/list' });
    assert.equal(m.status, 400);
    assert.equal(m.body.error.code, -32600);
  });

  test('a tools/call with an unknown tool, no params or non-object arguments is JSON-RPC -32602, not an internal error', async () => {
    const cases: [unknown, RegExp][] = [
      [{ name: 'nope', arguments: {} }, /Unknown tool 'nope'/],
      [undefined, /takes params \{name, arguments\}/],
      [{ name: 'forecast', arguments: [1, 2] }, /arguments must be an object/],
      [{ name: 'forecast', arguments: 'x' }, /arguments must be an object/],
      [{ arguments: {} }, /params\.name/],
    ];
    for (const [params, message] of cases) {
      const r = await rpc({ jsonrpc: '2.0', id: 3, method: 'tools/call', ...(params === undefined ? {} : { params }) });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.error?.code, -32602, r.text);
      assert.match(r.body.error.message, message);
    }
    // The SDK client sees the protocol error.
    const c = await connect();
    await assert.rejects(c.callTool({ name: 'nope', arguments: {} }), /-32602|Unknown tool/);
  });

  test('/mcp takes POST only: GET and DELETE are 405 Allow POST, and so is PUT (which does not offer them)', async () => {
    for (const method of ['GET', 'DELETE', 'PUT'] as const) {
      const r = await call(t, method, '/mcp', { token: key });
      assert.equal(r.status, 405, method);
      assert.equal(r.headers.allow, 'POST', method);
    }
  });

  test('MCP errors name tool-argument paths (no body prefix); REST keeps body', async () => {
    const c = await connect();
    const bad = { model: 'echo-last', parameters: { prediction_length: 1 } };
    const r = await callTool(c, 'forecastBatch', { requests: [ONE, bad] });
    assert.notEqual(r.isError, true, JSON.stringify(r.content));
    const item = r.structuredContent?.data[1];
    assert.equal(item.ok, false);
    assert.equal(item.error.code, 'validation_error');
    assert.deepEqual(item.error.detail[0].loc, ['inputs']);
    const rest = await call(t, 'POST', '/v1/forecast/batch', { token: key, body: { requests: [ONE, bad] } });
    assert.deepEqual(rest.body.data[1].error.detail[0].loc, ['body', 'inputs']);
  });
});

describe(`what a real MCP client sees (${DB_KIND})`, () => {
  let t: ListeningApp;
  let key: string;
  let client: Client;
  before(async () => {
    t = await createListeningApp({ env: { RATE_LIMIT_FREE_PER_MINUTE: '500' } });
    const u = await registerUser(t);
    key = (await createKey(t, u, 'mcp')).key;
    client = new Client({ name: 'host', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${t.baseUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  });
  after(async () => {
    await client.close();
    await t.close();
  });
  const textOf = (r: unknown) => ((r as { content: { type: string; text: string }[] }).content[0]?.text ?? '') as string;

  test('after listTools (which makes the SDK client check results against output schemas), errors still show their message and field', async () => {
    await client.listTools();
    const unknown = await client.callTool({ name: 'forecast', arguments: { model: 'autoets', inputs: [{ target: [1, 2, 3] }] } });
    assert.equal(unknown.isError, true);
    assert.equal(unknown.structuredContent, undefined);
    assert.match(textOf(unknown), /^Error model_not_found \(HTTP 404\): /);
    const tooShort = await client.callTool({ name: 'forecast', arguments: { model: 'echo-short', inputs: [{ target: [1] }] } });
    assert.equal(tooShort.isError, true);
    assert.match(textOf(tooShort), /^Error validation_error \(HTTP 422\): /);
    assert.match(textOf(tooShort), /\n- inputs\.0(\.target)?: /);
    const ok = await client.callTool({ name: 'forecast', arguments: { ...ONE, parameters: { prediction_length: 2, quantile_levels: [0.1, 0.9] } } });
    assert.notEqual(ok.isError, true, textOf(ok));
    const json = JSON.parse(textOf(ok).split('\n').slice(1).join('\n'));
    assert.deepEqual(json.outputs[0].mean, [[3], [3]]);
    assert.equal(json.outputs[0].quantile_predictions.length, 2);
  });

  test('initialize gives instructions and no listChanged; tools/list is small, described and typed', async () => {
    assert.match(client.getInstructions() ?? '', /listModels/);
    assert.equal(client.getServerCapabilities()?.tools?.listChanged, false);
    const { tools } = await client.listTools();
    const size = JSON.stringify(tools).length;
    // 1.6 KB: a null inside a series (a missing value) is advertised, so hosts can send one.
    assert.ok(size <= 1600 * tools.length, `tools/list is ${size} bytes for ${tools.length} tools (at most 1.6 KB each on average)`);
    const forecast = tools.find((x) => x.name === 'forecast')!;
    const props = forecast.inputSchema.properties as Record<string, { description?: string }>;
    assert.match(props.model?.description ?? '', /listModels/);
    assert.match(forecast.description ?? '', /Example arguments: \{/);
    const params = (forecast.inputSchema as { definitions?: Record<string, { properties: Record<string, { description?: string }> }> }).definitions
      ?.ForecastParameters;
    assert.match(params?.properties.frequency?.description ?? '', /MS/);
    // Every advertised input property of every tool is described.
    const undescribed: string[] = [];
    const walk = (tool: string, node: unknown, path: string) => {
      if (!node || typeof node !== 'object') return;
      const n = node as { properties?: Record<string, { description?: string }>; definitions?: Record<string, unknown> };
      for (const [k, v] of Object.entries(n.properties ?? {})) {
        if (!v.description) undescribed.push(`${tool}: ${path}${k}`);
        walk(tool, v, `${path}${k}.`);
      }
      for (const [k, v] of Object.entries(n.definitions ?? {})) walk(tool, v, `${k}.`);
    };
    for (const tl of tools) walk(tl.name, tl.inputSchema, '');
    assert.deepEqual(undescribed, []);
    // Batch items are typed in the listing.
    const batch = tools.find((x) => x.name === 'forecastBatch')!;
    const items = (batch.inputSchema.properties as { requests: { items: Record<string, unknown> } }).requests.items;
    assert.ok(Object.keys(items).length > 0, JSON.stringify(items));
    // Every tool's example in its description passes the schema it advertises (the SDK's own
    // validator, as a host would check it), and a series may hold nulls (missing values).
    const validator = new AjvJsonSchemaValidator();
    for (const op of operations) {
      const listed = tools.find((x) => x.name === op.id)!;
      const check = validator.getValidator(listed.inputSchema as never);
      if (op.mcpExample) assert.equal(check(JSON.parse(op.mcpExample)).valid, true, `${op.id}: ${check(JSON.parse(op.mcpExample)).errorMessage}`);
    }
    const withNull = { inputs: [{ target: [1, null, 3] }], parameters: { prediction_length: 1 } };
    for (const name of ['forecast', 'impute', 'detectAnomalies']) {
      const check = validator.getValidator(tools.find((x) => x.name === name)!.inputSchema as never);
      const r = check(name === 'forecast' ? { model: 'naive', ...withNull } : withNull);
      assert.equal(r.valid, true, `${name}: ${r.errorMessage}`);
    }
    // Annotations follow the declarations: hosts may call read-only tools without asking.
    const ann = (name: string) => tools.find((x) => x.name === name)!.annotations;
    for (const name of ['createSchedule', 'updateSchedule', 'pauseSchedule', 'resumeSchedule', 'deleteSchedule', 'forecast', 'impute']) {
      assert.equal(ann(name)?.readOnlyHint, false, name);
    }
    assert.equal(ann('deleteSchedule')?.destructiveHint, true);
    assert.equal(ann('pauseSchedule')?.destructiveHint, false);
    for (const name of ['listModels', 'getSchedule', 'quoteForecast', 'validateCredential', 'ingestSeries']) assert.equal(ann(name)?.readOnlyHint, true, name);
    for (const name of ['ingestSeries', 'createSchedule', 'updateSchedule']) assert.equal(ann(name)?.openWorldHint, true, name);
    for (const op of operations) {
      if (op.method === 'GET') assert.equal(ann(op.id)?.readOnlyHint, true, op.id);
      if (op.spendsCredits || (op.method !== 'GET' && !op.readOnly)) assert.equal(ann(op.id)?.readOnlyHint, false, op.id);
    }
    // listModels takes a real boolean.
    const models = await client.callTool({ name: 'listModels', arguments: { available: true } });
    assert.notEqual(models.isError, true, textOf(models));
    assert.ok((models.structuredContent as { models: { available: boolean }[] }).models.every((m) => m.available));
  });
});
