import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { openDatabase, type DatabaseTarget } from '../../src/db/index.ts';
import { ledgerCheck } from '../../src/billing/ledger.ts';
import { DB_KIND, TEST_DATABASE_URL } from '../helpers/app.ts';

/**
 * SIGKILL the server while it serves a stream of forecasts and batches, restart it on the same
 * database, and check the books: every request (and batch item) that got a 200 has its usage
 * event, every debit has its event, and once the dead process's holds are swept the ledger equals
 * the balance. On the SQLite file database by default; with TEST_DATABASE_URL, on a PostgreSQL
 * database created for the run (its charges take the one-statement path of ADR 0014).
 */
const SERVER = join(import.meta.dirname, 'crash-server.ts');
const ONE_CREDIT = { model: 'naive', inputs: [{ target: [1, 2, 3] }], parameters: { prediction_length: 1 } };

function startServer(dataDir: string, databaseUrl: string | null): Promise<{ child: ChildProcess; base: string; exited: Promise<void> }> {
  const child = spawn(process.execPath, [SERVER], {
    env: {
      ...process.env,
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
      DATA_DIR: dataDir,
      PORT: '0',
      LOG_LEVEL: 'silent',
      INFERENCE_TIMEOUT_MS: '2000',
      BILLING_HOLD_GRACE_MS: '0',
      INFERENCE_WORKERS: '2',
      FREE_CREDITS_ON: 'register',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`server did not start: ${out}`)), 20_000);
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, base: `http://127.0.0.1:${m[1]}`, exited });
      }
    });
    child.once('exit', (code) => reject(new Error(`server exited early (${code}): ${out}`)));
  });
}

/** A PostgreSQL database of its own for the run (the server migrates it), dropped after. */
async function freshPostgres(): Promise<{ url: string; target: DatabaseTarget; drop(): Promise<void> }> {
  const name = `crash_${process.pid}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL! });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(TEST_DATABASE_URL!);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    target: { kind: 'postgres', url: url.toString() },
    async drop() {
      const c = new pg.Client({ connectionString: TEST_DATABASE_URL! });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

describe(`crash safety: SIGKILL during a stream of forecasts (${DB_KIND})`, () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'tsfm-crash-'));
  let pgdb: Awaited<ReturnType<typeof freshPostgres>> | null = null;
  after(async () => {
    rmSync(dataDir, { recursive: true, force: true });
    await pgdb?.drop();
  });

  test('every 200 has its usage event and the ledger balances after restart', { timeout: 120_000 }, async () => {
    if (TEST_DATABASE_URL) pgdb = await freshPostgres();
    const databaseUrl = pgdb?.url ?? null;
    const first = await startServer(dataDir, databaseUrl);
    const reg = await fetch(`${first.base}/api/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'crash@example.com', password: 'crash-test-password' }),
    });
    assert.equal(reg.status, 200);
    const { token, user } = (await reg.json()) as { token: string; user: { id: string } };

    const ok: string[] = [];
    let sent = 0;
    let killed = false;
    const KILL_AFTER = 400;
    const worker = async (w: number) => {
      for (let i = 0; i < 10_000 && !killed; i++) {
        const id = `crash-${w}-${i}`;
        sent++;
        try {
          const r = await fetch(`${first.base}/v1/forecast`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-request-id': id },
            body: JSON.stringify(ONE_CREDIT),
          });
          await r.arrayBuffer();
          if (r.status === 200) ok.push(id);
          if (ok.length >= KILL_AFTER && !killed) {
            killed = true;
            first.child.kill('SIGKILL');
          }
        } catch {
          // connection reset by the kill
        }
      }
    };
    // Batches too: each item is charged on its own, in the group of its batch.
    const batcher = async (w: number) => {
      for (let i = 0; i < 10_000 && !killed; i++) {
        const id = `crash-b${w}-${i}`;
        sent += 16;
        try {
          const r = await fetch(`${first.base}/v1/forecast/batch`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, 'x-request-id': id },
            body: JSON.stringify({ requests: Array.from({ length: 16 }, () => ONE_CREDIT) }),
          });
          const body = (await r.json()) as { data?: { ok: boolean }[] };
          if (r.status === 200) for (const [k, d] of (body.data ?? []).entries()) if (d.ok) ok.push(`${id}:${k}`);
        } catch {
          // connection reset by the kill
        }
      }
    };
    await Promise.all([...Array.from({ length: 8 }, (_, w) => worker(w)), batcher(0), batcher(1)]);
    first.child.kill('SIGKILL');
    await first.exited;
    assert.ok(ok.length >= KILL_AFTER, `got ${ok.length} 200s of ${sent} sent`);

    // Restart: the sweeper releases holds of requests that were in flight when the process died.
    const second = await startServer(dataDir, databaseUrl);
    try {
      const database = await openDatabase(pgdb?.target ?? { kind: 'sqlite', path: join(dataDir, 'tsfm.sqlite') });
      try {
        const db = database.db;
        let books = await ledgerCheck(db, user.id);
        for (let i = 0; i < 50 && books.held > 0; i++) {
          await new Promise((r) => setTimeout(r, 200));
          books = await ledgerCheck(db, user.id);
        }
        assert.equal(books.held, 0, 'orphaned holds were released');
        assert.equal(books.balanced, true, JSON.stringify(books));
        const events = await db.selectFrom('usage_events').select(['id', 'request_id']).where('user_id', '=', user.id).execute();
        const have = new Set(events.map((e) => e.request_id));
        const missing = ok.filter((id) => !have.has(id));
        assert.deepEqual(missing, [], 'every 200 has its usage event');
        const debits = await db
          .selectFrom('credit_ledger')
          .select(['usage_event_id', 'amount'])
          .where('user_id', '=', user.id)
          .where('kind', '=', 'debit')
          .execute();
        assert.equal(debits.length, events.length, 'one debit per usage event');
        assert.deepEqual(new Set(debits.map((d) => d.usage_event_id)), new Set(events.map((e) => e.id)));
        assert.equal(books.balance, 80000 - events.length);
        process.stdout.write(
          `# crash test: ${sent} forecasts sent (single and batch items), ${ok.length} answered 200 before SIGKILL, ${events.length} usage events, balance ${books.balance}\n`,
        );
      } finally {
        await database.close();
      }
      const again = await fetch(`${second.base}/v1/forecast`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify(ONE_CREDIT),
      });
      assert.equal(again.status, 200, 'the restarted server serves');
    } finally {
      second.child.kill('SIGKILL');
      await second.exited;
    }
  });
});
