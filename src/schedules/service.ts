import { Cron } from 'croner';
import type { Selectable } from 'kysely';
import type { Principal } from '../accounts/credentials.ts';
import type { Deps } from '../deps-types.ts';
import type { ScheduleRunsTable, SchedulesTable } from '../db/schema.ts';
import { parseFrequency, unknownFrequencyIssue } from '../forecasting/frequency.ts';
import { OutboundError } from '../outbound/fetcher.ts';
import { AppError, ValidationFailure } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import type { ScheduleCreateRequestT, ScheduleRunT, ScheduleT, ScheduleUpdateRequestT } from './schemas.ts';
import { newWebhookSecret, sealSecret } from './secrets.ts';

type ScheduleRow = Selectable<SchedulesTable>;
type RunRow = Selectable<ScheduleRunsTable>;
export type ScheduleCtx = Pick<Deps, 'database' | 'clock' | 'config' | 'catalog' | 'fetcher'>;

/** Runs listed by GET /v1/schedules/{id}/runs: the latest ones. */
export const RUNS_LISTED = 100;
/** Schedules an account may keep, paused ones included. */
export const maxSchedules = (maxActive: number) => Math.max(100, 5 * maxActive);

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A 5-field cron expression in UTC (croner), or a 422 at `cron_expression` saying what is wrong. */
export function parseCron(expr: string): Cron {
  let cron: Cron;
  try {
    cron = new Cron(expr.trim(), { timezone: 'UTC', mode: '5-part', paused: true });
  } catch (err) {
    throw new ValidationFailure([
      {
        path: ['cron_expression'],
        // croner's words without its class name ("CronPattern: Invalid value for minute: 61").
        msg: `Not a 5-field cron expression (minute hour day month weekday, UTC): ${(err as Error).message.replace(/^Cron\w*:\s*/, '')}`,
        type: 'value_error',
        input: expr,
      },
    ]);
  }
  if (cron.nextRun(new Date()) === null) {
    throw new ValidationFailure([{ path: ['cron_expression'], msg: `'${expr}' never fires`, type: 'value_error', input: expr }]);
  }
  return cron;
}

/** The first instant strictly after `after` (epoch ms) that `expr` fires at; null when it never does again. */
export function nextRunAfter(expr: string, after: number): number | null {
  const next = new Cron(expr, { timezone: 'UTC', mode: '5-part', paused: true }).nextRun(new Date(after));
  return next ? next.getTime() : null;
}

function checkUrl(ctx: ScheduleCtx, url: string, field: 'source_url' | 'callback_url'): string {
  try {
    return ctx.fetcher.checkUrl(url).toString();
  } catch (err) {
    if (err instanceof OutboundError) throw new ValidationFailure([{ path: [field], msg: `URL refused: ${err.message}`, type: 'value_error', input: url }]);
    throw err;
  }
}

export function scheduleView(r: ScheduleRow): ScheduleT {
  return {
    id: r.id,
    object: 'schedule',
    name: r.name,
    model: r.model,
    cron_expression: r.cron_expression,
    parameters: JSON.parse(r.parameters_json) as Record<string, unknown>,
    ingest: JSON.parse(r.ingest_json) as Record<string, unknown>,
    source_url: r.source_url,
    callback_url: r.callback_url,
    status: r.status,
    paused_reason: r.paused_reason,
    consecutive_failures: Number(r.consecutive_failures),
    next_run_at: iso(r.next_run_at === null ? null : Number(r.next_run_at)),
    last_run_at: iso(r.last_run_at === null ? null : Number(r.last_run_at)),
    created_at: iso(Number(r.created_at)) as string,
    updated_at: iso(Number(r.updated_at)) as string,
  };
}

export function runView(r: RunRow): ScheduleRunT {
  const n = (v: number | null) => (v === null ? null : Number(v));
  return {
    id: r.id,
    object: 'schedule.run',
    schedule_id: r.schedule_id,
    scheduled_for: iso(Number(r.scheduled_for)) as string,
    status: r.status,
    attempts: Number(r.attempts),
    webhook_id: r.webhook_id,
    credits: n(r.credits),
    response_status: n(r.response_status),
    error: r.error,
    next_attempt_at: r.status === 'retrying' || r.status === 'pending' ? iso(Number(r.next_attempt_at)) : null,
    created_at: iso(Number(r.created_at)) as string,
    started_at: iso(n(r.started_at)),
    finished_at: iso(n(r.finished_at)),
  };
}

