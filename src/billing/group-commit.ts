import { CompiledQuery, sql, type Insertable, type Kysely } from 'kysely';
import type { DB, MeteredUsageOutboxTable, UsageEventsTable, CreditLedgerTable } from '../db/schema.ts';
import { AppError } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { insertRows, insertText, insertValues } from '../db/bulk.ts';
import type { Dialect } from '../db/dialect.ts';
import type { Database } from '../db/index.ts';
import { claimLowBalanceAlerts, type LowBalance } from './alerts.ts';
import { debitEntryRow, getBillingAccount, reserveIn, settlementSplit, usageEventRow, type HoldRow, type Settlement } from './ledger.ts';

/**
 * Group commit for the credit ledger (docs/adr/0014-group-commit-metering.md): the holds of
 * every call in flight share one transaction, and so do their debits + usage events (and their
 * releases). A caller's promise settles only after the transaction holding its rows committed,
 * so nothing is answered before its usage record is durable, exactly as with one transaction per
 * call; what changes is that N calls pay for one BEGIN/COMMIT (one WAL sync on SQLite, one
 * round trip each on PostgreSQL) and a handful of multi-row statements instead of N of each.
 *
 * Each lane runs at most one transaction at a time; calls that arrive while it runs form the
 * next group (up to MAX_GROUP). A lone call waits only for the current turn of the event loop
 * (setImmediate) before its transaction starts. Per-call refusals (402 billing_required, a hold
 * the sweeper already released) fail that call alone: they are decided before anything of that
 * call is written. A database error fails the whole group, and rolls all of it back.
 */
type Db = Kysely<DB>;

/** Calls per group, so rows per multi-row INSERT: well inside SQLite's and PostgreSQL's bound-parameter limits. */
const MAX_GROUP = 256;

const HOLD_COLUMNS = ['id', 'user_id', 'request_id', 'free_credits', 'metered_credits', 'created_at', 'expires_at', 'key_id'] as const;
const USAGE_EVENT_COLUMNS = [
  'id',
  'user_id',
  'request_id',
  'created_at',
  'model',
  'source',
  'credential_kind',
  'key_id',
  'input_tokens',
  'output_tokens',
  'total_tokens',
  'credits',
  'free_credits',
  'metered_credits',
  'cost_nano_usd',
  'latency_ms',
  'status',
] as const;
const LEDGER_DEBIT_COLUMNS = ['id', 'user_id', 'kind', 'amount', 'metered_credits', 'request_id', 'usage_event_id', 'description', 'created_at'] as const;

type Outcome<O> = { ok: true; value: O } | { ok: false; error: unknown };

interface Pending<I, O> {
  input: I;
  resolve: (value: O) => void;
  reject: (err: unknown) => void;
}

/** Applies a group: by default inside one transaction (`inTransaction`); a lane may manage its own. */
type Apply<I, O> = (db: Db, inputs: I[]) => Promise<Outcome<O>[]>;

const inTransaction =
  <I, O>(apply: Apply<I, O>): Apply<I, O> =>
  (db, inputs) =>
    db.transaction().execute((trx) => apply(trx, inputs));

/** A queue whose waiting items are applied together (one transaction per group). */
export class CommitLane<I, O> {
  private queue: Pending<I, O>[] = [];
  private running = false;
  private scheduled = false;
  private readonly db: Db;
  private readonly apply: Apply<I, O>;

  constructor(db: Db, apply: Apply<I, O>) {
    this.db = db;
    this.apply = apply;
  }

  submit(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      this.kick();
    });
  }

  private kick(): void {
    if (this.running || this.scheduled) return;
    this.scheduled = true;
    // Let every call started in this turn of the event loop (a batch's items) join the group.
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (this.running || this.queue.length === 0) return;
    this.running = true;
    const group = this.queue.splice(0, MAX_GROUP);
    try {
      const outcomes = await this.apply(
        this.db,
        group.map((g) => g.input),
      );
      group.forEach((g, i) => {
        const o = outcomes[i]!;
        if (o.ok) g.resolve(o.value);
        else g.reject(o.error);
      });
    } catch (err) {
      for (const g of group) g.reject(err);
    } finally {
      this.running = false;
      if (this.queue.length > 0) this.kick();
    }
  }
}

