import type { Config } from './config.ts';
import type { Deps } from './deps-types.ts';
import { openDatabase } from './db/index.ts';
import { createMailer } from './mail/mailer.ts';
import { createCaptchaVerifier } from './accounts/captcha.ts';
import { systemClock } from './shared/clock.ts';
import { createLedgerMeter, modelAccessFromConfig, startHoldSweeper } from './billing/meter.ts';
import { getBillingAccount } from './billing/ledger.ts';
import { sendLowBalanceMail } from './billing/alerts.ts';
import { accountCreatedHooksFor, emailVerifiedHooksFor } from './billing/free-credits.ts';
import { createPaymentsProvider } from './billing/providers/index.ts';
import { rateLimitOf, startUsageReporter } from './billing/service.ts';
import { createRateLimiter } from './ratelimit/limiter.ts';
import type { Engine } from './engine/types.ts';
import { createEngine } from './engine/engine.ts';
import { createRoutingEngine } from './engine/remote/routing.ts';
import { Catalog } from './catalog/catalog.ts';
import { mcpResource } from './oauth/endpoints.ts';
import { createMetrics, type Metrics } from './metrics/metrics.ts';
import { instrumentEngine, instrumentMeter, instrumentRateLimiter } from './metrics/instrument.ts';
import { oauthAccessTokenResolver } from './oauth/resolver.ts';
import { startIdempotencySweeper } from './idempotency/operation.ts';
import { createFetcher } from './outbound/fetcher.ts';
import { createScheduler, type Scheduler } from './schedules/runner.ts';

export async function createDeps(config: Config, overrides: Partial<Omit<Deps, 'config' | 'close'>> = {}): Promise<Deps> {
  const database = overrides.database ?? (await openDatabase(config.database));
  const metrics: Metrics = overrides.metrics ?? createMetrics({ defaultMetrics: overrides.logger !== false });
  const engine = instrumentEngine(overrides.engine ?? (await defaultEngine(config, metrics)), metrics);
  await engine.refresh?.();
  const clock = overrides.clock ?? systemClock;
  const catalog = overrides.catalog ?? new Catalog(engine, modelAccessFromConfig(config));
  const rateLimiter = instrumentRateLimiter(
    overrides.rateLimiter ??
      createRateLimiter(config.rateLimit, async (accountId) => rateLimitOf(config, (await getBillingAccount(database.db, accountId))?.billing_active ?? false)),
    metrics,
  );
  const payments = overrides.payments ?? createPaymentsProvider(config, database, clock);
  const mailer = overrides.mailer ?? createMailer(config.mail);
  const fetcher = overrides.fetcher ?? createFetcher(config.outbound);
  const stops: Array<() => void> = [];
  let scheduler: Scheduler | null = null;
  const deps: Deps = {
    engine,
    catalog,
    config,
    database,
    mailer,
    captcha: overrides.captcha ?? createCaptchaVerifier(config.captcha),
    clock,
    startedAt: Date.now(),
    credentialResolvers: overrides.credentialResolvers ?? [oauthAccessTokenResolver(mcpResource(config))],
    accountCreatedHooks: [...accountCreatedHooksFor(config), ...(overrides.accountCreatedHooks ?? [])],
    emailVerifiedHooks: [...emailVerifiedHooksFor(config), ...(overrides.emailVerifiedHooks ?? [])],
    meter: instrumentMeter(
      overrides.meter ??
        createLedgerMeter({
          database,
          clock,
          config,
          catalog,
          // The mail goes out after the debit committed, off the request's path; a failure is logged, never answered.
          onLowBalance: (alert) =>
            sendLowBalanceMail({ database, mailer, config }, alert).catch((err: unknown) => {
              process.stderr.write(`${JSON.stringify({ level: 50, msg: 'low-balance mail failed', userId: alert.userId, err: String(err) })}\n`);
            }),
        }),
      metrics,
    ),
    payments,
    rateLimiter,
    metrics,
    fetcher,
    async close() {
      for (const stop of stops) stop();
      await scheduler?.stop();
      await fetcher.close();
      await rateLimiter.close();
      await engine.close();
      await database.close();
    },
  };
  if (overrides.logger === false) deps.logger = false;
  if (overrides.logStream) deps.logStream = overrides.logStream;
  if (overrides.backgroundJobs !== false) {
    const log = (what: string) => (err: unknown) => process.stderr.write(`${JSON.stringify({ level: 50, msg: `${what} failed`, err: String(err) })}\n`);
    stops.push(
      startHoldSweeper({ database, clock, config, catalog }, log('credit hold sweep'), (released) => {
        if (released === null) metrics.holdSweeps.inc({ result: 'error' });
        else {
          metrics.holdSweeps.inc({ result: 'ok' });
          metrics.holdsReleased.inc(released);
        }
      }).stop,
    );
    stops.push(startUsageReporter({ database, clock, config, payments }, log('metered usage report')).stop);
    stops.push(startIdempotencySweeper({ database, clock }, log('idempotency key sweep')).stop);
    if (config.schedules.scheduler) {
      // Every replica runs the loop; runs are claimed in the database (ADR 0020).
      scheduler = createScheduler(deps, { log: (what, err) => log(what)(err) });
      scheduler.start();
    }
  }
  return deps;
}

/** The local worker pool. */
export function localEngine(config: Config): Engine {
  const {
    workers,
    timeoutMs,
    maxQueue,
    queueWaitMs,
    accountConcurrency,
    accountQueue,
    modelsDir,
    threads,
    workerRecycleBytes,
    workerIdleRecycleBytes,
    workerNice,
  } = config.inference;
  return createEngine({
    workerRecycleBytes,
    workerNice,
    workerIdleRecycleBytes,
    idleRecycleMs: config.memory.idleCompactMs,
    ...(workers !== null ? { poolSize: workers } : {}),
    ...(accountConcurrency !== null ? { tenantConcurrency: accountConcurrency } : {}),
    ...(accountQueue !== null ? { tenantQueue: accountQueue } : {}),
    timeoutMs,
    maxQueue,
    queueWaitMs,
    modelsDir,
    threads,
  });
}

/** The gateway's engine: the local pool, behind the remote router when REMOTE_MODELS or MODEL_FALLBACKS are set. */
export function gatewayEngine(config: Config, local: Engine, metrics?: Metrics): Engine {
  const r = config.remote;
  if (r.routes.length === 0 && r.fallbacks.size === 0) return local;
  return createRoutingEngine(local, {
    routes: r.routes,
    fallbacks: r.fallbacks,
    timeoutMs: r.timeoutMs,
    retries: r.retries,
    healthIntervalMs: r.healthIntervalMs,
    token: r.token,
    ...(metrics ? { onRequest: (endpoint: string, outcome: string) => metrics.remoteRequests.inc({ endpoint, outcome }) } : {}),
  });
}

async function defaultEngine(config: Config, metrics: Metrics): Promise<Engine> {
  return gatewayEngine(config, localEngine(config), metrics);
}
