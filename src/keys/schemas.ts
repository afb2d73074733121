import { z } from 'zod';
import { SCOPE_NAMES, SCOPES } from '../shared/scopes.ts';

/** At most this many entries in a key's allowed_models. */
export const MAX_ALLOWED_MODELS = 50;
/** The highest per-key rate limit (requests per minute) and monthly credit limit that can be set. */
export const MAX_KEY_RATE_PER_MINUTE = 1_000_000;
export const MAX_KEY_MONTHLY_CREDITS = 1_000_000_000_000;

const scopeList = SCOPE_NAMES.map((s) => `${s} (${SCOPES[s]})`).join('; ');

const ModelPattern = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[A-Za-z0-9._:/*-]+$/, 'a model id, or a pattern where * matches any characters (ttm-*)');

/** The limits a key can carry, shared by create (absent = none) and PATCH (absent = unchanged, null = cleared). */
const limitFields = {
  expires_at: z.iso
    .datetime({ offset: true })
    .nullish()
    .describe('When the key stops working (ISO 8601, in the future); null or absent: never. After it, the key is refused with 401 invalid_credential.'),
  allowed_models: z
    .array(ModelPattern)
    .min(1)
    .max(MAX_ALLOWED_MODELS)
    .nullish()
    .describe(
      'Models this key may run: ids (auto-ets) or patterns where * matches any characters (ttm-*). Applies to forecasts, every batch item and every ensemble member; others are refused with 403 key_model_not_allowed. null or absent: every model the account may use.',
    ),
  monthly_credit_limit: z
    .number()
    .int()
    .min(0)
    .max(MAX_KEY_MONTHLY_CREDITS)
    .nullish()
    .describe(
      'Credits this key may spend per calendar month (UTC), counting calls in flight; a call that would pass it is refused before it runs with 402 key_budget_exceeded. null or absent: no limit of its own.',
    ),
  rate_limit_per_minute: z
    .number()
    .int()
    .min(1)
    .max(MAX_KEY_RATE_PER_MINUTE)
    .nullish()
    .describe(
      "Requests per minute for this key (a batch counts its items), on top of the account's limit; past it: 429 with retry-after. null or absent: the account's limit only.",
    ),
};

export const KeyRecord = z
  .object({
    id: z.string().describe('Key id (key_…), used in the key routes.'),
    label: z.string().describe('Name of the key, unique among the live keys of the account.'),
    prefix: z.string().describe('The first characters of the secret, to recognise the key.'),
    created_at: z.string(),
    last_used_at: z.string().nullable(),
    scopes: z.array(z.enum(SCOPE_NAMES)).describe('What the key may do.'),
    expires_at: z.string().nullable(),
    allowed_models: z.array(z.string()).nullable(),
    monthly_credit_limit: z.number().int().nullable(),
    rate_limit_per_minute: z.number().int().nullable(),
    spend_this_month: z.number().int().describe('Credits charged to calls made with this key this calendar month (UTC).'),
  })
  .meta({ id: 'ApiKey' });
export const CreatedKey = KeyRecord.extend({ key: z.string().describe('The secret. Shown this once only.') }).meta({ id: 'CreatedApiKey' });
export const CreateKeyRequest = z
  .object({
    label: z.string().trim().min(1).max(100).describe('Name of the key, unique among the live keys of the account.'),
    scopes: z
      .array(z.enum(SCOPE_NAMES))
      .min(1)
      .max(SCOPE_NAMES.length)
      .optional()
      .describe(`What the key may do; default forecast, usage:read, billing:read. The scopes: ${scopeList}. Cannot be changed later.`),
    ...limitFields,
  })
  .meta({ id: 'CreateKeyRequest' });
export const UpdateKeyRequest = z
  .object({
    label: z.string().trim().min(1).max(100).optional().describe('New name of the key.'),
    ...limitFields,
    // Named so that sending it says why, instead of "unknown field" or, as it was, being ignored.
    scopes: z
      .never({ error: 'Scopes cannot be changed: create a new key with the scopes you need (POST /api/account/keys), then revoke this one' })
      .optional()
      .describe('Not changeable: a key keeps the scopes it was created with. Create a new key instead.'),
  })
  // Any other field is a 422 naming it: a misspelt limit must not be a silent 200.
  .strict()
  .meta({ id: 'UpdateKeyRequest' });
export const KeyIdParams = z.object({ key_id: z.string().min(1).max(64).describe('The key id (key_…).') });
export const ValidateCredentialRequest = z
  .object({ api_key: z.string().max(512).nullish().describe('Key to check (tsfm_…); default: the credential of the call.') })
  .meta({ id: 'ValidateCredentialRequest' });
export const ValidateCredentialResponse = z
  .object({ valid: z.boolean(), auth_type: z.enum(['session', 'api_key', 'oauth']), user: z.string(), key: z.string().optional() })
  .meta({ id: 'ValidateCredentialResponse' });

export type CreateKeyInput = z.output<typeof CreateKeyRequest>;
export type UpdateKeyInput = z.output<typeof UpdateKeyRequest>;
