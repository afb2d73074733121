import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createKey, DB_KIND, registerUser } from '../helpers/app.ts';
import { createListeningApp, type ListeningApp } from '../helpers/listen.ts';
import { LOOPBACK_ENV, LocalEndpoints } from './helpers.ts';

type ToolResult = { isError?: boolean; structuredContent?: Record<string, any>; content: { type: string; text: string }[] };

describe(`schedules and ingest over MCP (${DB_KIND})`, () => {
  let t: ListeningApp;
  let ep: LocalEndpoints;
  let client: Client;
  before(async () => {
    ep = await new LocalEndpoints().start();
    t = await createListeningApp({ env: LOOPBACK_ENV });
    const u = await registerUser(t);
    const key = (await createKey(t, u, 'mcp')).key;
    client = new Client({ name: 'test', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${t.baseUrl}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  });
  after(async () => {
    await client.close();
    await t.close();
    await ep.close();
  });
  const callTool = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as ToolResult;

  it('ingestSeries, createSchedule, pauseSchedule, listScheduleRuns, deleteSchedule are tools', async () => {
    const ing = await callTool('ingestSeries', { text: 'ds,y\n2024-01-01,1\n2024-01-02,2\n' });
    assert.notEqual(ing.isError, true, ing.content[0]?.text);
    assert.match(ing.content[0]?.text ?? '', /^1 series from 2 CSV rows/);
    const created = await callTool('createSchedule', {
      name: 'mcp',
      model: 'echo-last',
      cron_expression: '0 * * * *',
      source_url: `${ep.base}/source.csv`,
      callback_url: `${ep.base}/hook`,
    });
    assert.notEqual(created.isError, true, created.content[0]?.text);
    const id = created.structuredContent?.id as string;
    assert.match(created.content[0]?.text ?? '', /Webhook secret \(shown once\): whsec_/);
    const paused = await callTool('pauseSchedule', { id });
    assert.equal(paused.structuredContent?.status, 'paused');
    const runs = await callTool('listScheduleRuns', { id });
    assert.match(runs.content[0]?.text ?? '', /^No runs yet/);
    const gone = await callTool('deleteSchedule', { id });
    assert.equal(gone.structuredContent?.deleted, true);
  });

  it('errors are text only: a bad cron names the field; an unknown id is 404', async () => {
    const bad = await callTool('createSchedule', {
      name: 'x',
      model: 'echo-last',
      cron_expression: '61 * * * *',
      source_url: `${ep.base}/source.csv`,
      callback_url: `${ep.base}/hook`,
    });
    assert.equal(bad.isError, true);
    assert.equal(bad.structuredContent, undefined);
    assert.match(bad.content[0]?.text ?? '', /^Error validation_error \(HTTP 422\)/);
    assert.match(bad.content[0]?.text ?? '', /- cron_expression: /);
    const missing = await callTool('getSchedule', { id: 'sch_nope' });
    assert.match(missing.content[0]?.text ?? '', /^Error not_found \(HTTP 404\)/);
  });
});
