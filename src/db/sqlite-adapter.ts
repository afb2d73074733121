import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

/**
 * Adapts Node's built-in `node:sqlite` to the interface Kysely's SqliteDialect expects
 * (the better-sqlite3 shape). node:sqlite ships with Node itself, so no native addon
 * has to match the Node version the project runs on.
 */
type Param = null | number | bigint | string | Uint8Array;

function toParam(v: unknown): Param {
  if (v === undefined || v === null) return null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'string') return v;
  if (v instanceof Uint8Array) return v;
  if (v instanceof Date) return v.getTime();
  return JSON.stringify(v);
}

/**
 * Synchronous statements on the connection, for a hot path that runs a whole transaction in one
 * turn of the event loop (the metering charge, ADR 0023). Only for use while Kysely's connection
 * is held (`Database.sqliteDirect`), so no Kysely transaction is open on it meanwhile.
 */
export interface SqliteDirect {
  all(sql: string, params: readonly unknown[]): Record<string, unknown>[];
  run(sql: string, params?: readonly unknown[]): number;
  /** True while a transaction is open on the connection. */
  inTransaction(): boolean;
}

export function openSqlite(path: string): { db: SqliteDatabase; raw: DatabaseSync; direct: SqliteDirect } {
  const raw = new DatabaseSync(path);
  raw.exec('PRAGMA journal_mode = WAL');
  raw.exec('PRAGMA synchronous = NORMAL');
  raw.exec('PRAGMA foreign_keys = ON');
  raw.exec('PRAGMA busy_timeout = 5000');
  const checkpointer = path === ':memory:' || path === '' ? null : startCheckpointer(raw, path);
  // Kysely prepares every query anew; compiling SQL was the largest single cost of a request, so
  // compiled statements are kept (the query builder emits a bounded set of distinct SQL texts).
  const cache = new Map<string, { stmt: StatementSync; reader: boolean }>();
  const CACHE_MAX = 1000;
  const compile = (sql: string): { stmt: StatementSync; reader: boolean } => {
    let entry = cache.get(sql);
    if (!entry) {
      const stmt = raw.prepare(sql);
      entry = { stmt, reader: stmt.columns().length > 0 };
      if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value as string);
      cache.set(sql, entry);
    }
    return entry;
  };
  const db: SqliteDatabase = {
    close: () => {
      checkpointer?.stop();
      cache.clear();
      raw.close();
    },
    prepare(sql: string): SqliteStatement {
      const { stmt, reader } = compile(sql);
      const map = (params: ReadonlyArray<unknown>) => params.map(toParam);
      return {
        reader,
        all: (params) => stmt.all(...map(params)),
        run: (params) => {
          const r = stmt.run(...map(params));
          return { changes: r.changes, lastInsertRowid: r.lastInsertRowid };
        },
        iterate: (params) => stmt.iterate(...map(params)),
      };
    },
  };
  const direct: SqliteDirect = {
    all: (sql, params) => compile(sql).stmt.all(...params.map(toParam)) as Record<string, unknown>[],
    run: (sql, params = []) => Number(compile(sql).stmt.run(...params.map(toParam)).changes),
    inTransaction: () => raw.isTransaction,
  };
  return { db, raw, direct };
}

/** How often the background connection checkpoints the WAL. */
const CHECKPOINT_EVERY_MS = 100;

/**
 * The worker's code (plain CommonJS: a worker given a string runs it as a script). It opens its
 * own connection to the file and runs a PASSIVE checkpoint every `everyMs`: copying committed
 * pages from the WAL into the database file and the fsync that follows happen on this thread.
 * PASSIVE never waits for, nor blocks, the writer. On 'stop' it closes its connection and says so
 * through the shared flag (the main thread's close is synchronous and waits for it, briefly).
 */
const CHECKPOINTER_SOURCE = `
const { DatabaseSync } = require('node:sqlite');
const { parentPort, workerData } = require('node:worker_threads');
const db = new DatabaseSync(workerData.path);
db.exec('PRAGMA busy_timeout = 0');
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
const flag = new Int32Array(workerData.flag);
const tick = () => { try { checkpoint.get(); } catch {} };
const timer = setInterval(tick, workerData.everyMs);
parentPort.on('message', () => {
  clearInterval(timer);
  try { db.close(); } catch {}
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
  parentPort.close();
});
`;

/**
 * WAL checkpoints off the event loop (ADR 0014). SQLite's automatic checkpoint runs inside the
 * COMMIT that crosses 1,000 WAL pages, on the connection that commits: with node:sqlite's
 * synchronous API that is the event loop, blocked for the copy and an fsync (milliseconds on this
 * kind of disk) once every few dozen metering commits. Here the automatic checkpoint is off and a
 * worker thread's own connection checkpoints instead. Durability is unchanged: a commit is in the
 * WAL either way (synchronous = NORMAL), and a WAL left over by a crash is replayed on open. If the
 * worker cannot run, the automatic checkpoint is turned back on.
 */
function startCheckpointer(raw: DatabaseSync, path: string): { stop(): void } {
  const flag = new SharedArrayBuffer(4);
  let worker: Worker;
  try {
    worker = new Worker(CHECKPOINTER_SOURCE, { eval: true, workerData: { path, everyMs: CHECKPOINT_EVERY_MS, flag } });
  } catch {
    return { stop() {} };
  }
  raw.exec('PRAGMA wal_autocheckpoint = 0');
  let running = true;
  worker.unref();
  const fallBack = () => {
    if (!running) return;
    running = false;
    try {
      raw.exec('PRAGMA wal_autocheckpoint = 1000');
    } catch {
      // The connection is already closed.
    }
  };
  worker.on('error', fallBack);
  worker.on('exit', fallBack);
  return {
    stop() {
      if (!running) return;
      running = false;
      worker.postMessage('stop');
      // Its connection closed first, so that this (last) connection's close checkpoints the WAL and removes it.
      Atomics.wait(new Int32Array(flag), 0, 0, 2000);
    },
  };
}
