import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { call, createKey, DB_KIND, registerUser, type TestUser } from '../helpers/app.ts';
import { createListeningApp, RecordingMeter, type ListeningApp } from '../helpers/listen.ts';

type ToolResult = { isError?: boolean; structuredContent?: Record<string, any>; content: { type: string; text: string }[] };

describe(`analytics operations over MCP (${DB_KIND})`, () => {
  let t: ListeningApp;
  let meter: RecordingMeter;
  let u: TestUser;
  let key: string;
  let client: Client;
  before(async () => {
    meter = new RecordingMeter();
    t = await createListeningApp({ overrides: { meter }, env: { RATE_LIMIT_FREE_PER_MINUTE: '500' } });
    u = await registerUser(t);
    key = (await createKey(t, u, 'mcp')).key;
    client = new Client({ name: 'test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${t.baseUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  });
  after(async () => {
    await client.close();
    await t.close();
  });
  const callTool = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as ToolResult;
  const remaining = async () => Number((await call(t, 'GET', '/api/account/me', { token: key })).headers['x-ratelimit-remaining']);
  const series = Array.from({ length: 40 }, (_, i) => i + (i % 4));

  test('crossValidate: one commit with source mcp, windows × models rate-limit points, numbers in the text', async () => {
    const r0 = await remaining();
    const before = meter.committed.length;
    const r = await callTool('crossValidate', { models: ['echo-last', 'echo-short'], inputs: [{ target: series }], prediction_length: 2, n_windows: 3 });
    assert.notEqual(r.isError, true, JSON.stringify(r.content));
    assert.equal(r.structuredContent?.results.length, 2);
    assert.match(r.content[0]!.text, /^Cross-validation, 3 window\(s\) of 2 steps/);
    const ev = meter.committed.slice(before);
    assert.equal(ev.length, 1);
    assert.equal(ev[0]?.source, 'mcp');
    assert.equal(ev[0]?.model, 'cross-validation');
    assert.equal(r0 - (await remaining()), 6 + 1, 'six runs plus the GET that reads the header');
    const bad = await callTool('crossValidate', { models: ['echo-last'], inputs: [{ target: [1, 2, 3] }], prediction_length: 2, n_windows: 3 });
    assert.equal(bad.isError, true);
    assert.equal(bad.structuredContent, undefined);
    assert.match(bad.content[0]!.text, /Error validation_error \(HTTP 422\)/);
  });

  test('detectAnomalies: zscore over MCP, the flagged step in the text, one commit with source mcp; a model without fits is a text error', async () => {
    const before = meter.committed.length;
    const target = series.map((v, i) => (i === 30 ? v + 100 : v));
    const r = await callTool('detectAnomalies', { inputs: [{ target }], method: 'zscore', window: 8, sensitivity: 4 });
    assert.notEqual(r.isError, true, JSON.stringify(r.content));
    assert.match(r.content[0]!.text, /inputs\[0\] step 30/);
    assert.equal(r.structuredContent?.outputs[0].anomaly[30][0], true);
    const ev = meter.committed.slice(before);
    assert.equal(ev.length, 1);
    assert.equal(ev[0]?.source, 'mcp');
    assert.equal(ev[0]?.model, 'detect-anomalies');
    const bad = await callTool('detectAnomalies', { inputs: [{ target }], model: 'echo-last' });
    assert.equal(bad.isError, true);
    assert.match(bad.content[0]!.text, /model: Model 'echo-last' has no in-sample fitted values/);
  });

  test('impute over MCP: filled values, one commit with source mcp', async () => {
    const before = meter.committed.length;
    const r = await callTool('impute', { inputs: [{ target: [1, 2, 3, null, 5, 6, 7, 8] }], model: 'echo-last' });
    assert.notEqual(r.isError, true, JSON.stringify(r.content));
    assert.match(r.content[0]!.text, /^Filled 1 value \(model echo-last\)/);
    assert.equal(r.structuredContent?.outputs[0].filled[3][0], true);
    const ev = meter.committed.slice(before);
    assert.equal(ev.length, 1);
    assert.equal(ev[0]?.source, 'mcp');
    assert.equal(ev[0]?.model, 'impute');
  });
});
