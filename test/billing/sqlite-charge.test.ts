import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Principal } from '../../src/accounts/credentials.ts';
import { createLedgerGroups, type ChargeInput } from '../../src/billing/group-commit.ts';
import { type Database, openDatabase } from '../../src/db/index.ts';
import { newId } from '../../src/shared/ids.ts';
import { DB_KIND } from '../helpers/app.ts';

/**
 * The SQLite charge lane's common case runs as one synchronous transaction (ADR 0023); everything
 * else (balance short, an alert falling due) is rolled back and takes the Kysely group of ADR 0014.
 * Driven at the ledger-group level, so the number of synchronous transactions can be counted.
 */
describe('SQLite charges: one synchronous transaction, the general path otherwise', { skip: DB_KIND !== 'sqlite' && 'SQLite only' }, () => {
  let dir: string;
  let database: Database;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sqlite-charge-'));
    database = await openDatabase({ kind: 'sqlite', path: join(dir, 'db.sqlite') });
  });
  after(async () => {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function account(balance: number, threshold: number | null = null): Promise<string> {
    const id = newId('usr');
    const now = Date.now();
    await database.db
      .insertInto('users')
      .values({ id, email: `${id}@example.com`, password_hash: 'x', created_at: now, updated_at: now, role: 'user' } as never)
      .execute();
    await database.db
      .insertInto('billing_accounts')
      .values({ user_id: id, balance, billing_active: 0, low_balance_threshold: threshold, created_at: now, updated_at: now } as never)
      .execute();
    // The grant the balance came from, so the books balance.
    await database.db
      .insertInto('credit_ledger')
      .values({ id: newId('cle'), user_id: id, kind: 'grant', amount: balance, metered_credits: 0, description: 'test', created_at: now } as never)
      .execute();
    return id;
  }
  const charge = (userId: string, credits = 3): ChargeInput => {
    const now = Date.now();
    const requestId = newId('req');
    const principal = { user: { id: userId }, kind: 'api_key', credentialId: 'key_test' } as unknown as Principal;
    return {
      reserve: { userId, requestId, credits, now, ttlMs: 60_000, keyId: 'key_test' },
      settlement: {
        principal,
        requestId,
        source: 'api',
        model: 'naive',
        usage: { input_tokens: 12, output_tokens: 48, total_tokens: 60 },
        credits,
        latencyMs: 0.1,
        creditPriceNanoUsd: 100_000,
        now,
      },
    };
  };
  async function books(userId: string): Promise<{ balance: number; ledger: number; events: number; charged: number }> {
    const acct = await database.db.selectFrom('billing_accounts').select('balance').where('user_id', '=', userId).executeTakeFirstOrThrow();
    const ledger = await database.db.selectFrom('credit_ledger').select('amount').where('user_id', '=', userId).execute();
    const events = await database.db.selectFrom('usage_events').select('credits').where('user_id', '=', userId).execute();
    return {
      balance: Number(acct.balance),
      ledger: ledger.reduce((a, r) => a + Number(r.amount), 0),
      events: events.length,
      charged: events.reduce((a, r) => a + Number(r.credits), 0),
    };
  }
  function groups(): { charge: (c: ChargeInput) => Promise<unknown>; direct: () => number } {
    let direct = 0;
    const counted: NonNullable<Database['sqliteDirect']> = (fn) => {
      direct++;
      return database.sqliteDirect!(fn);
    };
    const g = createLedgerGroups(database.db, 'sqlite', undefined, counted);
    return { charge: (c) => g.charge(c), direct: () => direct };
  }

  test('a group the balances cover: one synchronous transaction for two accounts; rows, balances and cost figures as the general path writes them', async () => {
    const a = await account(1000);
    const b = await account(1000);
    const g = groups();
    const settled = (await Promise.all([...Array.from({ length: 5 }, () => g.charge(charge(a))), ...Array.from({ length: 3 }, () => g.charge(charge(b)))])) as {
      credits: number;
      balanceAfter: number;
      costNanoUsd: number;
    }[];
    assert.equal(g.direct(), 1);
    assert.deepEqual(
      settled.map((s) => s.balanceAfter),
      [...Array(5).fill(985), ...Array(3).fill(991)],
    );
    assert.ok(settled.every((s) => s.credits === 3 && s.costNanoUsd === 300_000));
    assert.deepEqual(await books(a), { balance: 985, ledger: 985, events: 5, charged: 15 });
    assert.deepEqual(await books(b), { balance: 991, ledger: 991, events: 3, charged: 9 });
  });

  test('a balance that does not cover the group: rolled back, decided call by call (402 for the rest), books balanced', async () => {
    const a = await account(10);
    const g = groups();
    const outcomes = await Promise.allSettled(Array.from({ length: 5 }, () => g.charge(charge(a))));
    assert.equal(g.direct(), 1);
    assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 3);
    for (const o of outcomes.filter((o) => o.status === 'rejected')) assert.equal((o.reason as { code?: string }).code, 'billing_required');
    assert.deepEqual(await books(a), { balance: 1, ledger: 1, events: 3, charged: 9 });
  });

  test('a low-balance alert falling due: rolled back, the general path claims it once', async () => {
    const a = await account(100, 95);
    const g = groups();
    const settled = (await Promise.all(Array.from({ length: 4 }, () => g.charge(charge(a))))) as { lowBalance?: unknown }[];
    assert.equal(settled.filter((s) => s.lowBalance).length, 1);
    const acct = await database.db.selectFrom('billing_accounts').select('low_balance_alerted_at').where('user_id', '=', a).executeTakeFirstOrThrow();
    assert.notEqual(acct.low_balance_alerted_at, null);
    assert.deepEqual(await books(a), { balance: 88, ledger: 88, events: 4, charged: 12 });
  });
});
