import type { Config } from '../../config.ts';
import type { Database } from '../../db/index.ts';
import type { Clock } from '../../shared/clock.ts';
import { customerStore } from '../service.ts';
import { createLocalProvider } from './local.ts';
import { noPaymentsProvider } from './none.ts';
import { createStripeProvider, type StripeClientOptions } from './stripe.ts';
import type { PaymentsProvider } from './types.ts';

/**
 * PAYMENTS_PROVIDER picks the implementation: `none` (default: billing cannot be turned on),
 * `local` (development: a built-in page turns billing on, no money moves) or `stripe`.
 */
export function createPaymentsProvider(config: Config, database: Database, clock: Clock): PaymentsProvider {
  const stripe = config.billing.stripe;
  if (config.billing.provider === 'stripe' && stripe) {
    return createStripeProvider(stripe, customerStore(database.db, clock, 'stripe'), stripe.apiBase ? clientOptionsFor(stripe.apiBase) : {});
  }
  if (config.billing.provider === 'local') return createLocalProvider({ db: database.db, clock, publicBaseUrl: config.publicBaseUrl });
  return noPaymentsProvider;
}

/** The start-up warning for `local`, or null: it turns billing on for anyone without payment. */
export function paymentsWarning(config: Config): string | null {
  if (config.billing.provider !== 'local') return null;
  return 'PAYMENTS_PROVIDER=local is a development mode: any account can turn metered billing on from a built-in page without paying. Do not use it on a public server (PAYMENTS_PROVIDER=stripe, or leave it unset for no billing).';
}

/** STRIPE_API_BASE points the SDK elsewhere (stripe-mock, or a loopback stand-in in tests). */
function clientOptionsFor(apiBase: string): StripeClientOptions {
  const u = new URL(apiBase);
  const protocol = u.protocol === 'http:' ? 'http' : 'https';
  return { host: u.hostname, port: u.port || (protocol === 'http' ? 80 : 443), protocol, maxNetworkRetries: 0 };
}
