import { z } from 'zod';
import type { Deps } from '../deps-types.ts';
import { principalOf } from '../http/auth.ts';
import { AUTH_ERRORS, errors, Ok } from '../shared/schemas.ts';
import type { ZApp } from '../http/types.ts';
import { CreatedKey, CreateKeyRequest, KeyRecord } from './schemas.ts';
import { createApiKey, listApiKeys, revokeAllApiKeys, revokeApiKey } from './service.ts';

export function registerKeyRoutes(app: ZApp, deps: Deps): void {
  app.get('/api/account/keys', {
    config: { auth: 'user' },
    schema: {
      operationId: 'listAccountKeys',
      example: {
        response: {
          keys: [
            {
              id: 'key_0193b1f0d9e87c5a4b3f2e1d0c9b8a7f',
              label: 'laptop',
              prefix: 'tsfm_AbC1',
              created_at: '2026-11-02T09:31:00.000Z',
              last_used_at: '2026-11-25T08:00:00.000Z',
            },
          ],
        },
      },
      summary: 'List API keys',
      description: "The account's API keys: id, label, prefix, creation and last use. Secrets are never shown again after creation.",
      tags: ['keys'],
      security: [{ bearer: [] }],
      response: { 200: z.object({ keys: z.array(KeyRecord) }), ...errors(...AUTH_ERRORS) },
    },
    handler: async (req) => ({ keys: await listApiKeys(deps, principalOf(req)) }),
  });

  app.post('/api/account/keys', {
    config: { auth: 'user' },
    schema: {
      operationId: 'createAccountKey',
      example: { request: { label: 'laptop' } },
      summary: 'Create an API key',
      description: 'Creates an API key with a label. The secret (tsfm_…) is in this answer only: store it now. 409 when the label is taken.',
      tags: ['keys'],
      security: [{ bearer: [] }],
      body: CreateKeyRequest,
      response: { 200: CreatedKey, ...errors(...AUTH_ERRORS, 409) },
    },
    handler: async (req) => createApiKey(deps, principalOf(req), req.body.label),
  });

  app.delete('/api/account/keys', {
    config: { auth: 'user' },
    schema: {
      operationId: 'revokeAllAccountKeys',
      example: { response: { ok: true, revoked: 2 } },
      summary: 'Revoke all API keys',
      tags: ['keys'],
      security: [{ bearer: [] }],
      description:
        'Revokes every API key of the account at once. Password resets and "sign out everywhere" leave API keys valid; this is the way to end them all.',
      response: { 200: z.object({ ok: z.literal(true), revoked: z.number().int() }).meta({ id: 'RevokeAllKeysResponse' }), ...errors(...AUTH_ERRORS) },
    },
    handler: async (req) => ({ ok: true as const, revoked: await revokeAllApiKeys(deps, principalOf(req)) }),
  });

  app.delete('/api/account/keys/:key_id', {
    config: { auth: 'user' },
    schema: {
      operationId: 'revokeAccountKey',
      example: { request: { key_id: 'key_0193b1f0d9e87c5a4b3f2e1d0c9b8a7f' } },
      summary: 'Revoke an API key',
      description: 'Revokes one API key of the account by id; calls made with it then answer 401. 404 when no key of yours has this id.',
      tags: ['keys'],
      security: [{ bearer: [] }],
      params: z.object({ key_id: z.string().min(1).max(64) }),
      response: { 200: Ok, ...errors(...AUTH_ERRORS, 404) },
    },
    handler: async (req) => {
      await revokeApiKey(deps, principalOf(req), req.params.key_id);
      return { ok: true as const };
    },
  });
  // POST /v1/validate (validateCredential) is declared in operations.ts.
}
