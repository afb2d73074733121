import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { operations } from '../../src/operations.ts';
import { createKey, DB_KIND, registerUser } from '../helpers/app.ts';
import { createListeningApp, type ListeningApp } from '../helpers/listen.ts';

const run = promisify(execFile);
const CLI = process.env.INSPECTOR_CLI ?? join(import.meta.dirname, '../../node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js');

/**
 * The official MCP Inspector's command line (a devDependency) against this server's /mcp, as a
 * user would run it: `npx @modelcontextprotocol/inspector --cli URL --header "Authorization: Bearer …"`.
 * A client nobody on this team wrote: it lists tools (and so validates results against them) and
 * must show a tool error's text.
 */
describe(`the MCP Inspector CLI against /mcp (${DB_KIND})`, { skip: existsSync(CLI) ? false : `no MCP Inspector at ${CLI}: run npm ci` }, () => {
  let t: ListeningApp;
  let key: string;
  // The CLI keeps a catalog of servers: a scratch one, never the user's ~/.mcp-inspector.
  const home = mkdtempSync(join(tmpdir(), 'inspector-'));
  before(async () => {
    t = await createListeningApp();
    key = (await createKey(t, await registerUser(t), 'inspector')).key;
  });
  after(async () => {
    await t.close();
    rmSync(home, { recursive: true, force: true });
  });

  /** Runs the CLI; resolves with its exit code and output whatever the code. */
  async function inspector(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const r = await run(process.execPath, [CLI, '--cli', `${t.baseUrl}/mcp`, '--transport', 'http', '--header', `Authorization: Bearer ${key}`, ...args], {
        timeout: 60_000,
        env: { ...process.env, HOME: home, MCP_CATALOG_PATH: join(home, 'mcp.json'), NO_COLOR: '1' },
      });
      return { code: 0, stdout: r.stdout, stderr: r.stderr };
    } catch (err) {
      const e = err as { code?: number; stdout?: string; stderr?: string };
      return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
    }
  }

  test('tools/list shows every declared tool, each with an input schema', async () => {
    const r = await inspector('--method', 'tools/list');
    assert.equal(r.code, 0, r.stderr);
    const { tools } = JSON.parse(r.stdout) as { tools: { name: string; inputSchema: { type: string } }[] };
    assert.deepEqual(tools.map((x) => x.name).sort(), operations.map((op) => op.id).sort());
    for (const tool of tools) assert.equal(tool.inputSchema.type, 'object', tool.name);
  });

  test('a successful tools/call shows the forecast numbers in its text', async () => {
    const r = await inspector(
      '--method',
      'tools/call',
      '--tool-name',
      'forecast',
      '--tool-arg',
      'model=echo-last',
      'inputs=[{"target":[1,2,3]}]',
      'parameters={"prediction_length":2}',
    );
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { isError?: boolean; content: { type: string; text: string }[] };
    assert.notEqual(out.isError, true);
    assert.match(out.content[0]?.text ?? '', /^Forecast by echo-last: 1 series × 2 steps/);
    assert.match(out.content[0]?.text ?? '', /"mean":\[\[3\],\[3\]\]/);
  });

  test('a failing tools/call shows the service’s error text, not a schema complaint', async () => {
    const r = await inspector('--method', 'tools/call', '--tool-name', 'forecast', '--tool-arg', 'model=no-such-model', 'inputs=[{"target":[1,2,3]}]');
    // The CLI exits non-zero for a result with isError, and prints the result itself.
    assert.notEqual(r.code, 0);
    const out = JSON.parse(r.stdout) as { isError?: boolean; content: { type: string; text: string }[]; structuredContent?: unknown };
    assert.equal(out.isError, true);
    assert.equal(out.structuredContent, undefined);
    assert.match(out.content[0]?.text ?? '', /^Error model_not_found \(HTTP 404\): Model 'no-such-model' is not in the catalog/);
    assert.doesNotMatch(r.stdout + r.stderr, /output schema/i);
    // Invalid arguments: the field at fault is named.
    const bad = await inspector(
      '--method',
      'tools/call',
      '--tool-name',
      'forecast',
      '--tool-arg',
      'model=echo-last',
      'inputs=[{"target":[1,2,3]}]',
      'parameters={"prediction_length":0}',
    );
    assert.notEqual(bad.code, 0);
    assert.match(bad.stdout + bad.stderr, /prediction_length/);
  });
});
