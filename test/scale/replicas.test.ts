import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { ledgerCheck } from '../../src/billing/ledger.ts';
import { openDatabase, type Database } from '../../src/db/index.ts';

/**
 * Three gateway processes (the real entry point, src/main.ts) on one PostgreSQL database and one
 * Redis, driven round-robin as a load balancer without sticky sessions would: rate limits exact
 * across them, no overspend at the credit boundary, usage and ledger consistent, and a replica
 * killed with SIGKILL mid-stream loses nothing. Needs PostgreSQL and Redis (skipped otherwise).
 */
// Only what the README says npm test touches: PostgreSQL with TEST_DATABASE_URL, Redis with TEST_REDIS_URL.
const PG_URL = process.env.TEST_DATABASE_URL || null;
const REDIS_URL = process.env.TEST_REDIS_URL || null;
const NEEDS = [PG_URL ? null : 'TEST_DATABASE_URL', REDIS_URL ? null : 'TEST_REDIS_URL'].filter((x) => x !== null);
const MAIN = join(import.meta.dirname, '..', '..', 'src', 'main.ts');
const ONE_CREDIT = { model: 'naive', inputs: [{ target: [1, 2, 3] }], parameters: { prediction_length: 1 } };

function reachable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = new Socket();
    s.setTimeout(1000);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
    s.once('timeout', () => {
      s.destroy();
      resolve(false);
    });
    s.connect(port, host);
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

interface Replica {
  name: string;
  base: string;
  child: ChildProcess;
  exited: Promise<void>;
}

async function startReplica(name: string, env: Record<string, string>): Promise<Replica> {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), `tsfm-replica-${name}-`));
  const child = spawn(process.execPath, [MAIN], {
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((r) =>
    child.once('exit', () => {
      rmSync(dataDir, { recursive: true, force: true });
      r();
    }),
  );
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`replica ${name} exited (${child.exitCode})`);
    try {
      if ((await fetch(`${base}/healthz`)).ok) return { name, base, child, exited };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error(`replica ${name} did not start`);
}

async function post(base: string, path: string, body: unknown, token?: string): Promise<{ status: number; body: any }> {
  const r = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : undefined };
}

