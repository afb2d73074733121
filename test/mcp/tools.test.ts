import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
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
    assert.equal(r.structuredContent?.code, 'request_too_large');
    assert.equal(r.structuredContent?.status, 413);
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