export interface HoldInput {
  userId: string;
  requestId: string;
  credits: number;
  now: number;
  ttlMs: number;
  /** The API key of the call: its open holds count towards its monthly limit. */
  keyId?: string | null;
  /** Set when the key has a monthly credit limit: check it, under the key row's lock, before reserving. */
  keyBudget?: { monthStart: number };
}

/**
 * Locks the rows of the group's keys that have a monthly limit and reads their limits as they are
 * now (ADR 0016). A no-op UPDATE takes the row lock (PostgreSQL: until commit, so a hold of the
 * same key in another transaction, in this process or another, waits and then sees this one's
 * hold; SQLite: transactions are serial anyway). Keys are locked first and in id order, before
 * any account row, so two groups can never wait on each other in a cycle.
 */
async function lockKeyLimits(trx: Db, inputs: HoldInput[]): Promise<Map<string, number | null>> {
  const ids = [...new Set(inputs.filter((h) => h.keyBudget && h.keyId).map((h) => h.keyId as string))].sort();
  const limits = new Map<string, number | null>();
  for (const id of ids) {
    const key = await trx
      .updateTable('api_keys')
      .set({ monthly_credit_limit: sql`monthly_credit_limit` })
      .where('id', '=', id)
      .returning('monthly_credit_limit')
      .executeTakeFirst();
    limits.set(id, key?.monthly_credit_limit == null ? null : Number(key.monthly_credit_limit));
  }
  return limits;
}

/**
 * A key's monthly limit, checked under the lock taken by `lockKeyLimits`: spent = this month's
 * (UTC) usage events of the key + its open holds + what this group already held for it. Returns
 * the refusal, or null when the call fits.
 */
async function keyBudgetRefusal(trx: Db, h: HoldInput, limits: Map<string, number | null>, inGroup: Map<string, number>): Promise<AppError | null> {
  if (!h.keyId || !h.keyBudget) return null;
  const limit = limits.get(h.keyId);
  if (limit == null) return null;
  const { keyId, keyBudget } = h;
  const spent = (await keySpentThisMonth(trx, keyId, keyBudget.monthStart)) + (inGroup.get(keyId) ?? 0);
  return keyBudgetCheck(limit, spent, h.credits);
}

/**
 * Credits a key has spent this month (UTC usage events) plus what it holds for calls in flight.
 * One statement, so one snapshot: a settle committing meanwhile turns a hold into a usage event
 * atomically, and two statements could see it in neither (PostgreSQL's read committed).
 */
export async function keySpentThisMonth(db: Db, keyId: string, monthStart: number): Promise<number> {
  const r = await db
    .selectNoFrom((eb) => [
      eb
        .selectFrom('usage_events')
        .select((e) => e.fn.sum<string | number>('credits').as('s'))
        .where('key_id', '=', keyId)
        .where('created_at', '>=', monthStart)
        .as('used'),
      eb
        .selectFrom('credit_holds')
        .select((e) => e.fn.sum<string | number>(sql`free_credits + metered_credits`).as('s'))
        .where('key_id', '=', keyId)
        .as('held'),
    ])
    .executeTakeFirst();
  return Number(r?.used ?? 0) + Number(r?.held ?? 0);
}

/** The refusal of a call costing `credits` on a key with `limit` of which `spent` is used, or null (the hold and the quote share it). */
export function keyBudgetCheck(limit: number, spent: number, credits: number): AppError | null {
  if (spent + credits <= limit) return null;
  return new AppError(
    'key_budget_exceeded',
    `This API key's monthly_credit_limit is ${limit} credits; ${spent} are spent or held this month (UTC) and this call costs ${credits} (PATCH /api/account/keys/{key_id} to raise it)`,
  );
}

/** What one call takes from its account: prepaid (free) credits and metered credits. */
type Split = { free: number; metered: number };

/** An account as its guarded debit left it: the balance, and whether its low-balance alert is now due (threshold set, armed, crossed). */
interface AccountAfter {
  balance: number;
  alertDue: boolean;
}

