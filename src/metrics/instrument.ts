import { EngineError, type Engine } from '../engine/types.ts';
import type { Meter } from '../forecasting/metering.ts';
import type { RateLimiter } from '../ratelimit/limiter.ts';
import { queueDepthGauge, type Metrics } from './metrics.ts';

/**
 * Decorators that record metrics around the service's ports (engine, meter, rate limiter), so
 * no feature code carries metric calls: the numbers come from the one place every call goes through.
 */
export function instrumentEngine(engine: Engine, metrics: Metrics): Engine {
  const depth = queueDepthGauge(metrics);
  metrics.addCollector(() => {
    const s = engine.stats?.();
    if (!s) return;
    depth.set({ state: 'running' }, s.running);
    depth.set({ state: 'waiting' }, s.waiting);
  });
  // Prototype delegation: methods added to the port later pass through unchanged.
  const wrapped: Engine = Object.create(engine) as Engine;
  Object.assign(wrapped, {
    async forecast(job: Parameters<Engine['forecast']>[0], opts?: Parameters<Engine['forecast']>[1]) {
      let timed = false;
      const onTiming = (t: { queueMs: number; runMs: number }) => {
        timed = true;
        metrics.queueWaitSeconds.observe({ model: job.model }, t.queueMs / 1000);
        metrics.inferenceSeconds.observe({ model: job.model }, t.runMs / 1000);
        opts?.onTiming?.(t);
      };
      const started = performance.now();
      try {
        const out = await engine.forecast(job, { ...opts, onTiming });
        metrics.forecasts.inc({ model: job.model, outcome: 'ok' });
        return out;
      } catch (err) {
        metrics.forecasts.inc({ model: job.model, outcome: err instanceof EngineError ? err.kind : 'failed' });
        throw err;
      } finally {
        // Engines that do not report timing (fakes, older remotes): the whole call counts as running.
        if (!timed) metrics.inferenceSeconds.observe({ model: job.model }, (performance.now() - started) / 1000);
      }
    },
  });
  return wrapped;
}

export function instrumentMeter(meter: Meter, metrics: Metrics): Meter {
  const wrapped: Meter = Object.create(meter) as Meter;
  wrapped.hold = async (req) => {
    const hold = await meter.hold(req);
    return {
      async commit(outcome) {
        const charge = await hold.commit(outcome);
        metrics.creditsCharged.inc({ model: req.model, source: req.source }, outcome.credits ?? req.credits);
        return charge;
      },
      release: (reason) => hold.release(reason),
    };
  };
  return wrapped;
}

export function instrumentRateLimiter(limiter: RateLimiter, metrics: Metrics): RateLimiter {
  const wrapped: RateLimiter = Object.create(limiter) as RateLimiter;
  wrapped.consume = async (accountId, points, billingActive) => {
    const d = await limiter.consume(accountId, points, billingActive);
    if (!d.allowed) metrics.rateLimitRefusals.inc({ scope: 'account' });
    return d;
  };
  const consumeKey = limiter.consumeKey?.bind(limiter);
  if (consumeKey) {
    wrapped.consumeKey = async (keyId, limit, points) => {
      const d = await consumeKey(keyId, limit, points);
      if (!d.allowed) metrics.rateLimitRefusals.inc({ scope: 'key' });
      return d;
    };
  }
  wrapped.consumeAuth = async (route, clientAddress) => {
    const d = await limiter.consumeAuth(route, clientAddress);
    if (!d.allowed) metrics.rateLimitRefusals.inc({ scope: 'address' });
    return d;
  };
  return wrapped;
}
