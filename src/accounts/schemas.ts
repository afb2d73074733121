import { z } from 'zod';
import { Email, EmailLookup, Password } from '../shared/schemas.ts';

export const PublicUserSchema = z
  .object({
    id: z.string(),
    email: z.string(),
    name: z.string().nullable(),
    role: z.enum(['user', 'admin']),
    email_verified: z.boolean().meta({ description: 'The owner confirmed the address (mailed link, or an identity provider that verified it)' }),
    created_at: z.string(),
  })
  .meta({ id: 'AccountUser' });

export const RegisterRequest = z
  .object({
    email: Email,
    password: Password,
    name: z.string().max(200).nullish(),
    ref: z.string().max(200).nullish(),
    accepted_data_terms_version: z.string().max(64).nullish(),
    accepted_free_tier_data_terms: z.boolean().nullish(),
    captcha_response: z.string().max(4096).nullish(),
    analytics_distinct_id: z.string().max(200).nullish(),
  })
  .meta({ id: 'RegisterRequest' });

export const LoginRequest = z
  .object({
    email: EmailLookup,
    password: Password,
    captcha_response: z.string().max(4096).nullish(),
    analytics_distinct_id: z.string().max(200).nullish(),
  })
  .meta({ id: 'LoginRequest' });

export const ForgotPasswordRequest = z.object({ email: EmailLookup }).meta({ id: 'ForgotPasswordRequest' });
export const ResetPasswordRequest = z.object({ token: z.string().min(1).max(512), password: Password }).meta({ id: 'ResetPasswordRequest' });

export const VerifyEmailRequest = z.object({ token: z.string().min(1).max(512) }).meta({ id: 'VerifyEmailRequest' });
export const VerifyEmailResponse = z
  .object({
    ok: z.literal(true),
    already_verified: z
      .boolean()
      .describe('true when the address was confirmed before this call (the link followed again, or another link of the account): nothing changed.'),
    user: PublicUserSchema,
  })
  .meta({ id: 'VerifyEmailResponse' });

export const SessionResponse = z.object({ token: z.string(), expires_at: z.string(), user: PublicUserSchema }).meta({ id: 'SessionResponse' });

export const PrivacySettingsRequest = z.object({ service_improvement_opt_in: z.boolean() }).meta({ id: 'PrivacySettingsRequest' });
export const PrivacySettings = z.object({ service_improvement_opt_in: z.boolean() }).meta({ id: 'PrivacySettings' });

export const MessageResponse = z.object({ ok: z.literal(true), message: z.string() });