/** One guarded debit of an account's total for the group, returning what the alert check needs (no builder: the hot path). */
const GUARDED_DEBIT: Record<Dialect, string> = {
  sqlite:
    'update billing_accounts set balance = balance - ?, updated_at = ? where user_id = ? and balance >= ? returning balance, low_balance_threshold, low_balance_alerted_at',
  postgres:
    'update billing_accounts set balance = balance - $1, updated_at = $2 where user_id = $3 and balance >= $4 returning balance, low_balance_threshold, low_balance_alerted_at',
};

/**
 * Reserves the calls of a group inside its transaction. Per account, the calls' total is taken
 * with one guarded update when the balance covers it (the common case); otherwise the calls are
 * reserved one by one in arrival order with the single-call logic (free credits first, then
 * metered, or 402), so a group never lets an account spend more than one-by-one reservation
 * would. Calls of keys with a monthly limit go one by one, their limit checked under the key
 * row's lock. A refusal fails its call alone (it wrote nothing); a database error fails the group.
 */
async function reserveGroup(trx: Db, dialect: Dialect, inputs: HoldInput[]): Promise<{ splits: Outcome<Split>[]; after: Map<string, AccountAfter> }> {
  const out: Outcome<Split>[] = new Array<Outcome<Split>>(inputs.length);
  const after = new Map<string, AccountAfter>();
  const byUser = new Map<string, number[]>();
  inputs.forEach((h, i) => {
    const list = byUser.get(h.userId);
    if (list) list.push(i);
    else byUser.set(h.userId, [i]);
  });
  const keyLimits = await lockKeyLimits(trx, inputs);
  const keyHeld = new Map<string, number>();
  for (const [userId, idx] of byUser) {
    let total = 0;
    let now = 0;
    for (const i of idx) {
      total += inputs[i]!.credits;
      now = Math.max(now, inputs[i]!.now);
    }
    // Calls of keys with a monthly limit go one by one (their limit is checked under a lock first).
    const budgeted = idx.some((i) => inputs[i]!.keyBudget);
    const all = budgeted
      ? undefined
      : (
          await trx.executeQuery<{ balance: number | string; low_balance_threshold: number | string | null; low_balance_alerted_at: number | string | null }>(
            CompiledQuery.raw(GUARDED_DEBIT[dialect], [total, now, userId, total]),
          )
        ).rows[0];
    if (all) {
      for (const i of idx) out[i] = { ok: true, value: { free: inputs[i]!.credits, metered: 0 } };
      const balance = Number(all.balance);
      const threshold = all.low_balance_threshold == null ? null : Number(all.low_balance_threshold);
      after.set(userId, { balance, alertDue: threshold !== null && all.low_balance_alerted_at == null && balance < threshold });
      continue;
    }
    for (const i of idx) {
      const h = inputs[i]!;
      try {
        const refusal = await keyBudgetRefusal(trx, h, keyLimits, keyHeld);
        if (refusal) throw refusal;
        const split = await reserveIn(trx, userId, h.credits, h.now);
        if (h.keyId) keyHeld.set(h.keyId, (keyHeld.get(h.keyId) ?? 0) + h.credits);
        out[i] = { ok: true, value: split };
      } catch (err) {
        // Refusals write nothing; anything else is a database fault and fails the group.
        if (!(err instanceof AppError)) throw err;
        out[i] = { ok: false, error: err };
      }
    }
  }
  return { splits: out, after };
}

/** Holds for a group: the group's reservations (`reserveGroup`), then one multi-row insert of the holds. */
async function applyHolds(trx: Db, dialect: Dialect, inputs: HoldInput[]): Promise<Outcome<HoldRow>[]> {
  const { splits } = await reserveGroup(trx, dialect, inputs);
  const rows: HoldRow[] = [];
  const out = splits.map((o, i): Outcome<HoldRow> => {
    if (!o.ok) return o;
    const h = inputs[i]!;
    const r: HoldRow = {
      id: newId('hld'),
      user_id: h.userId,
      request_id: h.requestId,
      free_credits: o.value.free,
      metered_credits: o.value.metered,
      created_at: h.now,
      expires_at: h.now + h.ttlMs,
      key_id: h.keyId ?? null,
    };
    rows.push(r);
    return { ok: true, value: r };
  });
  await insertRows(trx, dialect, 'credit_holds', HOLD_COLUMNS, rows);
  return out;
}

