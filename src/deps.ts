import type { Config } from './config.ts';
import type { Deps } from './deps-types.ts';
import { openDatabase } from './db/index.ts';
import { createMailer } from './mail/mailer.ts';
import { createCaptchaVerifier } from './accounts/captcha.ts';
import { systemClock } from './shared/clock.ts';
import type { AccountCreatedHook } from './accounts/service.ts';
import { createLedgerMeter, modelAccessFromConfig, startHoldSweeper } from './billing/meter.ts';
import { getBillingAccount, openAccountWithFreeCredits } from './billing/ledger.ts';
import { createPaymentsProvider } from './billing/providers/index.ts';
import { rateLimitOf, startUsageReporter } from './billing/service.ts';
import { createRateLimiter } from './ratelimit/limiter.ts';
import type { Engine } from './engine/types.ts';
import { createEngine } from './engine/engine.ts';
import { Catalog } from './catalog/catalog.ts';
import { mcpResource } from './oauth/endpoints.ts';
import { oauthAccessTokenResolver } from './oauth/resolver.ts';

export async function createDeps(config: Config, overrides: Partial<Omit<Deps, 'config' | 'close'>> = {}): Promise<Deps> {
  const database = overrides.database ?? (await openDatabase(config.database));
  const engine = overrides.engine ?? (await defaultEngine(config));
  await engine.refresh?.();
  const clock = overrides.clock ?? systemClock;
  const catalog = overrides.catalog ?? new Catalog(engine, modelAccessFromConfig(config));
  const rateLimiter =
    overrides.rateLimiter ??
    createRateLimiter(config.rateLimit, async (accountId) => rateLimitOf(config, (await getBillingAccount(database.db, accountId))?.billing_active ?? false));
  const payments = overrides.payments ?? createPaymentsProvider(config, database, clock);
  const freeCredits: AccountCreatedHook = (trx, user) => openAccountWithFreeCredits(trx, user.id, config.billing.freeCredits, user.created_at);
  const stops: Array<() => void> = [];
  const deps: Deps = {
    engine,
    catalog,
    config,
    database,
    mailer: overrides.mailer ?? createMailer(config.mail),
    captcha: overrides.captcha ?? createCaptchaVerifier(config.captcha),
    clock,
    startedAt: Date.now(),
    credentialResolvers: overrides.credentialResolvers ?? [oauthAccessTokenResolver(mcpResource(config))],
    accountCreatedHooks: [freeCredits, ...(overrides.accountCreatedHooks ?? [])],
    meter: overrides.meter ?? createLedgerMeter({ database, clock, config, catalog }),
    payments,
    rateLimiter,
    async close() {
      for (const stop of stops) stop();
      await rateLimiter.close();
      await engine.close();
      await database.close();
    },
  };
  if (overrides.logger === false) deps.logger = false;
  if (overrides.backgroundJobs !== false) {
    const log = (what: string) => (err: unknown) => process.stderr.write(`${JSON.stringify({ level: 50, msg: `${what} failed`, err: String(err) })}\n`);
    stops.push(startHoldSweeper({ database, clock, config, catalog }, log('credit hold sweep')).stop);
    stops.push(startUsageReporter({ database, clock, config, payments }, log('metered usage report')).stop);
  }
  return deps;
}

async function defaultEngine(config: Config): Promise<Engine> {
  const { workers, timeoutMs, maxQueue, modelsDir, threads } = config.inference;
  return createEngine({ ...(workers !== null ? { poolSize: workers } : {}), timeoutMs, maxQueue, modelsDir, threads });
}
