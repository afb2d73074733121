import { CompiledQuery, type Insertable, type Kysely } from 'kysely';
import type { Dialect } from './dialect.ts';
import type { DB } from './schema.ts';

/**
 * Multi-row INSERTs for the metering hot path (ADR 0014), without the query builder: Kysely
 * builds and compiles a node per value, which for a group's 64 usage events × 17 columns cost
 * more than SQLite's own work. The statement text depends only on the table, the columns, the
 * number of rows and the dialect, so it is built once and reused (and SQLite's statement cache
 * in src/db/sqlite-adapter.ts then prepares it once). Values are bound as parameters, as always.
 */
const texts = new Map<string, string>();
const MAX_TEXTS = 512;

export function insertText(dialect: Dialect, table: string, columns: readonly string[], rows: number): string {
  const key = `${dialect}\u0000${table}\u0000${columns.join(',')}\u0000${rows}`;
  let text = texts.get(key);
  if (text === undefined) {
    const width = columns.length;
    const tuple = (r: number): string => `(${columns.map((_, c) => (dialect === 'postgres' ? `$${r * width + c + 1}` : '?')).join(', ')})`;
    text = `insert into "${table}" (${columns.map((c) => `"${c}"`).join(', ')}) values ${Array.from({ length: rows }, (_, r) => tuple(r)).join(', ')}`;
    if (texts.size >= MAX_TEXTS) texts.delete(texts.keys().next().value as string);
    texts.set(key, text);
  }
  return text;
}

/** The bound values of `rows` for `insertText`, row after row in the order of `columns` (missing → NULL). */
export function insertValues(columns: readonly string[], rows: readonly object[]): unknown[] {
  const params: unknown[] = new Array(rows.length * columns.length);
  let k = 0;
  for (const row of rows) {
    for (const c of columns) params[k++] = (row as Record<string, unknown>)[c] ?? null;
  }
  return params;
}

/**
 * Inserts `rows` into `table`, giving every column of `columns` (a value missing from a row is
 * written as NULL: list only columns whose every row has a value, or whose default is NULL).
 */
export async function insertRows<T extends keyof DB & string>(
  db: Kysely<DB>,
  dialect: Dialect,
  table: T,
  columns: readonly (keyof DB[T] & string)[],
  rows: readonly Insertable<DB[T]>[],
): Promise<void> {
  if (rows.length === 0) return;
  await db.executeQuery(CompiledQuery.raw(insertText(dialect, table, columns, rows.length), insertValues(columns, rows)));
}
