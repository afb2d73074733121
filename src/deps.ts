import type { Config } from './config.ts';
import { openDatabase, type Database } from './db/index.ts';
import { createMailer, type Mailer } from './mail/mailer.ts';
import { createCaptchaVerifier, type CaptchaVerifier } from './accounts/captcha.ts';
import { systemClock, type Clock } from './shared/clock.ts';
import type { CredentialResolver } from './accounts/credentials.ts';
import type { AccountCreatedHook } from './accounts/service.ts';
import { unmeteredMeter, type Meter } from './forecasting/metering.ts';

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
  /** Run inside the transaction that creates an account (free credits are granted there). */
  accountCreatedHooks: AccountCreatedHook[];
  /** Catalog size for the status page; the forecasting feature replaces it. */
  modelCount(): { count: number; available: number };
  /** Credits and usage for every forecast; the billing feature provides the real one. */
  meter: Meter;
  /** false silences the HTTP logger (tests). */
  logger?: false;
  /** Cleanup run when the app closes. */
  close(): Promise<void>;
}

export async function createDeps(config: Config, overrides: Partial<Omit<Deps, 'config' | 'close'>> = {}): Promise<Deps> {
  const database = overrides.database ?? (await openDatabase(config.database));
  const deps: Deps = {
    config,
    database,
    mailer: overrides.mailer ?? createMailer(config.mail),
    captcha: overrides.captcha ?? createCaptchaVerifier(config.captcha),
    clock: overrides.clock ?? systemClock,
    startedAt: Date.now(),
    credentialResolvers: overrides.credentialResolvers ?? [],
    accountCreatedHooks: overrides.accountCreatedHooks ?? [],
    modelCount: overrides.modelCount ?? (() => ({ count: 0, available: 0 })),
    meter: overrides.meter ?? unmeteredMeter,
    async close() {
      await database.close();
    },
  };
  if (overrides.logger === false) deps.logger = false;
  return deps;
}
