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

export const Email = z.string().trim().max(320).pipe(z.email());
export const Password = z.string().min(8).max(1024);
export const IsoDateTime = z.string().describe('ISO 8601 timestamp');
export const Ok = z.object({ ok: z.literal(true) });

/** An idempotency key (docs/idempotency.md): 1 to 255 printable ASCII characters, e.g. a UUID. */
export const IdempotencyKey = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[\x20-\x7E]+$/, 'Use printable ASCII characters only (e.g. a UUID)');
