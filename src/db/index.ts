import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql, type Migration } from 'kysely';
import pg from 'pg';
import { openSqlite } from './sqlite-adapter.ts';
import type { DB } from './schema.ts';
import { migrations } from './migrations/index.ts';
import type { Dialect } from './dialect.ts';

export type { Dialect } from './dialect.ts';

export interface Database {
  db: Kysely<DB>;
  dialect: Dialect;
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

// int8 (bigint) columns hold epoch milliseconds and credit amounts, all far below 2^53.
pg.types.setTypeParser(20, (v) => Number(v));

export type DatabaseTarget =
  | { kind: 'sqlite'; path: string }
  /** `schema` isolates a database inside one PostgreSQL database (used by tests). */
  | { kind: 'postgres'; url: string; schema?: string };

export async function openDatabase(target: DatabaseTarget, opts: { poolSize?: number } = {}): Promise<Database> {
  let db: Kysely<DB>;
  if (target.kind === 'sqlite') {
    if (target.path !== ':memory:') mkdirSync(dirname(target.path), { recursive: true });
    const { db: sqliteDb } = openSqlite(target.path);
    db = new Kysely<DB>({ dialect: new SqliteDialect({ database: sqliteDb }) });
  } else {
    let options: string | undefined;
    if (target.schema) {
      if (!/^[a-z_][a-z0-9_]*$/.test(target.schema)) throw new Error('invalid schema name');
      const c = new pg.Client({ connectionString: target.url });
      await c.connect();
      await c.query(`create schema if not exists ${target.schema}`);
      await c.end();
      options = `-c search_path=${target.schema}`;
    }
    const pool = new pg.Pool({ connectionString: target.url, max: opts.poolSize ?? 10, ...(options ? { options } : {}) });
    // An idle client that loses its connection must not crash the process.
    pool.on('error', () => undefined);
    db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  }
  const database: Database = {
    db,
    dialect: target.kind,
    async ping() {
      try {
        await sql`select 1`.execute(db);
        return true;
      } catch {
        return false;
      }
    },
    close: () => db.destroy(),
  };
  await migrate(database, target.kind === 'postgres' ? target.schema : undefined);
  return database;
}

/**
 * `schema` pins Kysely's bookkeeping tables to that schema: otherwise its existence check sees
 * the tables of any other schema in the database (parallel test suites) and skips creating them.
 */
export async function migrate(database: Database, schema?: string): Promise<void> {
  const migrator = new Migrator({
    db: database.db,
    ...(schema ? { migrationTableSchema: schema } : {}),
    provider: {
      async getMigrations() {
        const out: Record<string, Migration> = {};
        for (const [name, m] of Object.entries(migrations)) {
          out[name] = { up: (db) => m.up(db, database.dialect) };
        }
        return out;
      },
    },
  });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
}

/** True when the error is a unique-constraint violation on either dialect. */
export function isUniqueViolation(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const e = err as { code?: unknown; errcode?: unknown; message?: unknown };
  if (e.code === '23505') return true; // PostgreSQL unique_violation
  if (e.errcode === 2067 || e.errcode === 1555) return true; // SQLITE_CONSTRAINT_UNIQUE / PRIMARYKEY
  return typeof e.message === 'string' && e.message.includes('UNIQUE constraint failed');
}
