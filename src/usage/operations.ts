import { AUTH_ERRORS } from '../shared/schemas.ts';
import { defineOperation, principalOf } from '../shared/operation.ts';
import { UsageSummary, UsageWindow } from './schemas.ts';
import { usageSummary } from './service.ts';

export const usageOperations = [
  defineOperation({
    id: 'getUsageSummary',
    method: 'GET',
    path: '/api/account/usage/summary',
    tags: ['usage'],
    summary: 'Usage summary',
    description: 'Your usage, pre-aggregated: totals, daily, by model, by source, recent events. start/end are ISO 8601.',
    input: UsageWindow,
    example: { request: { start: '2026-11-01T00:00:00Z', end: '2026-12-01T00:00:00Z' } },
    output: UsageSummary,
    auth: ['session', 'api_key', 'oauth'],
    scope: 'usage:read',
    errors: AUTH_ERRORS,
    spendsCredits: false,
    run: ({ deps, caller, input }) => usageSummary(deps, principalOf(caller), input),
    summarize: (r) => `Usage ${r.start} to ${r.end}: ${JSON.stringify(r.totals)}`,
  }),
];
