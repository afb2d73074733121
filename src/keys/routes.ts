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
      summary: 'Create an API key',
      description:
        'Creates an API key, optionally with scopes beyond the default (forecast, usage:read, billing:read) and limits: expires_at, allowed_models, monthly_credit_limit, rate_limit_per_minute. The secret is in this answer only.',
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
      summary: 'Rename an API key or change its limits',
      description:
        'Changes the label and the limits of a key (expires_at, allowed_models, monthly_credit_limit, rate_limit_per_minute): an absent field stays as it is, null removes the limit. Takes effect on the next call made with the key. Scopes cannot be changed: create a new key.',
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
