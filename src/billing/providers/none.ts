import { AppError } from '../../shared/errors.ts';
import type { PaymentsProvider } from './types.ts';

const unavailable = () => new AppError('conflict', 'Billing is not available on this server: no payments provider is configured (PAYMENTS_PROVIDER)');

/**
 * The default: no payments provider. Nobody can turn metered billing on, so calls are paid from
 * free and granted credits only. Metered usage cannot arise here; reporting accepts nothing.
 */
export const noPaymentsProvider: PaymentsProvider = {
  name: 'none',
  async checkout() {
    throw unavailable();
  },
  async portal() {
    throw unavailable();
  },
  async reportUsage(items) {
    if (items.length > 0) throw new Error('no payments provider is configured to report metered usage to');
  },
};
