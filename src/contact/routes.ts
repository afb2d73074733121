import { z } from 'zod';
import type { Deps } from '../deps-types.ts';
import { principalOf } from '../http/auth.ts';
import { AUTH_ERRORS, Email, errors } from '../shared/schemas.ts';
import type { ZApp } from '../http/types.ts';
import { saveContactMessage, sendInvites } from './service.ts';

const ContactRequest = z
  .object({
    name: z.string().trim().min(1).max(120),
    email: Email,
    message: z.string().trim().min(1).max(2500),
    company: z.string().max(160).nullish(),
    topic: z.string().max(160).nullish(),
    source: z.string().max(64).nullish(),
    analytics_distinct_id: z.string().max(200).nullish(),
  })
  .meta({ id: 'ContactRequest' });
const ContactResponse = z.object({ id: z.string(), status: z.string(), created_at: z.string() }).meta({ id: 'ContactResponse' });

export const MAX_INVITES_PER_REQUEST = 20;
const SendInviteRequest = z.object({ emails: z.array(Email).min(1).max(MAX_INVITES_PER_REQUEST) }).meta({ id: 'SendInviteRequest' });
const SendInviteResponse = z
  .object({ invites: z.array(z.object({ id: z.string(), email: z.string(), ref: z.string(), created_at: z.string() })) })
  .meta({ id: 'SendInviteResponse' });

export function registerContactRoutes(app: ZApp, deps: Deps): void {
  app.post('/api/contact', {
    schema: {
      operationId: 'submitContact',
      example: { request: { name: 'Ada', email: 'ada@example.com', message: 'Can I run this on our own servers?' } },
      summary: 'Send a message to the operator',
      description: 'Stores a contact-form message for the operator (name, e-mail, message). Limited per client address.',
      tags: ['contact'],
      body: ContactRequest,
      response: { 200: ContactResponse, ...errors(422, 429) },
    },
    handler: async (req) => saveContactMessage(deps, req.body),
  });

  app.post('/api/account/invites', {
    config: { auth: 'user', scope: 'account:write' },
    schema: {
      operationId: 'sendInvites',
      example: { request: { emails: ['grace@example.com'] } },
      summary: 'Invite people by e-mail',
      tags: ['account'],
      security: [{ bearer: [] }],
      body: SendInviteRequest,
      description:
        'Needs a confirmed e-mail address; at most INVITES_PER_DAY addresses per account in 24 hours and AUTH_RATE_LIMIT_PER_MINUTE requests per client address.',
      response: { 200: SendInviteResponse, ...errors(...AUTH_ERRORS, 403) },
    },
    handler: async (req) => ({ invites: await sendInvites(deps, principalOf(req), req.body.emails) }),
  });
}
