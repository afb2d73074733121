import { z } from 'zod';
import { resolveCredential } from '../accounts/credentials.ts';
import type { Deps } from '../deps.ts';
import { credentialFrom, principalOf } from '../http/auth.ts';
import { AppError } from '../http/errors.ts';
import { AUTH_ERRORS, errors, Ok } from '../http/schemas.ts';
import type { ZApp } from '../http/types.ts';
import { createApiKey, listApiKeys, revokeAllApiKeys, revokeApiKey } from './service.ts';

const KeyRecord = z
  .object({ id: z.string(), label: z.string(), prefix: z.string(), created_at: z.string(), last_used_at: z.string().nullable() })
  .meta({ id: 'ApiKey' });
const CreatedKey = KeyRecord.extend({ key: z.string().describe('The secret. Shown this once only.') }).meta({ id: 'CreatedApiKey' });
const CreateKeyRequest = z.object({ label: z.string().trim().min(1).max(100) }).meta({ id: 'CreateKeyRequest' });
export const ValidateCredentialRequest = z.object({ api_key: z.string().max(512).nullish() }).meta({ id: 'ValidateCredentialRequest' });
export const ValidateCredentialResponse = z
  .object({ valid: z.boolean(), auth_type: z.enum(['session', 'api_key', 'oauth']), user: z.string(), key: z.string().optional() })
  .meta({ id: 'ValidateCredentialResponse' });

export function registerKeyRoutes(app: ZApp, deps: Deps): void {
  app.get('/api/account/keys', {
    config: { auth: 'user' },
    schema: { operationId: 'listAccountKeys', tags: ['keys'], security: [{ bearer: [] }], response: { 200: z.object({ keys: z.array(KeyRecord) }), ...errors(...AUTH_ERRORS) } },
    handler: async (req) => ({ keys: await listApiKeys(deps, principalOf(req)) }),
  });

  app.post('/api/account/keys', {
    config: { auth: 'user' },
    schema: { operationId: 'createAccountKey', tags: ['keys'], security: [{ bearer: [] }], body: CreateKeyRequest, response: { 200: CreatedKey, ...errors(...AUTH_ERRORS, 409) } },
    handler: async (req) => createApiKey(deps, principalOf(req), req.body.label),
  });

  app.delete('/api/account/keys', {
    config: { auth: 'user' },
    schema: {
      operationId: 'revokeAllAccountKeys',
      tags: ['keys'],
      security: [{ bearer: [] }],
      description: 'Revokes every API key of the account at once. Password resets and "sign out everywhere" leave API keys valid; this is the way to end them all.',
      response: { 200: z.object({ ok: z.literal(true), revoked: z.number().int() }).meta({ id: 'RevokeAllKeysResponse' }), ...errors(...AUTH_ERRORS) },
    },
    handler: async (req) => ({ ok: true as const, revoked: await revokeAllApiKeys(deps, principalOf(req)) }),
  });

  app.delete('/api/account/keys/:key_id', {
    config: { auth: 'user' },
    schema: {
      operationId: 'revokeAccountKey',
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

  app.post('/v1/validate', {
    schema: {
      operationId: 'validateCredential',
      tags: ['auth'],
      body: ValidateCredentialRequest.nullish(),
      response: { 200: ValidateCredentialResponse, ...errors(400, 401, 422) },
    },
    handler: async (req) => {
      const token = req.body?.api_key ?? credentialFrom(req);
      if (!token) throw new AppError('missing_credential', 'Send api_key in the body or an Authorization: Bearer header');
      const p = await resolveCredential(deps.database.db, token, deps.clock.now(), deps.credentialResolvers);
      return {
        valid: true,
        auth_type: p.kind,
        user: p.user.id,
        ...(p.kind === 'api_key' ? { key: p.credentialId } : {}),
      };
    },
  });
}