async function ownSchedule(ctx: ScheduleCtx, principal: Principal, id: string): Promise<ScheduleRow> {
  const row = await ctx.database.db.selectFrom('schedules').selectAll().where('id', '=', id).where('user_id', '=', principal.user.id).executeTakeFirst();
  // Another account's schedule is "not found", like one that does not exist.
  if (!row) throw new AppError('not_found', `Schedule '${id}' not found`);
  return row;
}

async function countSchedules(ctx: ScheduleCtx, userId: string, status?: 'active'): Promise<number> {
  let q = ctx.database.db
    .selectFrom('schedules')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('user_id', '=', userId);
  if (status) q = q.where('status', '=', status);
  return Number((await q.executeTakeFirstOrThrow()).n);
}

function activeLimit(ctx: ScheduleCtx): AppError {
  const max = ctx.config.schedules.maxActive;
  return new AppError('conflict', `At most ${max} schedules may be active per account (SCHEDULES_MAX_ACTIVE); pause or delete one first`);
}

/**
 * The frequency codes a schedule carries, read now: an unknown one would fail every run (and pause
 * the schedule after a few) instead of being a 422 when it is sent.
 */
function checkFrequencies(input: Pick<ScheduleCreateRequestT, 'parameters' | 'ingest'>): void {
  const given: [string | null | undefined, string[]][] = [
    [input.parameters?.frequency, ['parameters', 'frequency']],
    [input.parameters?.freq, ['parameters', 'freq']],
    [input.ingest?.frequency, ['ingest', 'frequency']],
  ];
  const issues = given.filter(([code]) => code != null && !parseFrequency(code)).map(([code, path]) => unknownFrequencyIssue(code as string, path));
  if (issues.length > 0) throw new ValidationFailure(issues);
}

export async function createSchedule(ctx: ScheduleCtx, principal: Principal, input: ScheduleCreateRequestT): Promise<ScheduleT & { secret: string }> {
  parseCron(input.cron_expression);
  checkFrequencies(input);
  ctx.catalog.get(input.model);
  const source = checkUrl(ctx, input.source_url, 'source_url');
  const callback = checkUrl(ctx, input.callback_url, 'callback_url');
  const now = ctx.clock.now();
  const userId = principal.user.id;
  const { maxActive } = ctx.config.schedules;
  if ((await countSchedules(ctx, userId)) >= maxSchedules(maxActive)) {
    throw new AppError('conflict', `At most ${maxSchedules(maxActive)} schedules per account; delete one first`);
  }
  const secret = newWebhookSecret();
  const row: ScheduleRow = {
    id: newId('sch'),
    user_id: userId,
    name: input.name,
    model: input.model,
    cron_expression: input.cron_expression.trim(),
    parameters_json: JSON.stringify(input.parameters ?? {}),
    ingest_json: JSON.stringify(input.ingest ?? {}),
    source_url: source,
    callback_url: callback,
    secret: sealSecret(secret, ctx.config.schedules.secretKey),
    credential_kind: principal.kind,
    credential_id: principal.credentialId,
    status: 'active',
    paused_reason: null,
    consecutive_failures: 0,
    next_run_at: nextRunAfter(input.cron_expression.trim(), now),
    last_run_at: null,
    created_at: now,
    updated_at: now,
  };
  // The active-schedule cap is checked and the row inserted in one transaction; on PostgreSQL the
  // account row is locked first, so two concurrent creations cannot both pass the count.
  await ctx.database.db.transaction().execute(async (trx) => {
    if (ctx.database.dialect === 'postgres') await trx.selectFrom('users').select('id').where('id', '=', userId).forUpdate().execute();
    const active = await trx
      .selectFrom('schedules')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('user_id', '=', userId)
      .where('status', '=', 'active')
      .executeTakeFirstOrThrow();
    if (Number(active.n) >= maxActive) throw activeLimit(ctx);
    await trx.insertInto('schedules').values(row).execute();
  });
  return { ...scheduleView(row), secret };
}

