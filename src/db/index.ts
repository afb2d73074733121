import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql, type Migration } from 'kysely';
import pg from 'pg';
import { openSqlite, type SqliteDirect } from './sqlite-adapter.ts';
import { CredentialCache, CredentialWritePlugin, listenForCredentialChanges } from './credential-cache.ts';
import type { DB } from './schema.ts';
import { migrations } from './migrations/index.ts';
import type { Dialect } from './dialect.ts';

export type { Dialect } from './dialect.ts';
export type { SqliteDirect } from './sqlite-adapter.ts';

export interface Database {
  db: Kysely<DB>;
  dialect: Dialect;
  ping(): Promise<boolean>;
  close(): Promise<void>;
  /**
   * PostgreSQL only: runs one statement (outside any transaction) as a named prepared statement,
   * parsed and planned once per connection. For the hot path's large fixed statements (the
   * metering charge, ADR 0014); SQLite's statement cache does the same for every statement.
   */
  prepared?: (name: string, text: string, values: unknown[]) => Promise<Record<string, unknown>[]>;
  /**
   * SQLite only: runs `fn` with synchronous statements on the connection while holding Kysely's
   * connection (so no Kysely transaction is open on it, and none starts until `fn` returns). A
   * transaction `fn` opens and closes runs in one turn of the event loop, without a promise per
   * statement: for the metering charge (ADR 0023). `fn` must leave no transaction open.
   */
  sqliteDirect?: <T>(fn: (s: SqliteDirect) => T) => Promise<T>;
  /**
   * PostgreSQL only: the API-key lookup's rows, kept while a LISTEN connection reports every
   * change to them (ADR 0025, `src/db/credential-cache.ts`); absent when CREDENTIAL_CACHE_SECONDS is 0.
   */
  credentialCache?: CredentialCache<unknown>;
}

// int8 (bigint) columns hold epoch milliseconds and credit amounts, all far below 2^53.
pg.types.setTypeParser(20, (v) => Number(v));

export type DatabaseTarget =
  | { kind: 'sqlite'; path: string }
  /**
   * `schema` isolates a database inside one PostgreSQL database (used by tests). `migrationUrl`
   * (MIGRATION_DATABASE_URL) is a role that owns the schema: migrations run as it, and it grants
   * `url`'s role data rights only (docs/postgres-roles.md).
   */
  | {
      kind: 'postgres';
      url: string;
      schema?: string;
      migrationUrl?: string | null;
      /** How long a cached API-key lookup may be served (ADR 0025); 0 turns the cache off. Default 30 s. */
      credentialCacheMs?: number;
    };

export async function openDatabase(target: DatabaseTarget, opts: { poolSize?: number } = {}): Promise<Database> {
  let db: Kysely<DB>;
  let pool: pg.Pool | null = null;
  let direct: SqliteDirect | null = null;
  let credentialCache: CredentialCache<unknown> | null = null;
  let listener: ReturnType<typeof listenForCredentialChanges> | null = null;
  if (target.kind === 'sqlite') {
    if (target.path !== ':memory:') mkdirSync(dirname(target.path), { recursive: true });
    const opened = openSqlite(target.path);
    direct = opened.direct;
    db = new Kysely<DB>({ dialect: new SqliteDialect({ database: opened.db }) });
  } else {
    let options: string | undefined;
    if (target.schema) {
      if (!/^[a-z_][a-z0-9_]*$/.test(target.schema)) throw new Error('invalid schema name');
      const c = new pg.Client({ connectionString: target.migrationUrl ?? target.url });
      await c.connect();
      // Created only when missing: a migration role may own an existing schema without CREATE on the database.
      const exists = await c.query('select 1 from pg_namespace where nspname = $1', [target.schema]);
      if (exists.rowCount === 0) await c.query(`create schema if not exists ${target.schema}`);
      await c.end();
      options = `-c search_path=${target.schema}`;
    }
    pool = new pg.Pool({ connectionString: target.url, max: opts.poolSize ?? 10, ...(options ? { options } : {}) });
    // An idle client that loses its connection must not crash the process.
    pool.on('error', () => undefined);
    const cacheMs = target.credentialCacheMs ?? 30_000;
    if (cacheMs > 0) credentialCache = new CredentialCache<unknown>(cacheMs);
    db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }), plugins: credentialCache ? [new CredentialWritePlugin(credentialCache)] : [] });
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
    async close() {
      await listener?.stop();
      await db.destroy();
    },
  };
  const sqlite = direct;
  if (sqlite) {
    database.sqliteDirect = (fn) =>
      db.connection().execute(async () => {
        if (sqlite.inTransaction()) throw new Error('sqliteDirect: a transaction is open on the connection');
        try {
          return fn(sqlite);
        } finally {
          // fn's own error handling should have closed it; never hand the connection back inside a transaction.
          if (sqlite.inTransaction()) sqlite.run('rollback');
        }
      });
  }
  const named = pool;
  if (named) database.prepared = async (name, text, values) => (await named.query({ name, text, values })).rows;
  if (target.kind === 'postgres' && target.migrationUrl) {
    await migrateAsOwner(target.migrationUrl, database, target.schema);
  } else {
    await migrate(database, target.kind === 'postgres' ? target.schema : undefined);
  }
  if (target.kind === 'postgres' && credentialCache) {
    // Served only while this connection listens; until then (or if it never connects) every request looks its key up.
    listener = listenForCredentialChanges({ connectionString: target.url }, credentialCache);
    await listener.ready;
    database.credentialCache = credentialCache;
  }
  return database;
}

/** Tables whose rows may be added and read, never changed: the service role gets no more. */
const APPEND_ONLY_TABLES = ['credit_ledger', 'audit_records'] as const;
const IDENT = /^[A-Za-z_][A-Za-z0-9_$]*$/;

/**
 * Runs the migrations over a connection of the migration role (which then owns the tables), and
 * grants the service role (`service`'s current_user) data rights on the schema: read and write,
 * except UPDATE, DELETE and TRUNCATE on the append-only tables. Not owning the tables, the service
 * role cannot ALTER or DROP them or their triggers.
 */
async function migrateAsOwner(migrationUrl: string, service: Database, schema?: string): Promise<void> {
  const who = await sql<{ role: string; schema: string | null }>`select current_user as role, current_schema() as schema`.execute(service.db);
  const serviceRole = who.rows[0]?.role;
  const target = schema ?? who.rows[0]?.schema;
  if (!serviceRole || !target || !IDENT.test(serviceRole) || !IDENT.test(target)) {
    throw new Error('MIGRATION_DATABASE_URL: cannot tell the service role and schema of DATABASE_URL');
  }
  const pool = new pg.Pool({ connectionString: migrationUrl, max: 2, options: `-c search_path=${target}` });
  pool.on('error', () => undefined);
  const ownerDb = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  try {
    const owner = await sql<{ role: string }>`select current_user as role`.execute(ownerDb);
    await migrate({ ...service, db: ownerDb }, target);
    if (owner.rows[0]?.role === serviceRole) return;
    const q = (text: string) => sql.raw(text).execute(ownerDb);
    await q(`grant usage on schema "${target}" to "${serviceRole}"`);
    await q(`grant select, insert, update, delete on all tables in schema "${target}" to "${serviceRole}"`);
    for (const t of APPEND_ONLY_TABLES) await q(`revoke update, delete, truncate on "${target}"."${t}" from "${serviceRole}"`);
  } finally {
    await ownerDb.destroy();
  }
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
