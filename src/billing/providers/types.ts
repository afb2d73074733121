/**
 * A payment provider: where an account turns metered billing on and off, and where metered
 * usage is reported. `local` (built-in pages, no money moves) and `stripe` implement it.
 */
export interface ProviderUser {
  id: string;
  email: string;
}

export interface ProviderAccount {
  customer_id: string | null;
  billing_active: boolean;
}

export interface ProviderSession {
  session_id: string;
  url: string;
}

export interface MeteredUsageItem {
  id: string;
  user_id: string;
  customer_id: string | null;
  credits: number;
  created_at: number;
}

/** What a verified webhook means for an account. */
export type BillingChange =
  | { kind: 'activate'; userId: string | null; customerId: string; subscriptionId: string | null }
  | { kind: 'deactivate'; userId: string | null; customerId: string; subscriptionId: string | null }
  | { kind: 'ignore' };

export interface VerifiedEvent {
  id: string;
  type: string;
  /** When the provider created the event (epoch ms): state changes apply in this order, not delivery order. */
  created: number;
  change: BillingChange;
}

export interface PaymentsProvider {
  readonly name: 'none' | 'local' | 'stripe';
  checkout(user: ProviderUser, account: ProviderAccount, urls: { successUrl: string; cancelUrl: string }): Promise<ProviderSession>;
  portal(user: ProviderUser, account: ProviderAccount, urls: { returnUrl: string }): Promise<ProviderSession>;
  /** Sends metered usage; resolves when the provider accepted every item (items are idempotent by id). */
  reportUsage(items: MeteredUsageItem[]): Promise<void>;
  /** Verifies a webhook delivery's signature over the raw body; throws when it does not verify. */
  verifyWebhook?(rawBody: string, signature: string | undefined): VerifiedEvent;
}
