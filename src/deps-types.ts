import type { Config } from './config.ts';
import type { Database } from './db/index.ts';
import type { Mailer } from './mail/mailer.ts';
import type { CaptchaVerifier } from './accounts/captcha.ts';
import type { Clock } from './shared/clock.ts';
import type { CredentialResolver } from './accounts/credentials.ts';
import type { AccountCreatedHook } from './accounts/service.ts';
import type { EmailVerifiedHook } from './accounts/verification.ts';
import type { Meter } from './forecasting/metering.ts';
import type { PaymentsProvider } from './billing/providers/types.ts';
import type { RateLimiter } from './ratelimit/limiter.ts';
import type { Engine } from './engine/types.ts';
import type { Catalog } from './catalog/catalog.ts';
import type { Metrics } from './metrics/metrics.ts';
import type { Fetcher } from './outbound/fetcher.ts';

/** Everything the services need, wired once by a plain factory (no DI container). */
export interface Deps {
  config: Config;
  database: Database;
  mailer: Mailer;
  captcha: CaptchaVerifier;
  clock: Clock;
  startedAt: number;
  /** Credential kinds beyond sessions and API keys (OAuth access tokens). */
  credentialResolvers: CredentialResolver[];
  /** Run inside the transaction that creates an account (the credit counter; free credits with FREE_CREDITS_ON=register or an already verified e-mail). */
  accountCreatedHooks: AccountCreatedHook[];
  /** Run inside the transaction that marks an e-mail verified (free credits with FREE_CREDITS_ON=verify). */
  emailVerifiedHooks: EmailVerifiedHook[];
  engine: Engine;
  catalog: Catalog;
  /** Credits and usage for every forecast (src/billing/meter.ts: ledger, holds, usage events). */
  meter: Meter;
  /** Where billing is turned on and off and metered usage is reported (PAYMENTS_PROVIDER). */
  payments: PaymentsProvider;
  /**
   * Per-account request budget shared by all of an account's credentials. The HTTP hook counts
   * every authenticated request (a batch counts its items); other entry points (MCP) call
   * `spendPoints(rateLimiter, principal, points)` themselves (account and API key limits).
   */
  rateLimiter: RateLimiter;
  /** Every fetch of a URL a user gave (series sources, schedule sources and callbacks): private networks refused (src/outbound). */
  fetcher: Fetcher;
  /** Prometheus metrics (GET /metrics); the engine, meter and rate limiter above are instrumented. */
  metrics: Metrics;
  /** Background jobs (hold sweeper, usage reporter); false keeps them off (tests that drive them by hand). */
  backgroundJobs?: boolean;
  /** false silences the HTTP logger (tests). */
  logger?: false;
  /** Where the HTTP logger writes (default stdout); tests capture it to check what is logged. */
  logStream?: { write(line: string): void };
  /** Cleanup run when the app closes. */
  close(): Promise<void>;
}
