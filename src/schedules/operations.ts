import { AUTH_ERRORS } from '../shared/schemas.ts';
import { defineOperation, principalOf } from '../shared/operation.ts';
import {
  Schedule,
  ScheduleCreated,
  ScheduleCreateRequest,
  ScheduleDeleted,
  ScheduleIdInput,
  ScheduleList,
  ScheduleRunList,
  ScheduleUpdateRequest,
} from './schemas.ts';
import { createSchedule, deleteSchedule, getSchedule, listRuns, listSchedules, pauseSchedule, resumeSchedule, updateSchedule } from './service.ts';

const ANY_CREDENTIAL = ['session', 'api_key', 'oauth'] as const;
const ONE_ERRORS = [...AUTH_ERRORS, 404] as const;
const tags = ['schedules'];
const EXAMPLE_ID = '{"id":"sch_0193a1b2c3d4e5f60718293a4b5c6d7e"}';
const line = (s: { id: string; name: string; status: string; cron_expression: string; next_run_at: string | null }) =>
  `Schedule ${s.id} '${s.name}' (${s.cron_expression} UTC) is ${s.status}; next run ${s.next_run_at ?? 'none'}.`;

export const scheduleOperations = [
  defineOperation({
    id: 'createSchedule',
    method: 'POST',
    path: '/v1/schedules',
    tags,
    summary: 'Schedule a recurring forecast',
    description:
      'Creates a schedule: at each cron instant (5 fields, UTC) the data at source_url is fetched and read like POST /v1/series/ingest, ' +
      'forecast with model and parameters (charged like POST /v1/forecast), and the result POSTed to callback_url signed the Standard Webhooks way ' +
      '(webhook-id, webhook-timestamp, webhook-signature; HMAC-SHA256). The signing secret is in the answer, shown this once. ' +
      'At most 20 active schedules per account (409 beyond). Each run also counts one rate-limit point.',
    input: ScheduleCreateRequest,
    output: ScheduleCreated,
    auth: ANY_CREDENTIAL,
    errors: [...AUTH_ERRORS, 404, 409],
    points: () => 5,
    spendsCredits: false,
    mcpExample:
      '{"name":"daily sales","model":"auto-ets","cron_expression":"0 6 * * *","parameters":{"prediction_length":7},' +
      '"source_url":"https://data.example.com/sales.csv","callback_url":"https://hooks.example.com/tsfm"}',
    run: ({ deps, caller, input }) => createSchedule(deps, principalOf(caller), input),
    summarize: (r) => `${line(r)} Webhook secret (shown once): ${r.secret}`,
  }),
  defineOperation({
    id: 'listSchedules',
    method: 'GET',
    path: '/v1/schedules',
    tags,
    summary: 'List your schedules',
    description: 'All schedules of your account, oldest first, active and paused.',
    input: ScheduleIdInput.pick({}),
    output: ScheduleList,
    auth: ANY_CREDENTIAL,
    errors: AUTH_ERRORS,
    spendsCredits: false,
    run: ({ deps, caller }) => listSchedules(deps, principalOf(caller)),
    summarize: (r) => (r.data.length === 0 ? 'No schedules.' : r.data.map(line).join('\n')),
  }),
  defineOperation({
    id: 'getSchedule',
    method: 'GET',
    path: '/v1/schedules/:id',
    tags,
    summary: 'Get a schedule',
    description: 'One schedule of your account (404 for an unknown id or another account’s).',
    input: ScheduleIdInput,
    output: Schedule,
    auth: ANY_CREDENTIAL,
    errors: ONE_ERRORS,
    spendsCredits: false,
    mcpExample: EXAMPLE_ID,
    run: ({ deps, caller, input }) => getSchedule(deps, principalOf(caller), input.id),
    summarize: line,
  }),
  defineOperation({
    id: 'updateSchedule',
    method: 'PATCH',
    path: '/v1/schedules/:id',
    tags,
    summary: 'Change a schedule',
    description: 'Changes the given fields of a schedule (name, model, cron_expression, parameters, source_url, callback_url, ingest); the secret stays.',
    input: ScheduleUpdateRequest,
    output: Schedule,
    auth: ANY_CREDENTIAL,
    errors: ONE_ERRORS,
    spendsCredits: false,
    mcpExample: '{"id":"sch_0193a1b2c3d4e5f60718293a4b5c6d7e","cron_expression":"30 6 * * 1-5"}',
    run: ({ deps, caller, input }) => updateSchedule(deps, principalOf(caller), input),
    summarize: line,
  }),
  defineOperation({
    id: 'deleteSchedule',
    method: 'DELETE',
    path: '/v1/schedules/:id',
    tags,
    summary: 'Delete a schedule',
    description: 'Deletes a schedule and its run history; no further runs happen.',
    input: ScheduleIdInput,
    output: ScheduleDeleted,
    auth: ANY_CREDENTIAL,
    errors: ONE_ERRORS,
    spendsCredits: false,
    mcpExample: EXAMPLE_ID,
    run: ({ deps, caller, input }) => deleteSchedule(deps, principalOf(caller), input.id),
    summarize: (r) => `Schedule ${r.id} deleted.`,
  }),
  defineOperation({
    id: 'pauseSchedule',
    method: 'POST',
    path: '/v1/schedules/:id/pause',
    tags,
    summary: 'Pause a schedule',
    description: 'Stops future runs until resumed (a run already under way finishes).',
    input: ScheduleIdInput,
    output: Schedule,
    optionalBody: true,
    auth: ANY_CREDENTIAL,
    errors: ONE_ERRORS,
    spendsCredits: false,
    mcpExample: EXAMPLE_ID,
    run: ({ deps, caller, input }) => pauseSchedule(deps, principalOf(caller), input.id),
    summarize: line,
  }),
  defineOperation({
    id: 'resumeSchedule',
    method: 'POST',
    path: '/v1/schedules/:id/resume',
    tags,
    summary: 'Resume a schedule',
    description: 'Runs a paused schedule again from its next cron instant, with its failure count reset (409 when 20 are already active).',
    input: ScheduleIdInput,
    output: Schedule,
    optionalBody: true,
    auth: ANY_CREDENTIAL,
    errors: [...ONE_ERRORS, 409],
    spendsCredits: false,
    mcpExample: EXAMPLE_ID,
    run: ({ deps, caller, input }) => resumeSchedule(deps, principalOf(caller), input.id),
    summarize: line,
  }),
  defineOperation({
    id: 'listScheduleRuns',
    method: 'GET',
    path: '/v1/schedules/:id/runs',
    tags,
    summary: 'Run history of a schedule',
    description: 'The latest 100 runs of a schedule, newest first: status, attempts, credits, the callback status, the error, and the webhook-id.',
    input: ScheduleIdInput,
    output: ScheduleRunList,
    auth: ANY_CREDENTIAL,
    errors: ONE_ERRORS,
    spendsCredits: false,
    mcpExample: EXAMPLE_ID,
    run: ({ deps, caller, input }) => listRuns(deps, principalOf(caller), input.id),
    summarize: (r) =>
      r.data.length === 0
        ? 'No runs yet.'
        : r.data.map((x) => `${x.scheduled_for} ${x.status} (${x.attempts} attempt(s))${x.error ? `: ${x.error}` : ''}`).join('\n'),
  }),
];