export interface SettleInput {
  hold: HoldRow;
  settlement: Settlement;
}

/** A settled call: its usage event and what it took (the cost headers). */
export interface Settled {
  usageEventId: string;
  credits: number;
  costNanoUsd: number;
  /** The account's prepaid balance when the group's transaction wrote its refunds. */
  balanceAfter: number | null;
  /** Set on the one call whose debit took the account below its low-balance threshold (mail it). */
  lowBalance?: LowBalance;
}

/** One call to debit: what was reserved for it (a hold, or a reservation made in this transaction) and its settlement. */
interface Debit {
  reserved: Pick<HoldRow, 'user_id' | 'free_credits' | 'metered_credits'>;
  settlement: Settlement;
}

/**
 * Writes the debits of a group (after their credits were reserved in this transaction or by
 * their holds): refunds summed per account, then one insert each for the usage events, ledger
 * entries and metered-usage outbox rows; then the balances after (cost headers) and the
 * low-balance alerts. Fills `out[i]` for every debit `i` of `at`.
 */
async function writeDebits(
  trx: Db,
  dialect: Dialect,
  debits: Debit[],
  at: number[],
  out: Outcome<Settled>[],
  known: Map<string, AccountAfter> = new Map(),
): Promise<void> {
  if (debits.length === 0) return;
  const refunds = new Map<string, { credits: number; now: number }>();
  const events: Insertable<UsageEventsTable>[] = [];
  const entries: Insertable<CreditLedgerTable>[] = [];
  const meteredRows: { userId: string; usageEventId: string; credits: number; now: number }[] = [];
  debits.forEach(({ reserved, settlement: s }, k) => {
    const { actual, refund, free, metered } = settlementSplit(reserved, s.credits);
    if (refund > 0) {
      const r = refunds.get(reserved.user_id) ?? { credits: 0, now: 0 };
      refunds.set(reserved.user_id, { credits: r.credits + refund, now: Math.max(r.now, s.now) });
    }
    const usageEventId = newId('use');
    events.push(usageEventRow(reserved, s, usageEventId, { actual, free, metered }));
    entries.push(debitEntryRow(reserved.user_id, s, usageEventId, { free, metered }));
    if (metered > 0) meteredRows.push({ userId: reserved.user_id, usageEventId, credits: metered, now: s.now });
    out[at[k]!] = { ok: true, value: { usageEventId, credits: actual, costNanoUsd: actual * s.creditPriceNanoUsd, balanceAfter: null } };
  });
  for (const [userId, r] of refunds) {
    await trx
      .updateTable('billing_accounts')
      .set({ balance: sql`balance + ${r.credits}`, updated_at: r.now })
      .where('user_id', '=', userId)
      .execute();
  }
  await insertRows(trx, dialect, 'usage_events', USAGE_EVENT_COLUMNS, events);
  await insertRows(trx, dialect, 'credit_ledger', LEDGER_DEBIT_COLUMNS, entries);
  if (meteredRows.length > 0) {
    const accounts = new Map<string, Awaited<ReturnType<typeof getBillingAccount>>>();
    const outbox: Insertable<MeteredUsageOutboxTable>[] = [];
    for (const m of meteredRows) {
      if (!accounts.has(m.userId)) accounts.set(m.userId, await getBillingAccount(trx, m.userId));
      const acct = accounts.get(m.userId);
      outbox.push({
        id: newId('mub'),
        user_id: m.userId,
        provider: acct?.provider ?? 'local',
        customer_id: acct?.customer_id ?? null,
        usage_event_id: m.usageEventId,
        credits: m.credits,
        created_at: m.now,
        reported_at: null,
        attempts: 0,
        last_error: null,
      });
    }
    await trx.insertInto('metered_usage_outbox').values(outbox).execute();
  }
  // The balance after this group's debits (x-credits-remaining): what the guarded debit returned,
  // for accounts debited whole and not refunded since; one read for the others.
  const users = [...new Set(debits.map((d) => d.reserved.user_id))];
  const unknown = users.filter((u) => !known.has(u) || refunds.has(u));
  const balances = new Map<string, number>();
  for (const u of users) if (!unknown.includes(u)) balances.set(u, known.get(u)!.balance);
  if (unknown.length > 0) {
    for (const r of await trx.selectFrom('billing_accounts').select(['user_id', 'balance']).where('user_id', 'in', unknown).execute()) {
      balances.set(r.user_id, Number(r.balance));
    }
  }
  debits.forEach(({ reserved }, k) => {
    const o = out[at[k]!];
    if (o?.ok) o.value.balanceAfter = balances.get(reserved.user_id) ?? null;
  });
  // The low-balance alert, claimed at most once per account (guarded update), by the first call of
  // the account in this group; skipped for an account whose debit showed no alert due.
  const claim = users.filter((u) => unknown.includes(u) || known.get(u)!.alertDue);
  const alerts = await claimLowBalanceAlerts(trx, claim, Math.max(...debits.map((d) => d.settlement.now)));
  for (const a of alerts) {
    const k = debits.findIndex((d) => d.reserved.user_id === a.userId);
    const o = out[at[k]!];
    if (o?.ok) o.value.lowBalance = a;
  }
}

