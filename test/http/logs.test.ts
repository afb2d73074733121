import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { logStreamFor } from '../../src/http/log-format.ts';
import { call, createKey, createTestApp, DB_KIND, registerUser, type TestApp } from '../helpers/app.ts';
import { freePort } from '../helpers/listen.ts';

const MAIN = join(import.meta.dirname, '..', '..', 'src', 'main.ts');

describe(`4xx reasons are logged at debug, without bodies or secrets (${DB_KIND})`, () => {
  let t: TestApp;
  let key: string;
  const lines: string[] = [];
  const refusals = () => lines.map((l) => JSON.parse(l) as Record<string, any>).filter((l) => l.msg === 'request refused');
  before(async () => {
    t = await createTestApp({ env: { LOG_LEVEL: 'debug' }, overrides: { logger: undefined, logStream: { write: (l: string) => void lines.push(l) } } });
    key = (await createKey(t, await registerUser(t))).key;
  });
  after(() => t.close());

  test('a 422 logs each problem’s place and message, never the values sent', async () => {
    lines.length = 0;
    const secretValue = 'SECRET-VALUE-1234';
    const r = await call(t, 'POST', '/v1/forecast', { token: key, body: { model: 'echo-last', inputs: [{ target: [1, 2, 3], start: secretValue }] } });
    assert.equal(r.status, 422, r.text);
    const [entry, ...rest] = refusals();
    assert.equal(rest.length, 0);
    assert.equal(entry?.status, 422);
    assert.equal(entry?.reason, 'validation_error');
    assert.deepEqual(entry?.problems, [{ loc: 'body.inputs.0.start', msg: 'Not an ISO 8601 date or date-time', type: 'value_error' }]);
    assert.equal(entry?.reqId, r.body.request_id);
    const all = lines.join('\n');
    assert.ok(!all.includes(secretValue), 'the offending value is not logged');
    assert.ok(!all.includes(key), 'the API key is not logged');
  });

  test('every kind of refusal is logged with its code: 401, 404, 405, 413-style app errors', async () => {
    lines.length = 0;
    const wrongKey = `tsfm_${'x'.repeat(43)}`;
    assert.equal((await call(t, 'GET', '/api/account/me', { token: wrongKey })).status, 401);
    assert.equal((await call(t, 'GET', '/no/such/route')).status, 404);
    assert.equal((await call(t, 'DELETE', '/v1/forecast', { token: key })).status, 405);
    assert.equal((await call(t, 'POST', '/v1/forecast', { token: key, body: { model: 'no-such-model', inputs: [{ target: [1] }] } })).status, 404);
    const got = refusals().map((e) => [e.status, e.reason]);
    assert.deepEqual(got, [
      [401, got[0]?.[1]],
      [404, 'not_found'],
      [405, 'method_not_allowed'],
      [404, 'model_not_found'],
    ]);
    assert.match(String(got[0]?.[1]), /\w/);
    assert.ok(!lines.join('\n').includes(wrongKey), 'a presented credential is never logged');
  });

  test('at info level refusals are not logged (and not even parsed)', async () => {
    const quiet: string[] = [];
    const q = await createTestApp({ env: { LOG_LEVEL: 'info' }, overrides: { logger: undefined, logStream: { write: (l: string) => void quiet.push(l) } } });
    try {
      assert.equal((await call(q, 'GET', '/no/such/route')).status, 404);
      assert.ok(!quiet.some((l) => l.includes('request refused')));
    } finally {
      await q.close();
    }
  });
});

describe('log format: human-readable on a terminal, JSON otherwise', () => {
  test('auto is JSON when stdout is not a terminal, pretty when it is; json and pretty force it', () => {
    assert.equal(logStreamFor('auto', false), null);
    assert.equal(logStreamFor('json', true), null);
    assert.notEqual(logStreamFor('auto', true, new Writable({ write: (_c, _e, cb) => cb() })), null);
    assert.notEqual(logStreamFor('pretty', false, new Writable({ write: (_c, _e, cb) => cb() })), null);
  });

  test('the pretty stream turns a JSON log line into one readable line', async () => {
    let out = '';
    const sink = new Writable({
      write: (c, _e, cb) => {
        out += c.toString();
        cb();
      },
    });
    const stream = logStreamFor('pretty', false, sink);
    stream?.write(`${JSON.stringify({ level: 30, time: Date.UTC(2026, 0, 1, 12, 0, 0), pid: 1, hostname: 'h', reqId: 'req_1', msg: 'request completed' })}\n`);
    await new Promise((r) => setTimeout(r, 50));
    assert.match(out, /INFO.*request completed/);
    assert.match(out, /reqId.*req_1/);
    assert.doesNotMatch(out, /^\{/);
    assert.equal(out.trim().split('\n').length, 1);
  });

  /** Runs `npm start`'s entry point, asks for /healthz, and returns what it printed. */
  async function startAndRequest(env: Record<string, string>): Promise<string> {
    const port = await freePort();
    const dataDir = mkdtempSync(join(tmpdir(), 'tsfm-logs-'));
    const child = spawn(process.execPath, [MAIN], {
      env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), METRICS: 'off', LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
    });
    const exited = new Promise((r) => child.once('exit', r));
    try {
      const deadline = Date.now() + 30_000;
      while (!out.includes('Next:') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      await fetch(`http://127.0.0.1:${port}/healthz`);
      while (!out.includes('request completed') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      return out;
    } finally {
      child.kill('SIGTERM');
      await exited;
      rmSync(dataDir, { recursive: true, force: true });
    }
  }

  test('npm start: JSON lines when stdout is a pipe; LOG_FORMAT=pretty gives readable lines', async () => {
    const json = (await startAndRequest({})).split('\n').filter((l) => l.includes('request completed'));
    assert.equal(json.length, 1, 'one JSON line per completed request');
    assert.equal(JSON.parse(json[0] as string).msg, 'request completed');
    const pretty = (await startAndRequest({ LOG_FORMAT: 'pretty' })).split('\n').filter((l) => l.includes('request completed'));
    assert.equal(pretty.length, 1);
    assert.match(pretty[0] as string, /^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO.*request completed/);
  });
});
