import { z } from 'zod';
import type { Deps } from '../deps-types.ts';
import { principalOf } from '../http/auth.ts';
import { AUTH_ERRORS, errors, Ok } from '../shared/schemas.ts';
import type { ZApp } from '../http/types.ts';
import { CreatedKey, CreateKeyRequest, KeyIdParams, KeyRecord, UpdateKeyRequest } from './schemas.ts';
import { createApiKey, listApiKeys, revokeAllApiKeys, revokeApiKey, updateApiKey } from './service.ts';

export function registerKeyRoutes(app: ZApp, deps: Deps): void {
  app.get('/api/account/keys', {
    config: { auth: 'user' },
    schema: {
      operationId: 'listAccountKeys',
      tags: ['keys'],
      example: {
        response: {
          keys: [
            {
              id: 'key_0193b1f0d9e87c5a4b3f2e1d0c9b8a7f',
              label: 'laptop',
              prefix: 'tsfm_AbC1',
              created_at: '2026-11-02T09:31:00.000Z',
              last_used_at: '2026-11-25T08:00:00.000Z',
              scopes: ['forecast', 'usage:read', 'billing:read'],
              expires_at: null,
              allowed_models: null,
              monthly_credit_limit: 5000,
              rate_limit_per_minute: null,
              spend_this_month: 120,
            },
          ],
        },
      },
      summary: 'List API keys',
      description: "The account's live API keys with their scopes, limits and the credits each spent this calendar month (UTC). Never the secrets.",
      security: [{ bearer: [] }],
      response: { 200: z.object({ keys: z.array(KeyRecord) }), ...errors(...AUTH_ERRORS) },
    },
    handler: async (req) => ({ keys: await listApiKeys(deps, principalOf(req)) }),
  });

  app.post('/api/account/keys', {
    config: { auth: 'user', scope: 'keys:write' },
    schema: {
      operationId: 'createAccountKey',
      tags: ['keys'],
      example: { request: { label: 'laptop' } },
      summary: 'Create an API key',
      description:
        'Creates an API key, optionally with scopes beyond the default (forecast, usage:read, billing:read) and limits: expires_at, allowed_models, monthly_credit_limit, rate_limit_per_minute. The secret is in this answer only. ' +
        'Made with an API key (scope keys:write), the new key may hold only scopes that key holds and limits no looser than its own (403 forbidden otherwise); a signed-in session has no such bound.',
      security: [{ bearer: [] }],
      body: CreateKeyRequest,
      response: { 200: CreatedKey, ...errors(...AUTH_ERRORS, 409) },
    },
    handler: async (req) => createApiKey(deps, principalOf(req), req.body),
  });

  app.delete('/api/account/keys', {
    config: { auth: 'user', scope: 'keys:write' },
    schema: {
      operationId: 'revokeAllAccountKeys',
      tags: ['keys'],
      example: { response: { ok: true, revoked: 2 } },
      summary: 'Revoke every API key',
      security: [{ bearer: [] }],
      description:
        'Revokes every API key of the account at once. Password resets and "sign out everywhere" leave API keys valid; this is the way to end them all.',
      response: { 200: z.object({ ok: z.literal(true), revoked: z.number().int() }).meta({ id: 'RevokeAllKeysResponse' }), ...errors(...AUTH_ERRORS) },
    },
    handler: async (req) => ({ ok: true as const, revoked: await revokeAllApiKeys(deps, principalOf(req)) }),
  });

  app.patch('/api/account/keys/:key_id', {
    config: { auth: 'user', scope: 'keys:write' },
    schema: {
      operationId: 'updateAccountKey',
      tags: ['keys'],
      example: {
        request: {
          key_id: 'key_0193b1f0d9e87c5a4b3f2e1d0c9b8a7f',
          label: 'nightly job',
          monthly_credit_limit: 5000,
          allowed_models: ['auto-*', 'seasonal-naive'],
        },
      },
      summary: 'Rename an API key or change its limits',
      description:
        'Changes the label and the limits of a key (expires_at, allowed_models, monthly_credit_limit, rate_limit_per_minute): an absent field stays as it is, null removes the limit. Takes effect on the next call made with the key. Scopes cannot be changed: create a new key. ' +
        "Called with an API key, the limits set may be no looser than that key's own (403 forbidden otherwise).",
      security: [{ bearer: [] }],
      params: KeyIdParams,
      body: UpdateKeyRequest,
      response: { 200: KeyRecord, ...errors(...AUTH_ERRORS, 404, 409) },
    },
    handler: async (req) => updateApiKey(deps, principalOf(req), req.params.key_id, req.body),
  });

  app.delete('/api/account/keys/:key_id', {
    config: { auth: 'user', scope: 'keys:write' },
    schema: {
      operationId: 'revokeAccountKey',
      tags: ['keys'],
      example: { request: { key_id: 'key_0193b1f0d9e87c5a4b3f2e1d0c9b8a7f' } },
      summary: 'Revoke an API key',
      description: 'Revokes the key at once; calls made with it are refused with 401 from then on.',
      security: [{ bearer: [] }],
      params: KeyIdParams,
      response: { 200: Ok, ...errors(...AUTH_ERRORS, 404) },
    },
    handler: async (req) => {
      await revokeApiKey(deps, principalOf(req), req.params.key_id);
      return { ok: true as const };
    },
  });
  // POST /v1/validate (validateCredential) is declared in operations.ts.
}
