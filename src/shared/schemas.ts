import { z } from 'zod';
import { ERROR_CODES } from './errors.ts';

const RequestId = z.string().optional().describe('The request id (x-request-id): quote it when you ask for help.');

export const ErrorBody = z
  .object({ error: z.string(), code: z.enum(ERROR_CODES), endpoint: z.string().nullish(), request_id: RequestId })
  .meta({ id: 'ErrorResponseBody' });

export const ValidationErrorBody = z
  .object({
    detail: z.array(
      z.object({
        loc: z.array(z.union([z.string(), z.number().int()])),
        msg: z.string(),
        type: z.string(),
        input: z.unknown().optional(),
        ctx: z.record(z.string(), z.unknown()).optional(),
      }),
    ),
    request_id: RequestId,
  })
  .meta({ id: 'HTTPValidationError' });

/** Error responses for the OpenAPI document of a route. */
export function errors(...statuses: number[]): Record<number, z.ZodType> {
  const out: Record<number, z.ZodType> = {};
  for (const s of statuses) out[s] = s === 422 ? ValidationErrorBody : ErrorBody;
  return out;
}

/** The statuses every authenticated route can answer. */
export const AUTH_ERRORS = [400, 401, 422, 429] as const;

/** RFC 5321's limits: a mailbox's local part (before @) has at most 64 octets, a whole address at most 254 (a path is 256 with its <>). */
export const MAX_EMAIL_LENGTH = 254;
export const MAX_EMAIL_LOCAL_LENGTH = 64;

// Trimmed before it is checked, so the pipe's input side is a plain string: the format is restated for the OpenAPI document.
/** An address the service stores or mails (register, invitations, contact): longer ones cannot be delivered. */
export const Email = z
  .string()
  .trim()
  .max(MAX_EMAIL_LENGTH, { error: `An e-mail address has at most ${MAX_EMAIL_LENGTH} characters` })
  .pipe(
    z.email().refine((e) => e.slice(0, e.lastIndexOf('@')).length <= MAX_EMAIL_LOCAL_LENGTH, {
      error: `The part of an e-mail address before @ has at most ${MAX_EMAIL_LOCAL_LENGTH} characters`,
    }),
  )
  .meta({ format: 'email' });
/**
 * An address looked up, not stored (sign-in, forgot-password): as long as addresses could be before
 * the limits above, so an account registered then can still sign in and reset its password.
 */
export const EmailLookup = z.string().trim().max(320).pipe(z.email()).meta({ format: 'email' });
export const Password = z.string().min(8).max(1024);
export const IsoDateTime = z.string().describe('ISO 8601 timestamp');
export const Ok = z.object({ ok: z.literal(true) });

/** An idempotency key (docs/idempotency.md): 1 to 255 printable ASCII characters, e.g. a UUID. */
export const IdempotencyKey = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[\x20-\x7E]+$/, 'Use printable ASCII characters only (e.g. a UUID)');
