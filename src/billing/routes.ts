import { z } from 'zod';
import type { Deps } from '../deps-types.ts';
import { principalOf } from '../http/auth.ts';
import { AppError } from '../shared/errors.ts';
import { AUTH_ERRORS, errors } from '../shared/schemas.ts';
import type { ZApp } from '../http/types.ts';
import { AlertSettings, AlertSettingsRequest, getAlertSettings, setAlertSettings } from './alerts.ts';
import { donePage, localPage } from './pages.ts';
import { completeLocalSession, LOCAL_PAGE_PATH, viewLocalSession } from './providers/local.ts';
import {
  BillingCostsRequest,
  BillingCostsResponse,
  PaymentsBillingProfile,
  PaymentsBillingSession,
  PaymentsBillingSessionRequest,
  WebhookAck,
} from './schemas.ts';
import { costReport, createPaymentsSession, paymentsProfile } from './service.ts';
import { applyProviderEvent } from './state.ts';

const bearer = [{ bearer: [] }];

export function registerBillingRoutes(app: ZApp, deps: Deps): void {
  // GET /api/account/billing (getBillingSummary) is declared in operations.ts.
  app.get('/api/account/billing/payments', {
    config: { auth: 'user', scope: 'billing:read' },
    schema: {
      operationId: 'getPaymentsBillingProfile',
      example: {
        response: {
          provider: 'local',
          billing_active: false,
          customer_id: null,
          subscription_id: null,
          billing_changed_at: null,
          available_actions: ['checkout'],
        },
      },
      summary: 'Payments profile',
      description:
        'Whether paid billing is on for the account, which payments provider the service uses, and whether a checkout or portal session can be opened.',
      tags: ['billing'],
      security: bearer,
      response: { 200: PaymentsBillingProfile, ...errors(...AUTH_ERRORS) },
    },
    handler: async (req) => paymentsProfile(deps, principalOf(req)),
  });

  app.post('/api/account/billing/payments', {
    config: { auth: 'user', scope: 'billing:write' },
    schema: {
      operationId: 'createPaymentsBillingSession',
      example: { request: { action: 'checkout', success_url: 'http://127.0.0.1:8000/app/billing?ok=1', cancel_url: 'http://127.0.0.1:8000/app/billing' } },
      summary: 'Open a checkout or portal session',
      description:
        'Opens a session with the payments provider (checkout to start paid billing, portal to manage it) and answers the URL to send the browser to.',
      tags: ['billing'],
      security: bearer,
      body: PaymentsBillingSessionRequest,
      response: { 200: PaymentsBillingSession, ...errors(...AUTH_ERRORS, 409, 502) },
    },
    handler: async (req) => createPaymentsSession(deps, principalOf(req), req.body),
  });

  app.get('/api/account/alerts', {
    config: { auth: 'user', scope: 'billing:read' },
    schema: {
      operationId: 'getAccountAlerts',
      example: { response: { low_balance_threshold: 500, low_balance_alerted: false } },
      tags: ['billing'],
      summary: 'Low-balance alert setting',
      description: 'The low-balance threshold (credits) and whether its alert was mailed since the balance was last above it.',
      security: bearer,
      response: { 200: AlertSettings, ...errors(...AUTH_ERRORS) },
    },
    handler: async (req) => getAlertSettings(deps, principalOf(req)),
  });

  app.patch('/api/account/alerts', {
    config: { auth: 'user', scope: 'account:write' },
    schema: {
      operationId: 'updateAccountAlerts',
      example: { request: { low_balance_threshold: 500 }, response: { low_balance_threshold: 500, low_balance_alerted: false } },
      tags: ['billing'],
      summary: 'Set the low-balance alert',
      description:
        'Sets the low-balance threshold in credits (null: off). The first debit that takes the prepaid balance below it mails the account, once; a top-up back above it, or a new threshold, re-arms the alert.',
      security: bearer,
      body: AlertSettingsRequest,
      response: { 200: AlertSettings, ...errors(...AUTH_ERRORS) },
    },
    handler: async (req) => setAlertSettings(deps, principalOf(req), req.body.low_balance_threshold),
  });

  app.post('/api/billing/costs', {
    config: { auth: 'user', scope: 'usage:read' },
    schema: {
      operationId: 'getBillingCosts',
      example: { request: { requestIds: ['req_5f0c6a1e2b3d4c5e6f708192a3b4c5d6'] } },
      summary: 'Cost of past requests',
      tags: ['billing'],
      security: bearer,
      description: "Cost in nano-USD of the caller's own requests, by request id (a batch id covers its items).",
      body: BillingCostsRequest,
      response: { 200: BillingCostsResponse, ...errors(...AUTH_ERRORS) },
    },
    handler: async (req) => costReport(deps, principalOf(req), req.body.requestIds),
  });

  // The local provider's pages: the link's secret is the credential (single use, one hour).
  const Params = z.object({ kind: z.enum(['checkout', 'portal']), token: z.string().min(10).max(200) });
  app.get(`${LOCAL_PAGE_PATH}/:kind/:token`, {
    schema: {
      operationId: 'getLocalBillingPage',
      example: { request: { kind: 'checkout', token: 'tsfl_Q2hhbmdlIG1lOiB0aGlz' } },
      produces: ['text/html'],
      summary: 'Local checkout or portal page',
      tags: ['billing'],
      description: 'Local provider: the built-in checkout or portal page (HTML).',
      params: Params,
    },
    handler: async (req, reply) => {
      const view = await viewLocalSession(deps.database.db, req.params.kind, req.params.token, deps.clock.now());
      return reply
        .type('text/html; charset=utf-8')
        .header('cache-control', 'no-store')
        .send(localPage(view.kind, view.email, req.url.split('?')[0] ?? ''));
    },
  });
  app.post(`${LOCAL_PAGE_PATH}/:kind/:token`, {
    schema: {
      operationId: 'submitLocalBillingPage',
      example: { request: { kind: 'checkout', token: 'tsfl_Q2hhbmdlIG1lOiB0aGlz', decision: 'confirm' } },
      consumes: ['application/x-www-form-urlencoded'],
      produces: ['text/html'],
      redirect: { status: 303, description: 'To the success or cancel URL of the session, when it has one (else a page saying what was done).' },
      summary: 'Submit the local checkout or portal page',
      tags: ['billing'],
      description: 'Local provider: confirm (billing on for checkout, off for portal) or cancel; redirects to the session URL.',
      params: Params,
      body: z.object({ decision: z.enum(['confirm', 'cancel']) }),
    },
    handler: async (req, reply) => {
      const { kind, token } = req.params;
      if (req.body.decision === 'cancel') {
        const view = await viewLocalSession(deps.database.db, kind, token, deps.clock.now());
        const to = kind === 'checkout' ? view.cancel_url : view.success_url;
        return to ? reply.redirect(to, 303) : reply.type('text/html; charset=utf-8').send(donePage('Nothing was changed.'));
      }
      const view = await completeLocalSession(deps.database.db, kind, token, deps.clock.now());
      const msg = kind === 'checkout' ? 'Billing is active.' : 'Billing is off.';
      return view.success_url ? reply.redirect(view.success_url, 303) : reply.type('text/html; charset=utf-8').send(donePage(msg));
    },
  });

  const provider = deps.payments;
  if (provider.verifyWebhook) {
    const verify = provider.verifyWebhook.bind(provider);
    // Signatures cover the exact bytes sent, so this route keeps the body as a string.
    void app.register(async (scope) => {
      scope.removeContentTypeParser(['application/json']);
      scope.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => done(null, body));
      scope.post(`/api/billing/webhooks/${provider.name}`, {
        schema: {
          operationId: 'receivePaymentsWebhook',
          tags: ['billing'],
          description: 'Payment provider events (signature-verified): turn metered billing on and off.',
          response: { 200: WebhookAck, ...errors(400) },
        },
        handler: async (req) => {
          const raw = typeof req.body === 'string' ? req.body : '';
          const sig = req.headers[`${provider.name}-signature`];
          let event: ReturnType<typeof verify>;
          try {
            event = verify(raw, typeof sig === 'string' ? sig : undefined);
          } catch (err) {
            req.log.warn({ err: err instanceof Error ? err.message : String(err) }, 'webhook signature rejected');
            throw new AppError('invalid_argument', 'Webhook signature verification failed');
          }
          const outcome = await applyProviderEvent(deps.database.db, provider.name, event, deps.clock.now());
          req.log.info({ event: event.id, type: event.type, outcome }, 'payments webhook');
          return { received: true as const, outcome };
        },
      });
    });
  }
}
