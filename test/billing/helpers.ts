import { resolveCredential, type Principal } from '../../src/accounts/credentials.ts';
import { ledgerCheck } from '../../src/billing/ledger.ts';
import { call, type TestApp, type TestUser } from '../helpers/app.ts';

export async function principalFor(t: TestApp, token: string): Promise<Principal> {
  return resolveCredential(t.deps.database.db, token, Date.now());
}

/** A forecast that costs exactly one credit on the fake engine (3 input + 4 output tokens). */
export const ONE_CREDIT = { model: 'echo-last', inputs: [{ target: [1, 2, 3] }], parameters: { prediction_length: 1 } };

export const forecast = (t: TestApp, token: string, body: unknown = ONE_CREDIT, headers: Record<string, string> = {}) =>
  call(t, 'POST', '/v1/forecast', { token, body, headers });

export async function balanceOf(t: TestApp, userId: string): Promise<number> {
  const r = await t.deps.database.db.selectFrom('billing_accounts').select('balance').where('user_id', '=', userId).executeTakeFirstOrThrow();
  return Number(r.balance);
}

/** Ledger, counter, holds and usage events all tell the same story. */
export async function booksOf(t: TestApp, userId: string) {
  const db = t.deps.database.db;
  const check = await ledgerCheck(db, userId);
  const debits = await db
    .selectFrom('credit_ledger')
    .select(['amount', 'metered_credits', 'usage_event_id'])
    .where('user_id', '=', userId)
    .where('kind', '=', 'debit')
    .execute();
  const events = await db
    .selectFrom('usage_events')
    .select(['id', 'credits', 'free_credits', 'metered_credits', 'request_id'])
    .where('user_id', '=', userId)
    .execute();
  return {
    ...check,
    debits: debits.length,
    debitedFree: -debits.reduce((a, d) => a + Number(d.amount), 0),
    debitedMetered: debits.reduce((a, d) => a + Number(d.metered_credits), 0),
    events: events.length,
    eventCredits: events.reduce((a, e) => a + Number(e.credits), 0),
    eventFree: events.reduce((a, e) => a + Number(e.free_credits), 0),
    eventIds: new Set(events.map((e) => e.id)),
    debitEventIds: new Set(debits.map((d) => d.usage_event_id)),
    requestIds: events.map((e) => e.request_id),
  };
}

export async function activateBillingLocally(t: TestApp, user: TestUser): Promise<void> {
  const s = await call(t, 'POST', '/api/account/billing/payments', { token: user.token, body: { action: 'checkout' } });
  if (s.status !== 200) throw new Error(`checkout failed: ${s.status} ${s.text}`);
  const path = new URL(s.body.url).pathname;
  const r = await t.app.inject({ method: 'POST', url: path, payload: 'decision=confirm', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  if (r.statusCode !== 303) throw new Error(`confirm failed: ${r.statusCode} ${r.body}`);
}
