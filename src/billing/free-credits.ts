import type { AccountCreatedHook } from '../accounts/service.ts';
import type { EmailVerifiedHook } from '../accounts/verification.ts';
import type { Config } from '../config.ts';
import { ensureBillingAccount, grantFreeCreditsOnce } from './ledger.ts';

/**
 * When the free credits are granted (FREE_CREDITS_ON): at account creation with `register`, or
 * when the account is created with an already verified e-mail (identity provider); otherwise only
 * the credit counter is opened and the grant waits for the e-mail confirmation.
 */
export function accountCreatedHooksFor(config: Config): AccountCreatedHook[] {
  const { freeCredits, freeCreditsOn } = config.billing;
  return [
    async (trx, user) => {
      if (freeCreditsOn === 'register' || user.email_verified_at !== null) await grantFreeCreditsOnce(trx, user.id, freeCredits, user.created_at);
      else await ensureBillingAccount(trx, user.id, user.created_at);
    },
  ];
}

/** The grant at e-mail confirmation (a no-op when it already happened, e.g. FREE_CREDITS_ON=register). */
export function emailVerifiedHooksFor(config: Config): EmailVerifiedHook[] {
  return [
    async (trx, user, now) => {
      await grantFreeCreditsOnce(trx, user.id, config.billing.freeCredits, now);
    },
  ];
}
