import type { Config } from '../../config.ts';
import type { Database } from '../../db/index.ts';
import type { Clock } from '../../shared/clock.ts';
import { customerStore } from '../service.ts';
import { createLocalProvider } from './local.ts';
import { createStripeProvider, type StripeClientOptions } from './stripe.ts';
import type { PaymentsProvider } from './types.ts';

/** PAYMENTS_PROVIDER picks the implementation: `local` (default) or `stripe`. */
export function createPaymentsProvider(config: Config, database: Database, clock: Clock, stripeClient: StripeClientOptions = {}): PaymentsProvider {
  if (config.billing.provider === 'stripe' && config.billing.stripe) {
    return createStripeProvider(config.billing.stripe, customerStore(database.db, clock, 'stripe'), stripeClient);
  }
  return createLocalProvider({ db: database.db, clock, publicBaseUrl: config.publicBaseUrl });
}
