import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import type { z } from 'zod';
import { loadConfig } from '../../src/config.ts';
import { createDeps } from '../../src/deps.ts';
import type { Deps } from '../../src/deps-types.ts';
import { openDatabase, type DatabaseTarget } from '../../src/db/index.ts';
import { buildApp } from '../../src/app.ts';
import { MemoryMailer } from '../../src/mail/mailer.ts';
import { FakeEngine } from './fake-engine.ts';

/**
 * Tests run on SQLite by default, and on PostgreSQL when TEST_DATABASE_URL is set
 * (each test app gets a schema of its own, dropped when it closes).
 */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || null;
export const DB_KIND = TEST_DATABASE_URL ? 'postgres' : 'sqlite';

export interface TestApp {
  app: FastifyInstance;
  deps: Deps;
  mailer: MemoryMailer;
  dataDir: string;
  /** Where the app's database is: another connection (a second replica, a child process) can open it. */
  databaseTarget: DatabaseTarget;
  close(): Promise<void>;
}

export interface TestAppOptions {
  env?: Record<string, string>;
  overrides?: Partial<Parameters<typeof createDeps>[1]>;
  /** Extra routes for a test, added before the app is ready. */
  extraRoutes?: (app: FastifyInstance) => void;
}

export async function createTestApp(opts: TestAppOptions = {}): Promise<TestApp> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tsfm-test-'));
  // Tests exercise billing through the local provider unless they choose otherwise (the service's default is none).
  // The scheduler loop stays off: schedule tests drive it by hand (test/schedules/).
  const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', PAYMENTS_PROVIDER: 'local', SCHEDULER: 'off', ...opts.env });
  let target: DatabaseTarget = { kind: 'sqlite', path: join(dataDir, 'test.sqlite') };
  const schema = `t_${randomBytes(6).toString('hex')}`;
  if (TEST_DATABASE_URL) target = { kind: 'postgres', url: TEST_DATABASE_URL, schema };
  const database = await openDatabase(target);
  const mailer = new MemoryMailer();
  const deps = await createDeps(config, { database, mailer, logger: false, engine: new FakeEngine(), ...opts.overrides });
  const app = await buildApp(deps);
  opts.extraRoutes?.(app);
  await app.ready();
  return {
    app,
    deps,
    mailer,
    dataDir,
    databaseTarget: target,
    async close() {
      await app.close();
      await deps.close();
      if (TEST_DATABASE_URL) {
        const c = new pg.Client({ connectionString: TEST_DATABASE_URL });
        await c.connect();
        await c.query(`drop schema if exists ${schema} cascade`);
        await c.end();
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface CallResult<T = any> {
  status: number;
  body: T;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** One in-process HTTP call (Fastify inject: real routing, hooks, parsing and serialisation). */
export async function call<T = any>(
  t: TestApp,
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  url: string,
  opts: { token?: string; body?: unknown; headers?: Record<string, string>; raw?: string } = {},
): Promise<CallResult<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let payload: string | undefined;
  if (opts.raw !== undefined) payload = opts.raw;
  else if (opts.body !== undefined) {
    payload = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await t.app.inject({ method, url, headers, ...(payload !== undefined ? { payload } : {}) });
  let body: any;
  try {
    body = res.body.length > 0 ? JSON.parse(res.body) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.statusCode, body, headers: res.headers as CallResult['headers'], text: res.body };
}

let counter = 0;
export function uniqueEmail(tag = 'user'): string {
  counter += 1;
  return `${tag}-${Date.now().toString(36)}-${counter}-${randomBytes(3).toString('hex')}@example.com`;
}

export interface TestUser {
  id: string;
  email: string;
  password: string;
  token: string;
}

/**
 * Registers a fresh account (one per test: no shared seeded state) and confirms its e-mail by
 * following the link from the mailed confirmation, so it has its free credits (FREE_CREDITS_ON=verify)
 * and, when listed in ADMIN_EMAILS, the administrator role. `verified: false` stops after register.
 */
export async function registerUser(t: TestApp, opts: { email?: string; password?: string; name?: string; verified?: boolean } = {}): Promise<TestUser> {
  const email = opts.email ?? uniqueEmail();
  const password = opts.password ?? 'correct horse battery';
  const r = await call(t, 'POST', '/api/auth/register', { body: { email, password, ...(opts.name ? { name: opts.name } : {}) } });
  if (r.status !== 200) throw new Error(`register failed: ${r.status} ${r.text}`);
  const user = { id: r.body.user.id, email: r.body.user.email, password, token: r.body.token };
  if (opts.verified !== false) await verifyEmail(t, user.email);
  return user;
}

/** The token of the last confirmation link mailed to `email` (from the test app's MemoryMailer). */
export function verificationTokenFor(t: TestApp, email: string): string {
  const mail = t.mailer.sent.filter((m) => m.to === email && /\/verify-email\?token=/.test(m.text)).at(-1);
  const m = mail ? /\/verify-email\?token=([^\s]+)/.exec(mail.text) : null;
  if (!m?.[1]) throw new Error(`no confirmation mail was sent to ${email}`);
  return decodeURIComponent(m[1]);
}

/** Follows the mailed confirmation link of `email` the way its owner would. */
export async function verifyEmail(t: TestApp, email: string): Promise<void> {
  const r = await call(t, 'POST', '/api/auth/verify-email', { body: { token: verificationTokenFor(t, email) } });
  if (r.status !== 200) throw new Error(`verify-email failed: ${r.status} ${r.text}`);
}

export async function createKey(t: TestApp, user: TestUser, label = 'test'): Promise<{ id: string; key: string }> {
  const r = await call(t, 'POST', '/api/account/keys', { token: user.token, body: { label } });
  if (r.status !== 200) throw new Error(`create key failed: ${r.status} ${r.text}`);
  return { id: r.body.id, key: r.body.key };
}

/** Asserts that a response body satisfies the route's own schema, and returns the parsed value. */
export function expectSchema<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const r = schema.safeParse(body);
  if (!r.success) throw new Error(`response does not match its schema: ${JSON.stringify(r.error.issues).slice(0, 800)}`);
  return r.data;
}

/** The response schema a route declared for a status (route pattern, e.g. `/api/account/keys/:key_id`). */
export function routeSchema(t: TestApp, method: string, url: string, status = 200): z.ZodType {
  const declared = t.app.routeSchemas.get(`${method} ${url}`) as { response?: Record<number, z.ZodType> } | undefined;
  const schema = declared?.response?.[status];
  if (!schema) throw new Error(`no ${status} response schema declared for ${method} ${url}`);
  return schema;
}
