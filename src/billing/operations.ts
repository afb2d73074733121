import { z } from 'zod';
import { AUTH_ERRORS } from '../shared/schemas.ts';
import { defineOperation, principalOf } from '../shared/operation.ts';
import { BillingSummary } from './schemas.ts';
import { billingSummary } from './service.ts';

export const billingOperations = [
  defineOperation({
    id: 'getBillingSummary',
    method: 'GET',
    path: '/api/account/billing',
    tags: ['billing'],
    summary: 'Billing summary',
    description: 'Free credits granted, used and remaining, billing state, metered usage this period and your rate limit.',
    input: z.object({}),
    example: {
      response: {
        free_credits: { granted: 10000, used: 1250, remaining: 8750 },
        billing_active: false,
        provider: 'local',
        credit_price_nano_usd: 1000000,
        metered: { period_start: '2026-11-01T00:00:00.000Z', period_end: '2026-12-01T00:00:00.000Z', credits: 0, cost_nano_usd: 0 },
        rate_limit: { requests_per_minute: 600, scope: 'account' },
      },
    },
    output: BillingSummary,
    auth: ['session', 'api_key', 'oauth'],
    scope: 'billing:read',
    errors: AUTH_ERRORS,
    spendsCredits: false,
    run: ({ deps, caller }) => billingSummary(deps, principalOf(caller)),
    summarize: (r) => `Billing: ${JSON.stringify(r)}`.slice(0, 500),
  }),
];
