import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const SHARED_DIR = process.env.SHARED_DIR ?? resolve(REPO_ROOT, '..', 'shared');

export async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (a && typeof a === 'object' ? res(a.port) : rej(new Error('no port'))));
    });
  });
}

/** Starts the real server (src/main.ts) in a child process on a free port with a fresh DATA_DIR. */
export async function startServer(env: Record<string, string> = {}): Promise<{ base: string; child: ChildProcess; dataDir: string; stop(): Promise<void> }> {
  const port = await freePort();
  const dataDir = env.DATA_DIR ?? mkdtempSync(join(tmpdir(), 'tsfm-bench-'));
  const child = spawn(process.execPath, [join(REPO_ROOT, 'src/main.ts')], {
    // Benchmark accounts get their credits at register (no e-mail confirmation round trip).
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'warn', FREE_CREDITS_ON: 'register', ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 200; i++) {
    try {
      const r = await fetch(`${base}/healthz`);
      if (r.ok) break;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    base,
    child,
    dataDir,
    stop: () =>
      new Promise<void>((res) => {
        if (child.exitCode !== null) return res();
        child.once('exit', () => res());
        child.kill('SIGTERM');
      }),
  };
}

export async function json<T = unknown>(
  base: string,
  path: string,
  init: { method?: string; token?: string; body?: unknown } = {},
): Promise<{ status: number; body: T }> {
  const r = await fetch(base + path, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...(init.token ? { authorization: `Bearer ${init.token}` } : {}) },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await r.text();
  return { status: r.status, body: (text ? JSON.parse(text) : undefined) as T };
}

/** Registers an account and creates an API key; returns the key. */
export async function apiKey(base: string, email = `bench-${Date.now()}@example.com`): Promise<string> {
  const reg = await json<{ token: string }>(base, '/api/auth/register', { body: { email, password: 'benchmark-password' } });
  const key = await json<{ key: string }>(base, '/api/account/keys', { token: reg.body.token, body: { label: 'bench' } });
  return key.body.key;
}
