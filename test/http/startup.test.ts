import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';

/** What `npm start` prints: the URLs and a next step; a busy port is one line, not a stack trace. */
const MAIN = join(import.meta.dirname, '..', '..', 'src', 'main.ts');

function run(env: Record<string, string>, until: RegExp): Promise<{ out: string; err: string; code: number | null }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tsfm-start-'));
  const child = spawn(process.execPath, [MAIN], {
    env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'silent', METRICS: 'off', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (until.test(out)) child.kill('SIGTERM');
    });
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString();
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      rmSync(dataDir, { recursive: true, force: true });
      resolve({ out, err, code });
    });
  });
}

describe('npm start', () => {
  test('prints where the app, the API reference and MCP are, and a next step', async () => {
    const port = await new Promise<number>((r) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => r(p));
      });
    });
    const { out } = await run({ PORT: String(port) }, /Next:/);
    assert.match(out, new RegExp(`TSFM is running on http://127\\.0\\.0\\.1:${port}`));
    assert.match(out, /\/mcp/);
    assert.match(out, /\/openapi\.json/);
    assert.match(out, /API reference +http:\/\/127\.0\.0\.1:\d+\/docs/);
  });

  test('a busy port is one line that says what to do', async () => {
    const blocker: Server = await new Promise((r) => {
      const s = createServer().listen(0, '127.0.0.1', () => r(s));
    });
    const port = (blocker.address() as { port: number }).port;
    try {
      const { err, code } = await run({ PORT: String(port) }, /$^/);
      assert.equal(code, 1);
      assert.equal(err.trim().split('\n').length, 1, err);
      assert.match(err, new RegExp(`Port ${port} is already in use.*PORT=`));
    } finally {
      blocker.close();
    }
  });
});
