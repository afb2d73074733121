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
    output: BillingSummary,
    auth: ['session', 'api_key', 'oauth'],
    scope: 'billing:read',
    errors: AUTH_ERRORS,
    spendsCredits: false,
    run: ({ deps, caller }) => billingSummary(deps, principalOf(caller)),
    summarize: (r) => `Billing: ${JSON.stringify(r)}`.slice(0, 500),
  }),
];