/**
 * Debits + usage events for a group: one DELETE … RETURNING takes the holds (a hold the sweeper
 * released fails its call: no 200 without its debit), then `writeDebits`.
 */
async function applySettles(trx: Db, dialect: Dialect, inputs: SettleInput[]): Promise<Outcome<Settled>[]> {
  const ids = inputs.map((s) => s.hold.id);
  const taken = new Set((await trx.deleteFrom('credit_holds').where('id', 'in', ids).returning('id').execute()).map((r) => r.id));
  const out: Outcome<Settled>[] = new Array<Outcome<Settled>>(inputs.length);
  const debits: Debit[] = [];
  const at: number[] = [];
  inputs.forEach(({ hold, settlement }, i) => {
    if (!taken.has(hold.id)) {
      out[i] = { ok: false, error: new Error(`credit hold ${hold.id} expired before the call finished`) };
      return;
    }
    debits.push({ reserved: hold, settlement });
    at.push(i);
  });
  await writeDebits(trx, dialect, debits, at, out);
  return out;
}

/** A call charged in one step (reserve and debit together): its reservation's fields and its settlement. */
export interface ChargeInput {
  reserve: HoldInput;
  settlement: Settlement;
}

/**
 * Charges for a group of calls whose work already ran (inline jobs, ADR 0014): the reservations
 * of `reserveGroup` (a refusal, 402, fails its call alone and writes nothing for it), then
 * `writeDebits` for the others, in the same transaction: no hold row is written or deleted.
 */
async function applyCharges(trx: Db, dialect: Dialect, inputs: ChargeInput[]): Promise<Outcome<Settled>[]> {
  const { splits, after } = await reserveGroup(
    trx,
    dialect,
    inputs.map((c) => c.reserve),
  );
  const out: Outcome<Settled>[] = new Array<Outcome<Settled>>(inputs.length);
  const debits: Debit[] = [];
  const at: number[] = [];
  splits.forEach((o, i) => {
    if (!o.ok) {
      out[i] = o;
      return;
    }
    const c = inputs[i]!;
    debits.push({ reserved: { user_id: c.reserve.userId, free_credits: o.value.free, metered_credits: o.value.metered }, settlement: c.settlement });
    at.push(i);
  });
  await writeDebits(trx, dialect, debits, at, out, after);
  return out;
}

/**
 * The one statement of PostgreSQL's common case (`chargesPostgres`): for each account of the
 * group, one guarded UPDATE takes the calls' total when the balance covers it; the usage events
 * and ledger entries of the accounts so debited are inserted by the same statement (rows passed
 * as one array per column, so the text does not depend on the number of rows). One statement is
 * one transaction: all of an account's rows are written with its debit, or none are.
 */