describe('three replicas on one PostgreSQL and one Redis', { skip: NEEDS.length > 0 ? `needs ${NEEDS.join(' and ')}` : false }, () => {
  let ok = false;
  let dbName = '';
  let replicas: Replica[] = [];
  let database: Database | null = null;
  const admin = () => new pg.Client({ connectionString: PG_URL as string });

  before(async () => {
    const u = new URL(PG_URL as string);
    const r = new URL(REDIS_URL as string);
    // Both were asked for explicitly: unreachable is a failure, not a skip.
    assert.ok(await reachable(u.hostname, Number(u.port || 5432)), `TEST_DATABASE_URL (${u.host}) does not answer`);
    assert.ok(await reachable(r.hostname, Number(r.port || 6379)), `TEST_REDIS_URL (${r.host}) does not answer`);
    ok = true;
    dbName = `tsfm_replicas_${randomBytes(5).toString('hex')}`;
    const c = admin();
    await c.connect();
    await c.query(`create database ${dbName}`);
    await c.end();
    const dbUrl = new URL(PG_URL as string);
    dbUrl.pathname = `/${dbName}`;
    const env = {
      DATABASE_URL: dbUrl.toString(),
      REDIS_URL: REDIS_URL as string,
      RATE_LIMIT_FREE_PER_MINUTE: '60',
      FREE_CREDITS: '40',
      // Credits at register: this test is about replicas, not e-mail confirmation.
      FREE_CREDITS_ON: 'register',
      INFERENCE_WORKERS: '1',
      INFERENCE_TIMEOUT_MS: '2000',
      BILLING_HOLD_GRACE_MS: '0',
      METRICS: 'off',
    };
    // All three start at once on the empty database: migrations take a PostgreSQL advisory lock
    // (Kysely's migrator), so one migrates and the others wait for it.
    replicas = await Promise.all([startReplica('a', env), startReplica('b', env), startReplica('c', env)]);
    database = await openDatabase({ kind: 'postgres', url: dbUrl.toString() });
  });

  after(async () => {
    await database?.close();
    for (const r of replicas) r.child.kill('SIGKILL');
    await Promise.all(replicas.map((r) => r.exited));
    if (dbName) {
      const c = admin();
      await c.connect();
      await c.query(`drop database if exists ${dbName} with (force)`);
      await c.end();
    }
  });

  /** A fresh account (registered on one replica) and an API key (created on another). */
  async function account(tag: string): Promise<{ id: string; key: string }> {
    const email = `${tag}-${randomBytes(4).toString('hex')}@example.com`;
    const reg = await post(replicas[0]!.base, '/api/auth/register', { email, password: 'replica password 1' });
    assert.equal(reg.status, 200, JSON.stringify(reg.body));
    const key = await post(replicas[1]!.base, '/api/account/keys', { label: tag }, reg.body.token);
    assert.equal(key.status, 200, JSON.stringify(key.body));
    return { id: reg.body.user.id, key: key.body.key };
  }

  test('rate limits are exact across replicas: 90 requests round-robin against what is left of a limit of 60', async (t) => {
    if (!ok) return t.skip('PostgreSQL or Redis not reachable');
    const a = await account('limits');
    const first = await fetch(`${replicas[2]!.base}/api/account/me`, { headers: { authorization: `Bearer ${a.key}` } });
    await first.arrayBuffer();
    const remaining = Number(first.headers.get('x-ratelimit-remaining'));
    assert.ok(remaining > 0 && remaining < 60, String(remaining));
    const statuses = await Promise.all(
      Array.from({ length: 90 }, async (_, i) => {
        const r = await fetch(`${replicas[i % 3]!.base}/api/account/me`, { headers: { authorization: `Bearer ${a.key}` } });
        await r.arrayBuffer();
        return r.status;
      }),
    );
    const allowed = statuses.filter((s) => s === 200).length;
    const refused = statuses.filter((s) => s === 429).length;
    assert.equal(allowed + refused, 90, JSON.stringify(statuses));
    assert.equal(allowed, remaining, 'exactly what the shared counter had left, whichever replica answered');
  });

  test('no overspend at the credit boundary: 55 concurrent one-credit forecasts against 40 credits', async (t) => {
    if (!ok) return t.skip('PostgreSQL or Redis not reachable');
    const a = await account('credits');
    const statuses = await Promise.all(
      Array.from({ length: 55 }, async (_, i) => (await post(replicas[i % 3]!.base, '/v1/forecast', ONE_CREDIT, a.key)).status),
    );
    assert.equal(statuses.filter((s) => s === 200).length, 40, JSON.stringify(statuses));
    assert.equal(statuses.filter((s) => s === 402).length, 15);
    const books = await ledgerCheck(database!.db, a.id);
    assert.deepEqual({ balance: books.balance, held: books.held, balanced: books.balanced }, { balance: 0, held: 0, balanced: true });
    const events = await database!.db.selectFrom('usage_events').select('id').where('user_id', '=', a.id).execute();
    assert.equal(events.length, 40);
  });

  test('a replica killed with SIGKILL mid-stream loses nothing: every 200 has its usage event, the books balance', { timeout: 120_000 }, async (t) => {
    if (!ok) return t.skip('PostgreSQL or Redis not reachable');
    const a = await account('crash');
    const answered: string[] = [];
    let killed = false;
    const victim = replicas[2]!;
    await Promise.all(
      Array.from({ length: 6 }, async (_, w) => {
        for (let i = 0; i < 12; i++) {
          const target = replicas[(w + i) % 3]!;
          const id = `rep-${w}-${i}`;
          try {
            const r = await fetch(`${target.base}/v1/forecast`, {
              method: 'POST',
              headers: { 'content-type': 'application/json', authorization: `Bearer ${a.key}`, 'x-request-id': id },
              body: JSON.stringify(ONE_CREDIT),
            });
            await r.arrayBuffer();
            if (r.status === 200) answered.push(id);
          } catch {
            // the killed replica's connections
          }
          if (answered.length >= 12 && !killed) {
            killed = true;
            victim.child.kill('SIGKILL');
          }
        }
      }),
    );
    assert.ok(killed);
    await victim.exited;
    // The survivors' sweepers release the dead replica's holds once they expire (timeout + grace).
    let books = await ledgerCheck(database!.db, a.id);
    for (let i = 0; i < 100 && books.held > 0; i++) {
      await new Promise((r) => setTimeout(r, 200));
      books = await ledgerCheck(database!.db, a.id);
    }
    assert.equal(books.held, 0, 'holds of the dead replica were released');
    assert.equal(books.balanced, true, JSON.stringify(books));
    const events = await database!.db.selectFrom('usage_events').select(['request_id']).where('user_id', '=', a.id).execute();
    const have = new Set(events.map((e) => e.request_id));
    assert.deepEqual(
      answered.filter((id) => !have.has(id)),
      [],
      'every 200 has its usage event',
    );
    assert.equal(books.balance, 40 - events.length);
    process.stdout.write(`# replicas: ${answered.length} answered 200 around the kill, ${events.length} usage events, balance ${books.balance}\n`);
  });
});
