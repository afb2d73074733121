import Stripe from 'stripe';
import type { MeteredUsageItem, PaymentsProvider, ProviderAccount, ProviderSession, ProviderUser, VerifiedEvent } from './types.ts';

export interface StripeSettings {
  secretKey: string;
  webhookSecret: string;
  priceId: string;
  meterEventName: string;
}

/** Where the SDK sends its requests (STRIPE_API_BASE: stripe-mock, or a loopback stand-in in tests). */
export type StripeClientOptions = Pick<Stripe.StripeConfig, 'host' | 'port' | 'protocol' | 'maxNetworkRetries'>;

/**
 * Stripe through its official SDK. Checkout creates a subscription to a metered price; the
 * customer portal manages it; webhooks (signature-verified) turn billing on and off; metered
 * credits go to a Billing Meter as meter events whose identifier is our outbox id, so a retried
 * report is counted once.
 */
export function createStripeProvider(
  settings: StripeSettings,
  ensureCustomer: (user: ProviderUser, account: ProviderAccount, create: () => Promise<string>) => Promise<string>,
  clientOptions: StripeClientOptions = {},
): PaymentsProvider & { client: Stripe } {
  const client = new Stripe(settings.secretKey, { maxNetworkRetries: 2, timeout: 20_000, ...clientOptions });
  const customerFor = (user: ProviderUser, account: ProviderAccount) =>
    ensureCustomer(user, account, async () => {
      const c = await client.customers.create({ email: user.email, metadata: { user_id: user.id } }, { idempotencyKey: `customer-${user.id}` });
      return c.id;
    });
  return {
    name: 'stripe',
    client,
    async checkout(user, account, urls): Promise<ProviderSession> {
      const customer = await customerFor(user, account);
      const s = await client.checkout.sessions.create({
        mode: 'subscription',
        customer,
        client_reference_id: user.id,
        line_items: [{ price: settings.priceId }],
        success_url: urls.successUrl,
        cancel_url: urls.cancelUrl,
        subscription_data: { metadata: { user_id: user.id } },
        metadata: { user_id: user.id },
      });
      if (!s.url) throw new Error('Stripe returned a checkout session without a URL');
      return { session_id: s.id, url: s.url };
    },
    async portal(user, account, urls): Promise<ProviderSession> {
      const customer = await customerFor(user, account);
      const s = await client.billingPortal.sessions.create({ customer, return_url: urls.returnUrl });
      return { session_id: s.id, url: s.url };
    },
    async reportUsage(items: MeteredUsageItem[]): Promise<void> {
      for (const item of items) {
        if (!item.customer_id) throw new Error(`metered usage ${item.id} has no Stripe customer`);
        await client.billing.meterEvents.create({
          event_name: settings.meterEventName,
          identifier: item.id,
          timestamp: Math.floor(item.created_at / 1000),
          payload: { stripe_customer_id: item.customer_id, value: String(item.credits) },
        });
      }
    },
    verifyWebhook(rawBody: string, signature: string | undefined): VerifiedEvent {
      if (!signature) throw new Error('missing stripe-signature header');
      const event = client.webhooks.constructEvent(rawBody, signature, settings.webhookSecret);
      return { id: event.id, type: event.type, created: event.created * 1000, change: changeOf(event) };
    },
  };
}

const idOf = (x: string | { id: string } | null | undefined): string | null => (x == null ? null : typeof x === 'string' ? x : x.id);

function changeOf(event: Stripe.Event): VerifiedEvent['change'] {
  switch (event.type) {
    case 'checkout.session.completed': {
      const s = event.data.object;
      const customerId = idOf(s.customer);
      if (s.mode !== 'subscription' || !customerId) return { kind: 'ignore' };
      return { kind: 'activate', userId: s.client_reference_id ?? s.metadata?.user_id ?? null, customerId, subscriptionId: idOf(s.subscription) };
    }
    case 'customer.subscription.created':
    case 'customer.subscription.updated':
    case 'customer.subscription.deleted': {
      const sub = event.data.object;
      const customerId = idOf(sub.customer);
      if (!customerId) return { kind: 'ignore' };
      const live = event.type !== 'customer.subscription.deleted' && (sub.status === 'active' || sub.status === 'trialing');
      return { kind: live ? 'activate' : 'deactivate', userId: sub.metadata?.user_id ?? null, customerId, subscriptionId: sub.id };
    }
    default:
      return { kind: 'ignore' };
  }
}