/** Its name as a prepared statement (a new text needs a new name: connections keep the old one). */
const CHARGE_STATEMENT_NAME = 'tsfm_charge_v1';
const CHARGE_STATEMENT = `
with v as (
  select * from unnest($1::text[], $2::bigint[]) as v(user_id, total)
), debit as (
  update billing_accounts b set balance = b.balance - v.total, updated_at = $3::bigint
  from v where b.user_id = v.user_id and b.balance >= v.total
  returning b.user_id, b.balance, b.low_balance_threshold, b.low_balance_alerted_at
), e as (
  select * from unnest(
    $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[], $10::text[], $11::text[],
    $12::bigint[], $13::bigint[], $14::bigint[], $15::bigint[], $16::bigint[], $17::bigint[], $18::bigint[],
    $19::double precision[], $20::text[], $21::text[]
  ) as e(id, user_id, request_id, created_at, model, source, credential_kind, key_id,
         input_tokens, output_tokens, total_tokens, credits, free_credits, metered_credits, cost_nano_usd,
         latency_ms, ledger_id, description)
  where e.user_id in (select user_id from debit)
), events as (
  insert into usage_events (id, user_id, request_id, created_at, model, source, credential_kind, key_id,
    input_tokens, output_tokens, total_tokens, credits, free_credits, metered_credits, cost_nano_usd, latency_ms, status)
  select id, user_id, request_id, created_at, model, source, credential_kind, key_id,
    input_tokens, output_tokens, total_tokens, credits, free_credits, metered_credits, cost_nano_usd, latency_ms, 'succeeded'
  from e
), entries as (
  insert into credit_ledger (id, user_id, kind, amount, metered_credits, request_id, usage_event_id, description, created_at)
  select ledger_id, user_id, 'debit', -free_credits, metered_credits, request_id, id, description, created_at from e
)
select user_id, balance, low_balance_threshold, low_balance_alerted_at from debit`;

/**
 * Charges on PostgreSQL, where each statement is a round trip: the accounts whose calls have no
 * key budget go through CHARGE_STATEMENT (one round trip for the whole group instead of BEGIN,
 * the debit, two inserts, the balance read and COMMIT); the calls of any account it did not debit
 * (balance short: metered billing or 402, decided call by call) or that carry a key budget take
 * the transaction of `applyCharges`, as on SQLite. A low-balance alert the debit made due is
 * claimed after, by the same guarded update (once per account, across processes).
 */
function chargesPostgres(inTransaction: Apply<ChargeInput, Settled>, prepared: Database['prepared']): Apply<ChargeInput, Settled> {
  return async (db, inputs) => {
    const out: Outcome<Settled>[] = new Array<Outcome<Settled>>(inputs.length);
    const budgeted = new Set(inputs.filter((c) => c.reserve.keyBudget).map((c) => c.reserve.userId));
    const totals = new Map<string, number>();
    let now = 0;
    for (const c of inputs) {
      now = Math.max(now, c.reserve.now);
      if (!budgeted.has(c.reserve.userId)) totals.set(c.reserve.userId, (totals.get(c.reserve.userId) ?? 0) + c.reserve.credits);
    }
    const debited = new Map<string, { balance: number; alert: boolean }>();
    if (totals.size > 0) {
      const cols: unknown[][] = Array.from({ length: 18 }, () => []);
      const ids: string[] = [];
      inputs.forEach((c, i) => {
        ids[i] = '';
        if (!totals.has(c.reserve.userId)) return;
        const id = newId('use');
        ids[i] = id;
        const s = c.settlement;
        const e = usageEventRow({ user_id: c.reserve.userId }, s, id, { actual: c.reserve.credits, free: c.reserve.credits, metered: 0 });
        const row = [
          e.id,
          e.user_id,
          e.request_id,
          e.created_at,
          e.model,
          e.source,
          e.credential_kind,
          e.key_id ?? null,
          e.input_tokens,
          e.output_tokens,
          e.total_tokens,
          e.credits,
          e.free_credits,
          e.metered_credits,
          e.cost_nano_usd,
          e.latency_ms,
          newId('cle'),
          `${s.source} ${s.model}`,
        ];
        for (const [k, v] of row.entries()) cols[k]!.push(v);
      });
      type Debited = {
        user_id: string;
        balance: number | string;
        low_balance_threshold: number | string | null;
        low_balance_alerted_at: number | string | null;
      };
      const values = [[...totals.keys()], [...totals.values()], now, ...cols];
      // A named statement where the database offers one: parsed and planned once per connection.
      const rows = prepared
        ? ((await prepared(CHARGE_STATEMENT_NAME, CHARGE_STATEMENT, values)) as Debited[])
        : (await db.executeQuery<Debited>(CompiledQuery.raw(CHARGE_STATEMENT, values))).rows;
      for (const r of rows) {
        const balance = Number(r.balance);
        const threshold = r.low_balance_threshold == null ? null : Number(r.low_balance_threshold);
        debited.set(r.user_id, { balance, alert: threshold !== null && r.low_balance_alerted_at == null && balance < threshold });
      }
      inputs.forEach((c, i) => {
        const d = debited.get(c.reserve.userId);
        if (!d) return;
        const credits = c.reserve.credits;
        out[i] = { ok: true, value: { usageEventId: ids[i]!, credits, costNanoUsd: credits * c.settlement.creditPriceNanoUsd, balanceAfter: d.balance } };
      });
      const due = [...debited].filter(([, d]) => d.alert).map(([userId]) => userId);
      if (due.length > 0) {
        for (const a of await claimLowBalanceAlerts(db, due, now)) {
          const o = out[inputs.findIndex((c) => c.reserve.userId === a.userId)];
          if (o?.ok) o.value.lowBalance = a;
        }
      }
    }
    const rest = inputs.map((c, i) => ({ c, i })).filter(({ c }) => !debited.has(c.reserve.userId));
    if (rest.length > 0) {
      const outcomes = await inTransaction(
        db,
        rest.map((r) => r.c),
      );
      rest.forEach(({ i }, k) => {
        out[i] = outcomes[k]!;
      });
    }
    return out;
  };
}

