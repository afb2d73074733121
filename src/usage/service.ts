import { sql, type ExpressionBuilder } from 'kysely';
import type { Principal } from '../accounts/credentials.ts';
import type { Database } from '../db/index.ts';
import type { DB, UsageEventsTable } from '../db/schema.ts';
import { ValidationFailure } from '../shared/errors.ts';
import type { Clock } from '../shared/clock.ts';
import { iso } from '../shared/clock.ts';

export interface UsageCtx {
  database: Database;
  clock: Clock;
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i;

/** Parses an ISO 8601 date or date-time (UTC when no offset is given), or 422 naming the field. */
export function parseInstant(value: string | null | undefined, path: (string | number)[]): number | null {
  if (value === null || value === undefined || value === '') return null;
  const hasZone = /(?:Z|[+-]\d{2}:?\d{2})$/i.test(value) && value.includes('T');
  const ms = ISO_8601.test(value) ? Date.parse(value.length === 10 || hasZone ? value : `${value.replace(' ', 'T')}Z`) : Number.NaN;
  if (Number.isNaN(ms)) throw new ValidationFailure([{ path, msg: 'must be an ISO 8601 date or date-time', type: 'datetime_parsing', input: value }]);
  return ms;
}

/** A [start, end) window from query or body fields; start after end is 422. */
export function parseWindow(start: string | null | undefined, end: string | null | undefined): { start: number | null; end: number | null } {
  const s = parseInstant(start, ['start']);
  const e = parseInstant(end, ['end']);
  if (s !== null && e !== null && s > e) throw new ValidationFailure([{ path: ['end'], msg: 'end must not be before start', type: 'value_error', input: end }]);
  return { start: s, end: e };
}

export function toUsageEvent(r: UsageEventsTable) {
  return {
    id: r.id,
    request_id: r.request_id,
    created_at: iso(Number(r.created_at)),
    model: r.model,
    source: r.source,
    credential_kind: r.credential_kind,
    key_id: r.key_id,
    input_tokens: Number(r.input_tokens),
    output_tokens: Number(r.output_tokens),
    total_tokens: Number(r.total_tokens),
    credits: Number(r.credits),
    free_credits: Number(r.free_credits),
    metered_credits: Number(r.metered_credits),
    cost_nano_usd: Number(r.cost_nano_usd),
    latency_ms: Number(r.latency_ms),
    status: r.status,
  };
}

export async function listUsage(
  ctx: UsageCtx,
  principal: Principal,
  q: { limit: number; offset: number; start?: string | null | undefined; end?: string | null | undefined },
) {
  const w = parseWindow(q.start, q.end);
  let query = ctx.database.db.selectFrom('usage_events').selectAll().where('user_id', '=', principal.user.id);
  if (w.start !== null) query = query.where('created_at', '>=', w.start);
  if (w.end !== null) query = query.where('created_at', '<', w.end);
  const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(q.limit).offset(q.offset).execute();
  return { events: rows.map(toUsageEvent), limit: q.limit, offset: q.offset };
}

/** Deletes the caller's usage history. The ledger is untouched: no credits come back. */
export async function deleteUsage(ctx: UsageCtx, principal: Principal): Promise<{ deleted: number }> {
  const r = await ctx.database.db.deleteFrom('usage_events').where('user_id', '=', principal.user.id).executeTakeFirst();
  return { deleted: Number(r.numDeletedRows) };
}

const DAY_MS = 86_400_000;
const RECENT = 20;

export async function usageSummary(ctx: UsageCtx, principal: Principal, q: { start?: string | null | undefined; end?: string | null | undefined }) {
  const w = parseWindow(q.start, q.end);
  const now = ctx.clock.now();
  const end = w.end ?? now + 1;
  const start = w.start ?? end - 30 * DAY_MS;
  const db = ctx.database.db;
  const base = () => db.selectFrom('usage_events').where('user_id', '=', principal.user.id).where('created_at', '>=', start).where('created_at', '<', end);
  const measures = (eb: ExpressionBuilder<DB, 'usage_events'>) => [
    eb.fn.countAll<string | number>().as('requests'),
    eb.fn.sum<string | number>('input_tokens').as('input_tokens'),
    eb.fn.sum<string | number>('output_tokens').as('output_tokens'),
    eb.fn.sum<string | number>('total_tokens').as('total_tokens'),
    eb.fn.sum<string | number>('credits').as('credits'),
    eb.fn.sum<string | number>('cost_nano_usd').as('cost_nano_usd'),
  ];
  type M = { requests: unknown; input_tokens: unknown; output_tokens: unknown; total_tokens: unknown; credits: unknown; cost_nano_usd: unknown };
  const shape = (r: M | undefined) => ({
    requests: Number(r?.requests ?? 0),
    input_tokens: Number(r?.input_tokens ?? 0),
    output_tokens: Number(r?.output_tokens ?? 0),
    total_tokens: Number(r?.total_tokens ?? 0),
    credits: Number(r?.credits ?? 0),
    cost_nano_usd: Number(r?.cost_nano_usd ?? 0),
  });
  // Day number = floor(ms / 86400000): integer division on both dialects, formatted here.
  // A literal, not a parameter: PostgreSQL matches the SELECT and GROUP BY expressions textually.
  const dayExpr = sql<number>`created_at / 86400000`;
  const [totals, daily, byModel, bySource, recent] = await Promise.all([
    base().select(measures).executeTakeFirst(),
    base()
      .select((eb) => [dayExpr.as('day'), ...measures(eb)])
      .groupBy(dayExpr)
      .orderBy('day')
      .execute(),
    base()
      .select((eb) => ['model', ...measures(eb)])
      .groupBy('model')
      .orderBy('model')
      .execute(),
    base()
      .select((eb) => ['source', ...measures(eb)])
      .groupBy('source')
      .orderBy('source')
      .execute(),
    base().selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(RECENT).execute(),
  ]);
  return {
    start: iso(start),
    end: iso(end),
    totals: shape(totals),
    daily: daily.map((d) => ({ date: iso(Math.floor(Number(d.day)) * DAY_MS).slice(0, 10), ...shape(d) })),
    by_model: byModel.map((m) => ({ model: m.model, ...shape(m) })),
    by_source: bySource.map((s) => ({ source: s.source, ...shape(s) })),
    recent: recent.map(toUsageEvent),
  };
}
