import { z } from 'zod';

export const KeyRecord = z
  .object({ id: z.string(), label: z.string(), prefix: z.string(), created_at: z.string(), last_used_at: z.string().nullable() })
  .meta({ id: 'ApiKey' });
export const CreatedKey = KeyRecord.extend({ key: z.string().describe('The secret. Shown this once only.') }).meta({ id: 'CreatedApiKey' });
export const CreateKeyRequest = z.object({ label: z.string().trim().min(1).max(100) }).meta({ id: 'CreateKeyRequest' });
export const ValidateCredentialRequest = z
  .object({ api_key: z.string().max(512).nullish().describe('Key to check (tsfm_…); default: the credential of the call.') })
  .meta({ id: 'ValidateCredentialRequest' });
export const ValidateCredentialResponse = z
  .object({ valid: z.boolean(), auth_type: z.enum(['session', 'api_key', 'oauth']), user: z.string(), key: z.string().optional() })
  .meta({ id: 'ValidateCredentialResponse' });