/**
 * Charges on SQLite, common case in one turn of the event loop (ADR 0023): with Kysely's
 * connection held (`Database.sqliteDirect`), BEGIN, per account one guarded debit of the group's
 * total (`GUARDED_DEBIT`, returning the balance and the alert fields), one multi-row insert each
 * for the usage events and the ledger entries, COMMIT: synchronous statements, no promise or
 * query-builder node per statement. The same rows as `applyCharges` in its common case (every
 * call paid from prepaid credits, nothing refunded, no outbox row). When a group is not that case
 * (a call with a key budget, an account whose balance does not cover its calls, a low-balance
 * alert falling due), this transaction is rolled back before anything is answered, and the group
 * takes `applyCharges` in a Kysely transaction, which decides it call by call as before.
 */
function chargesSqlite(inTransaction: Apply<ChargeInput, Settled>, direct: NonNullable<Database['sqliteDirect']>): Apply<ChargeInput, Settled> {
  return async (db, inputs) => {
    if (inputs.some((c) => c.reserve.keyBudget)) return inTransaction(db, inputs);
    const totals = new Map<string, number>();
    let now = 0;
    for (const c of inputs) {
      now = Math.max(now, c.reserve.now);
      totals.set(c.reserve.userId, (totals.get(c.reserve.userId) ?? 0) + c.reserve.credits);
    }
    const events: Insertable<UsageEventsTable>[] = [];
    const entries: Insertable<CreditLedgerTable>[] = [];
    const out: Outcome<Settled>[] = new Array<Outcome<Settled>>(inputs.length);
    for (let i = 0; i < inputs.length; i++) {
      const { reserve, settlement: s } = inputs[i]!;
      const { actual, refund, free, metered } = settlementSplit({ free_credits: reserve.credits, metered_credits: 0 }, s.credits);
      if (refund > 0 || metered > 0) return inTransaction(db, inputs);
      const usageEventId = newId('use');
      events.push(usageEventRow({ user_id: reserve.userId }, s, usageEventId, { actual, free, metered }));
      entries.push(debitEntryRow(reserve.userId, s, usageEventId, { free, metered }));
      out[i] = { ok: true, value: { usageEventId, credits: actual, costNanoUsd: actual * s.creditPriceNanoUsd, balanceAfter: null } };
    }
    const balances = await direct((q) => {
      q.run('begin');
      try {
        const after = new Map<string, number>();
        for (const [userId, total] of totals) {
          const row = q.all(GUARDED_DEBIT.sqlite, [total, now, userId, total])[0];
          const balance = row ? Number(row.balance) : Number.NaN;
          const threshold = row?.low_balance_threshold == null ? null : Number(row.low_balance_threshold);
          // Not covered, or its alert falls due: the group goes the general way.
          if (!row || (threshold !== null && row.low_balance_alerted_at == null && balance < threshold)) {
            q.run('rollback');
            return null;
          }
          after.set(userId, balance);
        }
        q.run(insertText('sqlite', 'usage_events', USAGE_EVENT_COLUMNS, events.length), insertValues(USAGE_EVENT_COLUMNS, events));
        q.run(insertText('sqlite', 'credit_ledger', LEDGER_DEBIT_COLUMNS, entries.length), insertValues(LEDGER_DEBIT_COLUMNS, entries));
        q.run('commit');
        return after;
      } catch (err) {
        if (q.inTransaction()) q.run('rollback');
        throw err;
      }
    });
    if (balances === null) return inTransaction(db, inputs);
    for (let i = 0; i < inputs.length; i++) {
      const o = out[i]!;
      if (o.ok) o.value.balanceAfter = balances.get(inputs[i]!.reserve.userId) ?? null;
    }
    return out;
  };
}