export async function listSchedules(ctx: ScheduleCtx, principal: Principal) {
  const rows = await ctx.database.db
    .selectFrom('schedules')
    .selectAll()
    .where('user_id', '=', principal.user.id)
    .orderBy('created_at', 'asc')
    .orderBy('id')
    .execute();
  return { object: 'list' as const, data: rows.map(scheduleView) };
}

export async function getSchedule(ctx: ScheduleCtx, principal: Principal, id: string): Promise<ScheduleT> {
  return scheduleView(await ownSchedule(ctx, principal, id));
}

export async function updateSchedule(ctx: ScheduleCtx, principal: Principal, input: ScheduleUpdateRequestT): Promise<ScheduleT> {
  const row = await ownSchedule(ctx, principal, input.id);
  const now = ctx.clock.now();
  const set: Partial<ScheduleRow> = { updated_at: now };
  checkFrequencies(input);
  if (input.name !== undefined) set.name = input.name;
  if (input.model !== undefined) {
    ctx.catalog.get(input.model);
    set.model = input.model;
  }
  if (input.cron_expression !== undefined) {
    parseCron(input.cron_expression);
    set.cron_expression = input.cron_expression.trim();
    if (row.status === 'active') set.next_run_at = nextRunAfter(set.cron_expression, now);
  }
  if (input.parameters !== undefined) set.parameters_json = JSON.stringify(input.parameters ?? {});
  if (input.ingest !== undefined) set.ingest_json = JSON.stringify(input.ingest ?? {});
  if (input.source_url !== undefined) set.source_url = checkUrl(ctx, input.source_url, 'source_url');
  if (input.callback_url !== undefined) set.callback_url = checkUrl(ctx, input.callback_url, 'callback_url');
  await ctx.database.db.updateTable('schedules').set(set).where('id', '=', row.id).execute();
  return scheduleView({ ...row, ...set });
}

export async function deleteSchedule(ctx: ScheduleCtx, principal: Principal, id: string) {
  const row = await ownSchedule(ctx, principal, id);
  await ctx.database.db.deleteFrom('schedules').where('id', '=', row.id).execute();
  return { id: row.id, object: 'schedule' as const, deleted: true as const };
}

export async function pauseSchedule(ctx: ScheduleCtx, principal: Principal, id: string): Promise<ScheduleT> {
  const row = await ownSchedule(ctx, principal, id);
  const set = { status: 'paused' as const, paused_reason: 'paused by you', next_run_at: null, updated_at: ctx.clock.now() };
  await ctx.database.db.updateTable('schedules').set(set).where('id', '=', row.id).execute();
  return scheduleView({ ...row, ...set });
}

export async function resumeSchedule(ctx: ScheduleCtx, principal: Principal, id: string): Promise<ScheduleT> {
  const row = await ownSchedule(ctx, principal, id);
  if (row.status === 'active') return scheduleView(row);
  const now = ctx.clock.now();
  // Resumed, it runs as whoever resumed it (their key's limits, their OAuth grant, or the account holder in person).
  const set = {
    status: 'active' as const,
    paused_reason: null,
    consecutive_failures: 0,
    next_run_at: nextRunAfter(row.cron_expression, now),
    updated_at: now,
    credential_kind: principal.kind,
    credential_id: principal.credentialId,
  };
  await ctx.database.db.transaction().execute(async (trx) => {
    if (ctx.database.dialect === 'postgres') await trx.selectFrom('users').select('id').where('id', '=', row.user_id).forUpdate().execute();
    const active = await trx
      .selectFrom('schedules')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('user_id', '=', row.user_id)
      .where('status', '=', 'active')
      .executeTakeFirstOrThrow();
    if (Number(active.n) >= ctx.config.schedules.maxActive) throw activeLimit(ctx);
    await trx.updateTable('schedules').set(set).where('id', '=', row.id).where('status', '=', 'paused').execute();
  });
  return scheduleView({ ...row, ...set });
}

export async function listRuns(ctx: ScheduleCtx, principal: Principal, id: string) {
  const row = await ownSchedule(ctx, principal, id);
  const runs = await ctx.database.db
    .selectFrom('schedule_runs')
    .selectAll()
    .where('schedule_id', '=', row.id)
    .orderBy('scheduled_for', 'desc')
    .limit(RUNS_LISTED)
    .execute();
  return { object: 'list' as const, data: runs.map(runView) };
}
