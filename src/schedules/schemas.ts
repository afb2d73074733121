import { z } from 'zod';
import { ForecastParameters } from '../forecasting/schemas.ts';
import { IngestOptions } from '../series/schemas.ts';

const Url = z.string().min(1).max(2048);
const ScheduleId = z.string().min(1).max(64).describe('The schedule id (sch_…).');

const ScheduleFields = {
  name: z.string().trim().min(1).max(120).describe('A label for you, e.g. "daily sales".'),
  model: z.string().min(1).max(200).describe('Model id from listModels, e.g. auto-ets.'),
  cron_expression: z
    .string()
    .min(1)
    .max(120)
    .describe('When to run: 5-field cron (minute hour day-of-month month day-of-week), in UTC, e.g. "0 6 * * *" for 06:00 every day.'),
  parameters: ForecastParameters.nullish().describe('Forecast parameters, as in POST /v1/forecast (prediction_length, frequency, quantile_levels, …).'),
  source_url: Url.describe('https URL fetched at each run and read like POST /v1/series/ingest (CSV, TSV or JSON).'),
  callback_url: Url.describe('https URL the result is POSTed to, signed the Standard Webhooks way.'),
  ingest: IngestOptions.partial().nullish().describe('How to read the source (time_column, value_column, id_column, frequency, duplicates, gaps, format).'),
};

export const ScheduleCreateRequest = z.object(ScheduleFields).strict().meta({ id: 'ScheduleCreateRequest' });
export type ScheduleCreateRequestT = z.output<typeof ScheduleCreateRequest>;

export const ScheduleUpdateRequest = z
  .object({
    id: ScheduleId,
    name: ScheduleFields.name.optional(),
    model: ScheduleFields.model.optional(),
    cron_expression: ScheduleFields.cron_expression.optional(),
    parameters: ScheduleFields.parameters,
    source_url: ScheduleFields.source_url.optional(),
    callback_url: ScheduleFields.callback_url.optional(),
    ingest: ScheduleFields.ingest,
  })
  .strict()
  .meta({ id: 'ScheduleUpdateRequest' });
export type ScheduleUpdateRequestT = z.output<typeof ScheduleUpdateRequest>;

export const ScheduleIdInput = z.object({ id: ScheduleId }).strict();

export const Schedule = z
  .object({
    id: z.string(),
    object: z.literal('schedule'),
    name: z.string(),
    model: z.string(),
    cron_expression: z.string(),
    parameters: z.record(z.string(), z.unknown()),
    ingest: z.record(z.string(), z.unknown()),
    source_url: z.string(),
    callback_url: z.string(),
    status: z.enum(['active', 'paused']),
    paused_reason: z.string().nullable().describe('Why the schedule is paused: by you, or after repeated failures.'),
    consecutive_failures: z.number().int(),
    next_run_at: z.string().nullable().describe('ISO 8601, UTC; null while paused.'),
    last_run_at: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Schedule' });
export type ScheduleT = z.input<typeof Schedule>;

export const ScheduleCreated = Schedule.extend({
  secret: z.string().describe('The webhook signing secret (whsec_…), shown this once: verify each delivery with it.'),
}).meta({ id: 'ScheduleCreated' });

export const ScheduleList = z.object({ object: z.literal('list'), data: z.array(Schedule) }).meta({ id: 'ScheduleList' });

export const ScheduleDeleted = z.object({ id: z.string(), object: z.literal('schedule'), deleted: z.literal(true) }).meta({ id: 'ScheduleDeleted' });

export const ScheduleRun = z
  .object({
    id: z.string(),
    object: z.literal('schedule.run'),
    schedule_id: z.string(),
    scheduled_for: z.string(),
    status: z.enum(['pending', 'running', 'retrying', 'succeeded', 'failed', 'skipped']),
    attempts: z.number().int(),
    webhook_id: z.string().describe('The webhook-id header of every delivery of this run (the same on re-delivery).'),
    credits: z.number().int().nullable().describe('Credits the forecast cost (null before it ran).'),
    response_status: z.number().int().nullable().describe("HTTP status of the callback's last answer."),
    error: z.string().nullable(),
    next_attempt_at: z.string().nullable().describe('When a retrying run is tried again.'),
    created_at: z.string(),
    started_at: z.string().nullable(),
    finished_at: z.string().nullable(),
  })
  .meta({ id: 'ScheduleRun' });
export type ScheduleRunT = z.input<typeof ScheduleRun>;

export const ScheduleRunList = z.object({ object: z.literal('list'), data: z.array(ScheduleRun) }).meta({ id: 'ScheduleRunList' });
