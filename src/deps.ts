import type { Config } from './config.ts';
import { openDatabase, type Database } from './db/index.ts';
import { createMailer, type Mailer } from './mail/mailer.ts';
import { createCaptchaVerifier, type CaptchaVerifier } from './accounts/captcha.ts';
import { systemClock, type Clock } from './shared/clock.ts';
import type { CredentialResolver } from './accounts/credentials.ts';
import type { AccountCreatedHook } from './accounts/service.ts';
import { unmeteredMeter, type Meter } from './forecasting/metering.ts';
import type { Engine } from './engine/types.ts';
import { Catalog } from './catalog/catalog.ts';
import { mcpResource } from './oauth/endpoints.ts';
import { oauthAccessTokenResolver } from './oauth/resolver.ts';

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
  engine: Engine;
  catalog: Catalog;
  /** Credits and usage for every forecast; the billing feature provides the real one. */
  meter: Meter;
  /** false silences the HTTP logger (tests). */
  logger?: false;
  /** Cleanup run when the app closes. */
  close(): Promise<void>;
}

export async function createDeps(config: Config, overrides: Partial<Omit<Deps, 'config' | 'close'>> = {}): Promise<Deps> {
  const database = overrides.database ?? (await openDatabase(config.database));
  const engine = overrides.engine ?? (await defaultEngine(config));
  const deps: Deps = {
    engine,
    catalog: overrides.catalog ?? new Catalog(engine),
    config,
    database,
    mailer: overrides.mailer ?? createMailer(config.mail),
    captcha: overrides.captcha ?? createCaptchaVerifier(config.captcha),
    clock: overrides.clock ?? systemClock,
    startedAt: Date.now(),
    credentialResolvers: overrides.credentialResolvers ?? [oauthAccessTokenResolver(mcpResource(config))],
    accountCreatedHooks: overrides.accountCreatedHooks ?? [],
    meter: overrides.meter ?? unmeteredMeter,
    async close() {
      await engine.close();
      await database.close();
    },
  };
  if (overrides.logger === false) deps.logger = false;
  return deps;
}

async function defaultEngine(_config: Config): Promise<Engine> {
  throw new Error('no engine configured');
}
