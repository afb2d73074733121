import type { Config } from '../../config.ts';
import type { Database } from '../../db/index.ts';
import type { Clock } from '../../shared/clock.ts';
import { customerStore } from '../service.ts';
import { createLocalProvider } from './local.ts';
import { createStripeProvider, type StripeClientOptions } from './stripe.ts';
import type { PaymentsProvider } from './types.ts';

/** PAYMENTS_PROVIDER picks the implementation: `local` (default) or `stripe`. */
export function createPaymentsProvider(config: Config, database: Database, clock: Clock): PaymentsProvider {
  const stripe = config.billing.stripe;
  if (config.billing.provider === 'stripe' && stripe) {
    return createStripeProvider(stripe, customerStore(database.db, clock, 'stripe'), stripe.apiBase ? clientOptionsFor(stripe.apiBase) : {});
  }
  return createLocalProvider({ db: database.db, clock, publicBaseUrl: config.publicBaseUrl });
}

/** STRIPE_API_BASE points the SDK elsewhere (stripe-mock, or a loopback stand-in in tests). */
function clientOptionsFor(apiBase: string): StripeClientOptions {
  const u = new URL(apiBase);
  const protocol = u.protocol === 'http:' ? 'http' : 'https';
  return { host: u.hostname, port: u.port || (protocol === 'http' ? 80 : 443), protocol, maxNetworkRetries: 0 };
}
