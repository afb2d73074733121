import { DatabaseSync, type StatementSync } from 'node:sqlite';
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

export function openSqlite(path: string): { db: SqliteDatabase; raw: DatabaseSync } {
  const raw = new DatabaseSync(path);
  raw.exec('PRAGMA journal_mode = WAL');
  raw.exec('PRAGMA synchronous = NORMAL');
  raw.exec('PRAGMA foreign_keys = ON');
  raw.exec('PRAGMA busy_timeout = 5000');
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
  return { db, raw };
}
