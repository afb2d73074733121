import { z } from 'zod';
import type { Deps } from '../deps-types.ts';
import { principalOf } from '../http/auth.ts';
import { AUTH_ERRORS, errors } from '../shared/schemas.ts';
import type { ZApp } from '../http/types.ts';
import { findAccounts, grantCredits, listAdjustments, resetUsage } from './service.ts';

const Adjustment = z
  .object({
    id: z.string(),
    action: z.enum(['grant_credits', 'reset_usage']),
    actor_user_id: z.string(),
    target_user_id: z.string(),
    amount: z.number().int().describe('Credits added to (or, negative, removed from) the balance'),
    balance_before: z.number().int(),
    balance_after: z.number().int(),
    usage_events_deleted: z.number().int().nullable(),
    window_start: z.string().nullable(),
    window_end: z.string().nullable(),
    reason: z.string(),
    note: z.string().nullable(),
    idempotency_key: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: 'BillingAdjustment' });

const UserId = z.string().trim().min(1).max(64);
const Reason = z.string().trim().min(1).max(500);
const Note = z.string().max(2000).nullish();
const IdemKey = z.string().trim().min(1).max(200).nullish();

const GrantCreditsRequest = z
  .object({ target_user_id: UserId, amount: z.number().int(), reason: Reason, note: Note, idempotency_key: IdemKey })
  .meta({ id: 'GrantCreditsRequest' });
const ResetUsageRequest = z
  .object({
    target_user_id: UserId,
    reason: Reason,
    start: z.string().max(64).nullish(),
    end: z.string().max(64).nullish(),
    note: Note,
    idempotency_key: IdemKey,
  })
  .meta({ id: 'ResetUsageRequest' });

const ADMIN_ERRORS = errors(...AUTH_ERRORS, 403);

const AccountMatch = z
  .object({
    id: z.string(),
    email: z.string(),
    name: z.string().nullable(),
    role: z.enum(['user', 'admin']),
    created_at: z.string(),
    balance: z.number().int().describe('Free (prepaid) credits left'),
    billing_active: z.boolean(),
  })
  .meta({ id: 'AdminAccountMatch' });

export function registerAdminRoutes(app: ZApp, deps: Deps): void {
  app.get('/api/admin/users', {
    config: { auth: 'admin', scope: 'admin' },
    schema: {
      operationId: 'adminFindAccounts',
      example: { request: { q: 'example.com', limit: 20 } },
      summary: 'Find accounts (admin)',
      tags: ['admin'],
      security: [{ bearer: [] }],
      description: 'Accounts whose e-mail contains `q` (case-insensitive) or whose id is `q`, with their credit balance.',
      querystring: z.object({ q: z.string().trim().min(1).max(320), limit: z.coerce.number().int().min(1).max(100).default(20) }),
      response: { 200: z.object({ accounts: z.array(AccountMatch) }), ...ADMIN_ERRORS },
    },
    handler: async (req) => findAccounts(deps, req.query),
  });

  app.get('/api/admin/billing/adjustments', {
    config: { auth: 'admin', scope: 'admin' },
    schema: {
      operationId: 'adminListAdjustments',
      example: { request: { target_user_id: 'usr_0193b1f0c2d47a6e9b3f5c1d2e4f6a8b', limit: 50 } },
      summary: 'List credit adjustments (admin)',
      description: 'The audited record of administrator credit grants and usage resets, newest first, optionally for one account.',
      tags: ['admin'],
      security: [{ bearer: [] }],
      querystring: z.object({
        target_user_id: z.string().max(64).nullish(),
        limit: z.coerce.number().int().min(1).max(500).default(100),
        offset: z.coerce.number().int().min(0).default(0),
      }),
      response: { 200: z.object({ adjustments: z.array(Adjustment), limit: z.number().int(), offset: z.number().int() }), ...ADMIN_ERRORS },
    },
    handler: async (req) => listAdjustments(deps, req.query),
  });

  app.post('/api/admin/billing/credits', {
    config: { auth: 'admin', scope: 'admin' },
    schema: {
      operationId: 'adminGrantCredits',
      example: {
        request: { target_user_id: 'usr_0193b1f0c2d47a6e9b3f5c1d2e4f6a8b', amount: 5000, reason: 'Pilot customer', idempotency_key: 'grant-2026-11-pilot' },
      },
      summary: 'Grant credits (admin)',
      description:
        'Adds credits to an account, audited with the reason. Idempotent by `idempotency_key`: repeating it does not grant twice (409 when the key was used for a different grant).',
      tags: ['admin'],
      security: [{ bearer: [] }],
      body: GrantCreditsRequest,
      response: { 200: z.object({ adjustment: Adjustment, balance: z.number().int() }), ...ADMIN_ERRORS, ...errors(404, 409) },
    },
    handler: async (req) => grantCredits(deps, principalOf(req), req.body),
  });

  app.post('/api/admin/billing/usage/reset', {
    config: { auth: 'admin', scope: 'admin' },
    schema: {
      operationId: 'adminResetUsage',
      example: {
        request: {
          target_user_id: 'usr_0193b1f0c2d47a6e9b3f5c1d2e4f6a8b',
          reason: 'Double-charged by a client bug',
          start: '2026-11-20T00:00:00Z',
          end: '2026-11-21T00:00:00Z',
          idempotency_key: 'reset-2026-11-20',
        },
      },
      summary: 'Reset usage (admin)',
      description:
        "Deletes an account's usage events in a period and restores the credits they used, audited with the reason. Idempotent by `idempotency_key`.",
      tags: ['admin'],
      security: [{ bearer: [] }],
      body: ResetUsageRequest,
      response: {
        200: z.object({ adjustment: Adjustment, usage_events_deleted: z.number().int(), credits_restored: z.number().int(), balance: z.number().int() }),
        ...ADMIN_ERRORS,
        ...errors(404, 409),
      },
    },
    handler: async (req) => resetUsage(deps, principalOf(req), req.body),
  });
}
