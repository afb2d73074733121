import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createEngine } from '../../src/engine/engine.ts';
import { balanceOf } from '../billing/helpers.ts';
import { call, createKey, DB_KIND, registerUser, type TestUser } from '../helpers/app.ts';
import { createListeningApp, type ListeningApp } from '../helpers/listen.ts';

/**
 * Issue #19's cost headers on the analytics operations (#22): the credits an answer says it cost, the
 * `x-credits-*` headers (REST) and `_meta` (MCP) agree with what the account was charged.
 */
const target = [5, 7, 6, 8, 7, 9, 8, 10, 9, 11, 10, 12, 11, 13, 12, 14];
const CASES = [
  {
    tool: 'crossValidate',
    path: '/v1/cross-validation',
    body: { models: ['naive', 'drift'], inputs: [{ target }], prediction_length: 2, n_windows: 2 },
    cost: 'total_cost_credits',
  },
  { tool: 'detectAnomalies', path: '/v1/detect-anomalies', body: { inputs: [{ target }], model: 'naive' }, cost: 'cost_credits' },
  { tool: 'impute', path: '/v1/impute', body: { inputs: [{ target: [1, 2, 3, null, null, 6, 7, 8] }], model: 'naive' }, cost: 'cost_credits' },
] as const;

describe(`cost headers of the analytics operations (${DB_KIND})`, () => {
  let t: ListeningApp;
  let u: TestUser;
  let client: Client;
  before(async () => {
    const engine = createEngine({ poolSize: 1, timeoutMs: 60_000, maxQueue: 64, modelsDir: '/nonexistent', threads: 1 });
    t = await createListeningApp({ overrides: { engine, backgroundJobs: false } });
    u = await registerUser(t);
    const key = (await createKey(t, u, 'mcp')).key;
    client = new Client({ name: 'test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${t.baseUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  });
  after(async () => {
    await client.close();
    await t.close();
  });

  for (const c of CASES) {
    test(`${c.path}: x-credits-charged and x-credits-remaining tell what was charged`, async () => {
      const before = await balanceOf(t, u.id);
      const r = await call(t, 'POST', c.path, { token: u.token, body: c.body });
      assert.equal(r.status, 200, r.text);
      const charged = r.body[c.cost] as number;
      assert.ok(charged >= 1, 'a priced call');
      assert.equal(Number(r.headers['x-credits-charged']), charged);
      assert.equal(Number(r.headers['x-credits-remaining']), before - charged);
      assert.equal(await balanceOf(t, u.id), before - charged);
    });

    test(`MCP ${c.tool}: _meta carries the same cost`, async () => {
      const before = await balanceOf(t, u.id);
      const res = await client.callTool({ name: c.tool, arguments: c.body });
      assert.equal(res.isError, undefined, JSON.stringify(res.content));
      const charged = (res.structuredContent as Record<string, number>)[c.cost] as number;
      assert.equal(res._meta?.['tsfm/credits_charged'], charged);
      assert.equal(await balanceOf(t, u.id), before - charged);
    });
  }
});