export interface ReleaseInput {
  hold: Pick<HoldRow, 'id' | 'user_id' | 'free_credits'>;
  now: number;
}

/** Releases for a group: one DELETE … RETURNING, then the free credits back per account. */
async function applyReleases(trx: Db, inputs: ReleaseInput[]): Promise<Outcome<boolean>[]> {
  const taken = new Set(
    (
      await trx
        .deleteFrom('credit_holds')
        .where(
          'id',
          'in',
          inputs.map((r) => r.hold.id),
        )
        .returning('id')
        .execute()
    ).map((r) => r.id),
  );
  const back = new Map<string, { credits: number; now: number }>();
  for (const { hold, now } of inputs) {
    if (!taken.has(hold.id) || hold.free_credits <= 0) continue;
    const r = back.get(hold.user_id) ?? { credits: 0, now: 0 };
    back.set(hold.user_id, { credits: r.credits + hold.free_credits, now: Math.max(r.now, now) });
  }
  for (const [userId, r] of back) {
    await trx
      .updateTable('billing_accounts')
      .set({ balance: sql`balance + ${r.credits}`, updated_at: r.now })
      .where('user_id', '=', userId)
      .execute();
  }
  return inputs.map(({ hold }) => ({ ok: true, value: taken.has(hold.id) }));
}

/** The four lanes the ledger meter uses. */
export interface LedgerGroups {
  hold(input: HoldInput): Promise<HoldRow>;
  settle(input: SettleInput): Promise<Settled>;
  /** Reserve and debit in one step (a call whose work already ran); rejects with the refusal (402) like `hold`. */
  charge(input: ChargeInput): Promise<Settled>;
  release(input: ReleaseInput): Promise<boolean>;
}

export function createLedgerGroups(db: Db, dialect: Dialect, prepared?: Database['prepared'], sqliteDirect?: Database['sqliteDirect']): LedgerGroups {
  const holds = new CommitLane(
    db,
    inTransaction((trx, inputs: HoldInput[]) => applyHolds(trx, dialect, inputs)),
  );
  const settles = new CommitLane(
    db,
    inTransaction((trx, inputs: SettleInput[]) => applySettles(trx, dialect, inputs)),
  );
  const releases = new CommitLane(db, inTransaction(applyReleases));
  const chargeInTransaction = inTransaction((trx, inputs: ChargeInput[]) => applyCharges(trx, dialect, inputs));
  const charges = new CommitLane(
    db,
    dialect === 'postgres'
      ? chargesPostgres(chargeInTransaction, prepared)
      : sqliteDirect
        ? chargesSqlite(chargeInTransaction, sqliteDirect)
        : chargeInTransaction,
  );
  return {
    charge: (input) => charges.submit(input),
    hold: (input) => holds.submit(input),
    settle: (input) => settles.submit(input),
    release: (input) => releases.submit(input),
  };
}
