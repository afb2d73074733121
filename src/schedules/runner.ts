import { randomUUID } from 'node:crypto';
import type { ExpressionBuilder, Selectable } from 'kysely';
import { keyPolicyOf, type Principal } from '../accounts/credentials.ts';
import { CREDENTIAL_ENDED, credentialStands } from './credentials.ts';
import type { DB, ScheduleRunsTable, SchedulesTable } from '../db/schema.ts';
import type { Deps } from '../deps-types.ts';
import { ForecastRequest } from '../forecasting/schemas.ts';
import { executePrepared, planForecast, runPlanned } from '../forecasting/service.ts';
import { RanOutOfTime } from '../forecasting/timed-out.ts';
import { spendPoints } from '../ratelimit/limiter.ts';
import { IngestOptions } from '../series/schemas.ts';
import { fetchSource, ingestText } from '../series/service.ts';
import { AppError, ValidationFailure } from '../shared/errors.ts';
import { jsonText, serialiseJson } from '../shared/json.ts';
import { newId } from '../shared/ids.ts';
import { nextRunAfter } from './service.ts';
import { deliverWebhook, DeliveryError } from './webhook.ts';

type RunRow = Selectable<ScheduleRunsTable>;
type ScheduleRow = Selectable<SchedulesTable>;

/** Schedules materialised per tick, and runs one replica works on at once. */
const DUE_BATCH = 100;
const WORKERS = 2;

export interface Scheduler {
  /** This replica's lease owner id. */
  readonly owner: string;
  /** One pass: create the runs that are due, then claim and execute runs until none is left. Never runs twice at once. */
  tick(): Promise<void>;
  start(): void;
  stop(): Promise<void>;
}

type SchedulerDeps = Pick<Deps, 'database' | 'clock' | 'config' | 'catalog' | 'engine' | 'meter' | 'fetcher' | 'rateLimiter'>;

export interface SchedulerOptions {
  log?: (msg: string, err?: unknown) => void;
  owner?: string;
}

