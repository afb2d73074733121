import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, test } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../../src/db/index.ts';

/**
 * SQLite's WAL is checkpointed by a worker thread's connection, not inside the commits of the
 * event loop (src/db/sqlite-adapter.ts, ADR 0014): the pages reach the database file without any
 * checkpoint on the main connection, and closing leaves no WAL behind.
 */
const dir = mkdtempSync(join(tmpdir(), 'tsfm-ckpt-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('the background connection copies committed pages into the database file; close removes the WAL', async () => {
  const path = join(dir, 'x.sqlite');
  const database = await openDatabase({ kind: 'sqlite', path });
  const auto = await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(database.db);
  assert.equal(auto.rows[0]?.wal_autocheckpoint, 0, 'the event loop never checkpoints');
  await sql`create table filler (id integer primary key, body text not null)`.execute(database.db);
  const before = statSync(path).size;
  // About 4 MB in 40 commits: with the automatic checkpoint off, only the worker moves it into the file.
  const body = 'x'.repeat(1000);
  for (let c = 0; c < 40; c++) {
    await database.db.transaction().execute(async (trx) => {
      for (let i = 0; i < 100; i++) await sql`insert into filler (body) values (${body})`.execute(trx);
    });
  }
  let grown = statSync(path).size;
  for (let i = 0; i < 100 && grown < before + 3_000_000; i++) {
    await sleep(50);
    grown = statSync(path).size;
  }
  assert.ok(grown >= before + 3_000_000, `database file ${before} → ${grown} bytes: the WAL was not checkpointed`);
  const rows = await sql<{ n: number }>`select count(*) as n from filler`.execute(database.db);
  assert.equal(Number(rows.rows[0]?.n), 4000);
  await database.close();
  assert.equal(existsSync(`${path}-wal`), false, 'the last connection to close checkpoints and removes the WAL');
  const again = await openDatabase({ kind: 'sqlite', path });
  assert.equal(Number((await sql<{ n: number }>`select count(*) as n from filler`.execute(again.db)).rows[0]?.n), 4000);
  await again.close();
});