export function createScheduler(deps: SchedulerDeps, opts: SchedulerOptions = {}): Scheduler {
  const owner = opts.owner ?? `sched_${randomUUID()}`;
  const log = opts.log ?? (() => {});
  const db = deps.database.db;
  const cfg = deps.config.schedules;
  let running: Promise<void> | null = null;
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;

  /** Step 1: a run row per due instant (the unique key makes racing replicas create one), then move next_run_at on. */
  async function materialise(now: number): Promise<void> {
    const due = await db
      .selectFrom('schedules')
      .select(['id', 'user_id', 'cron_expression', 'next_run_at'])
      .where('status', '=', 'active')
      .where('next_run_at', '<=', now)
      .orderBy('next_run_at')
      .limit(DUE_BATCH)
      .execute();
    for (const s of due) {
      const at = Number(s.next_run_at);
      const id = newId('run');
      await db
        .insertInto('schedule_runs')
        .values({
          id,
          schedule_id: s.id,
          user_id: s.user_id,
          scheduled_for: at,
          status: 'pending',
          attempts: 0,
          lease_owner: null,
          lease_until: null,
          next_attempt_at: at,
          webhook_id: `msg_${id.slice(4)}`,
          payload: null,
          credits: null,
          response_status: null,
          error: null,
          created_at: now,
          started_at: null,
          finished_at: null,
        })
        .onConflict((oc) => oc.columns(['schedule_id', 'scheduled_for']).doNothing())
        .execute();
      // Missed instants (the service was down) are not replayed: one run for the oldest, then the next one after now.
      await db
        .updateTable('schedules')
        .set({ next_run_at: nextRunAfter(s.cron_expression, Math.max(now, at)) })
        .where('id', '=', s.id)
        .where('next_run_at', '=', at)
        .where('status', '=', 'active')
        .execute();
    }
  }

  /** Step 2: claim one run with a guarded update (one row changed = ours). */
  async function claimOne(): Promise<RunRow | null> {
    const now = deps.clock.now();
    const candidates = await db
      .selectFrom('schedule_runs')
      .select('id')
      .where((eb) => claimable(eb, now))
      .orderBy('next_attempt_at')
      .limit(WORKERS * 4)
      .execute();
    for (const c of candidates) {
      const res = await db
        .updateTable('schedule_runs')
        .set((eb) => ({ status: 'running' as const, lease_owner: owner, lease_until: now + cfg.leaseMs, attempts: eb('attempts', '+', 1) }))
        .where('id', '=', c.id)
        .where((eb) => claimable(eb, now))
        .executeTakeFirst();
      if (Number(res.numUpdatedRows) !== 1) continue; // another replica was first
      await db.updateTable('schedule_runs').set({ started_at: now }).where('id', '=', c.id).where('started_at', 'is', null).execute();
      return (await db.selectFrom('schedule_runs').selectAll().where('id', '=', c.id).where('lease_owner', '=', owner).executeTakeFirst()) ?? null;
    }
    return null;
  }

  /** An update of a run this replica still holds (a replica whose lease was taken over changes nothing). */
  const ours = (run: RunRow) => db.updateTable('schedule_runs').where('id', '=', run.id).where('lease_owner', '=', owner).where('attempts', '=', run.attempts);

  async function execute(run: RunRow): Promise<void> {
    const schedule = await db.selectFrom('schedules').selectAll().where('id', '=', run.schedule_id).executeTakeFirst();
    const user = schedule ? await db.selectFrom('users').selectAll().where('id', '=', schedule.user_id).executeTakeFirst() : undefined;
    if (!schedule || !user) return; // deleted (account or schedule): the run row went with it
    if (schedule.status !== 'active') {
      await ours(run)
        .set({
          status: 'skipped',
          error: `the schedule was paused (${schedule.paused_reason ?? 'paused'})`,
          finished_at: deps.clock.now(),
          lease_owner: null,
          lease_until: null,
        })
        .execute();
      return;
    }
    // The credential that made the schedule must still stand, before anything is fetched (src/schedules/credentials.ts).
    if (!(await credentialStands(db, schedule.credential_kind, schedule.credential_id, deps.clock.now()))) {
      const now = deps.clock.now();
      const reason = CREDENTIAL_ENDED[schedule.credential_kind];
      await db
        .updateTable('schedules')
        .set({ status: 'paused', paused_reason: reason, next_run_at: null, updated_at: now })
        .where('id', '=', schedule.id)
        .where('status', '=', 'active')
        .execute();
      await ours(run).set({ status: 'skipped', error: reason, finished_at: now, lease_owner: null, lease_until: null }).execute();
      return;
    }
    const principal: Principal = { user, kind: schedule.credential_kind, credentialId: schedule.credential_id };
    // A schedule made with an API key runs within that key's limits as they are now (docs/keys.md).
    if (principal.kind === 'api_key') principal.key = await keyPolicyOf(db, principal.credentialId, deps.clock.now());
    // While this replica works on the run (a slow source, a queued forecast), its lease is renewed,
    // so no other replica takes over a run that is still alive; a replica that dies stops renewing.
    const heartbeat = setInterval(
      () =>
        void ours(run)
          .set({ lease_until: deps.clock.now() + cfg.leaseMs })
          .execute()
          .catch(() => {}),
      Math.max(100, Math.floor(cfg.leaseMs / 3)),
    );
    heartbeat.unref();
    try {
      let payload = run.payload;
      if (payload === null) {
        payload = await forecastPayload(schedule, run, principal);
        const stored = await ours(run).set({ payload }).executeTakeFirst();
        if (Number(stored.numUpdatedRows) !== 1) return; // taken over meanwhile
      }
      const status = await deliverWebhook(deps, schedule, run, payload);
      const now = deps.clock.now();
      const done = await ours(run)
        .set({ status: 'succeeded', response_status: status, error: null, finished_at: now, lease_owner: null, lease_until: null })
        .executeTakeFirst();
      if (Number(done.numUpdatedRows) === 1) {
        await db.updateTable('schedules').set({ consecutive_failures: 0, last_run_at: now }).where('id', '=', schedule.id).execute();
      }
    } catch (err) {
      await failed(schedule, run, err);
    } finally {
      clearInterval(heartbeat);
    }
  }

  /** Source → ingest → the metered forecast path of POST /v1/forecast, as the owner; the webhook body. */
  async function forecastPayload(schedule: ScheduleRow, run: RunRow, principal: Principal): Promise<string> {
    await spendPoints(deps.rateLimiter, principal, 1);
    const options = IngestOptions.parse(JSON.parse(schedule.ingest_json));
    const text = await fetchSource(deps, schedule.source_url, 'source_url');
    const ingested = await ingestText(deps, text, options, 'source_url');
    const parameters = JSON.parse(schedule.parameters_json) as Record<string, unknown>;
    const parsed = ForecastRequest.safeParse({
      model: schedule.model,
      inputs: ingested.inputs,
      parameters: { ...parameters, ...(parameters.frequency || parameters.freq || !ingested.frequency ? {} : { frequency: ingested.frequency }) },
    });
    if (!parsed.success)
      throw new AppError('request_rejected', `The source's data does not make a forecast request: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    const planned = planForecast(deps, parsed.data);
    const maxBytes = cfg.maxPayloadBytes;
    const tooLarge = () => new AppError('request_too_large', `The forecast is larger than SCHEDULE_MAX_PAYLOAD_BYTES (${maxBytes} bytes)`);
    // Each number takes two bytes at least ("0,"): a forecast that cannot fit is refused before it runs.
    const numbers = planned.prepared.usage.output_tokens;
    if (numbers * 2 > maxBytes) {
      throw new AppError(
        'request_too_large',
        `The forecast would hold ${numbers} numbers, at least ${numbers * 2} bytes: larger than SCHEDULE_MAX_PAYLOAD_BYTES (${maxBytes} bytes); lower prediction_length, num_samples or quantile_levels`,
      );
    }
    // Serialised in slices (up to the output cap it could be millions of numbers: one JSON.stringify was
    // hundreds of milliseconds of the event loop); the worker writes the numbers (runPlanned's encode).
    const toPayload = async (forecast: unknown): Promise<string> => {
      const json = await serialiseJson({
        type: 'forecast.completed',
        timestamp: new Date(deps.clock.now()).toISOString(),
        data: { schedule_id: schedule.id, run_id: run.id, scheduled_for: new Date(Number(run.scheduled_for)).toISOString(), forecast },
      });
      // Too large to deliver: fails before the debit, so nothing is charged.
      if (json.bytes > maxBytes) throw tooLarge();
      return jsonText(json);
    };
    // A replica that died between the debit and storing the payload has charged this run already
    // (its usage event carries the run id): the forecast is made again, but not charged again.
    const charged = await db.selectFrom('usage_events').select('id').where('user_id', '=', run.user_id).where('request_id', '=', run.id).executeTakeFirst();
    const body = charged
      ? await toPayload(await executePrepared(deps, planned.prepared, undefined, principal.user.id))
      : await runPlanned(deps, principal, planned, { requestId: run.id, source: 'schedule' }, toPayload, undefined, true);
    await ours(run).set({ credits: planned.credits }).execute();
    return body;
  }

  async function failed(schedule: ScheduleRow, run: RunRow, err: unknown): Promise<void> {
    const now = deps.clock.now();
    const message = errorMessage(err);
    if (!(err instanceof AppError || err instanceof ValidationFailure || err instanceof DeliveryError)) log(`schedule run ${run.id} failed`, err);
    // A refusal that another attempt cannot change (402, 403, 404, 413, 422 …) is final at once; so is a
    // forecast that ran for the engine's whole time limit: the same data would run into it again (and
    // each attempt is charged, ADR 0039).
    const final =
      run.attempts >= cfg.maxAttempts ||
      (err instanceof AppError && err.status < 500 && err.status !== 429) ||
      err instanceof ValidationFailure ||
      err instanceof RanOutOfTime;
    // A run whose forecast ran out of time was charged for it: the run says what it cost.
    const credits = err instanceof RanOutOfTime ? { credits: err.credits } : {};
    const responseStatus = err instanceof DeliveryError ? err.status : null;
    if (!final) {
      const backoff = cfg.retryBaseMs * 2 ** (run.attempts - 1);
      await ours(run)
        .set({ status: 'retrying', error: message, response_status: responseStatus, next_attempt_at: now + backoff, lease_owner: null, lease_until: null })
        .execute();
      return;
    }
    const res = await ours(run)
      .set({ status: 'failed', error: message, response_status: responseStatus, finished_at: now, lease_owner: null, lease_until: null, ...credits })
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) !== 1) return;
    await db
      .updateTable('schedules')
      .set((eb) => ({ consecutive_failures: eb('consecutive_failures', '+', 1), last_run_at: now }))
      .where('id', '=', schedule.id)
      .execute();
    await db
      .updateTable('schedules')
      .set({
        status: 'paused',
        paused_reason: `paused after ${cfg.pauseAfterFailures} failed runs in a row; last error: ${message}`.slice(0, 500),
        next_run_at: null,
        updated_at: now,
      })
      .where('id', '=', schedule.id)
      .where('status', '=', 'active')
      .where('consecutive_failures', '>=', cfg.pauseAfterFailures)
      .execute();
  }

  async function worker(): Promise<void> {
    while (!stopped) {
      const run = await claimOne();
      if (!run) return;
      await execute(run);
    }
  }

  async function pass(): Promise<void> {
    await materialise(deps.clock.now());
    await Promise.all(Array.from({ length: WORKERS }, () => worker()));
  }

  const scheduler: Scheduler = {
    owner,
    tick() {
      running ??= pass()
        .catch((err) => log('scheduler pass failed', err))
        .finally(() => {
          running = null;
        });
      return running;
    },
    start() {
      if (timer) return;
      stopped = false;
      timer = setInterval(() => void scheduler.tick(), cfg.intervalMs);
      timer.unref();
      void scheduler.tick();
    },
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      timer = null;
      await running;
    },
  };
  return scheduler;
}

/** A run that may be claimed now: waiting and due, or running under a lease that has expired (its replica died). */
function claimable(eb: ExpressionBuilder<DB, 'schedule_runs'>, now: number) {
  return eb.or([
    eb.and([eb('status', 'in', ['pending', 'retrying']), eb('next_attempt_at', '<=', now)]),
    eb.and([eb('status', '=', 'running'), eb('lease_until', '<', now)]),
  ]);
}

function errorMessage(err: unknown): string {
  if (err instanceof AppError) return `${err.code}: ${err.message}`.slice(0, 500);
  if (err instanceof ValidationFailure) return `validation_error: ${err.message}`.slice(0, 500);
  if (err instanceof DeliveryError) return err.message.slice(0, 500);
  return 'internal_error: the run failed unexpectedly (see the service logs)';
}
