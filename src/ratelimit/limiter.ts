import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { AppError } from '../shared/errors.ts';

/**
 * Fixed one-minute windows through `rate-limiter-flexible`: in process memory by default, shared
 * by every process through Redis when REDIS_URL is set (with an in-memory insurance limiter, so
 * a Redis outage degrades to per-process limits instead of failing requests).
 *
 * One counter per account whatever the credential; the account's limit (free or billing) is
 * decided per call, so turning billing on raises the limit at once.
 */
export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix seconds at which the window resets. */
  resetAt: number;
  /** Seconds to wait (0 when allowed). */
  retryAfter: number;
}

export interface RateLimiter {
  /**
   * Counts `points` requests against the account (a batch of n items counts n). `billingActive`,
   * when the caller read it with the credential, picks the account's limit without a lookup.
   */
  consume(accountId: string, points?: number, billingActive?: boolean): Promise<RateDecision>;
  /**
   * Counts `points` against one API key with its own `limit` per minute (the key's
   * rate_limit_per_minute, on top of the account's limit; ADR 0016). Optional for test doubles.
   */
  consumeKey?(keyId: string, limit: number, points?: number): Promise<RateDecision>;
  /** Brute-force guard for login, register and forgot-password, per client address. */
  consumeAuth(route: string, clientAddress: string): Promise<RateDecision>;
  readonly backend: 'memory' | 'redis';
  /** Resolves once the shared store answers (at once in memory); false after `timeoutMs` without it. */
  ready(timeoutMs?: number): Promise<boolean>;
  close(): Promise<void>;
}

/** The 429 for a refused decision, with its retry-after header. */
export function refuse(d: RateDecision, what: string): AppError {
  return new AppError('rate_limit_exceeded', `Rate limit exceeded: ${d.limit} ${what} per minute; retry in ${d.retryAfter} s`, {
    'retry-after': String(d.retryAfter),
  });
}

/** The part of a principal the limits need (structural: this module imports no feature). */
export interface LimitedCaller {
  user: { id: string };
  kind: string;
  credentialId: string;
  key?: { rateLimitPerMinute: number | null };
  /** Read with the credential (same query), when the resolver knows it: saves the account lookup. */
  billingActive?: boolean;
}

/**
 * Counts `points` against the caller's account and, for an API key with rate_limit_per_minute,
 * against the key too. Returns the decision to report in headers (the refused one, else the one
 * with fewer requests left) and what it limits; the caller throws `refuse` when not allowed.
 */
export async function consumeFor(
  limiter: Pick<RateLimiter, 'consume' | 'consumeKey'>,
  caller: LimitedCaller,
  points: number,
): Promise<{ decision: RateDecision; what: string }> {
  const account = await limiter.consume(caller.user.id, points, caller.billingActive);
  const perKey = caller.kind === 'api_key' ? caller.key?.rateLimitPerMinute : null;
  if (!account.allowed || perKey == null || !limiter.consumeKey) return { decision: account, what: 'requests for this account' };
  const key = await limiter.consumeKey(caller.credentialId, perKey, points);
  if (!key.allowed || key.remaining < account.remaining) return { decision: key, what: 'requests for this API key (its rate_limit_per_minute)' };
  return { decision: account, what: 'requests for this account' };
}

/** Counts `points` outside HTTP hooks (MCP tool calls), account and key; throws the 429 when refused. */
export async function spendPoints(limiter: Pick<RateLimiter, 'consume' | 'consumeKey'>, caller: LimitedCaller, points: number): Promise<RateDecision> {
  const { decision, what } = await consumeFor(limiter, caller, points);
  if (!decision.allowed) throw refuse(decision, what);
  return decision;
}

export interface RateLimiterSettings {
  freePerMinute: number;
  billingPerMinute: number;
  authPerMinute: number;
  redisUrl: string | null;
  /** Namespaces the keys (tests use a fresh one so they never share counters). */
  keyPrefix?: string;
}

const WINDOW_S = 60;

export function createRateLimiter(settings: RateLimiterSettings, limitFor: (accountId: string) => Promise<number>): RateLimiter {
  const prefix = settings.keyPrefix ?? 'tsfm';
  // The store counts up to the highest limit; each account's own limit is applied on top.
  const ceiling = Math.max(settings.freePerMinute, settings.billingPerMinute);
  let redis: Redis | null = null;
  const make = (name: string, points: number): RateLimiterAbstract => {
    const memory = new RateLimiterMemory({ keyPrefix: `${prefix}:${name}`, points, duration: WINDOW_S });
    if (!redis) return memory;
    return new RateLimiterRedis({ storeClient: redis, keyPrefix: `${prefix}:${name}`, points, duration: WINDOW_S, insuranceLimiter: memory });
  };
  if (settings.redisUrl) {
    redis = new Redis(settings.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: false });
    // Errors are answered by the insurance limiter; the client reconnects by itself.
    redis.on('error', () => undefined);
  }
  const accounts = make('acct', ceiling);
  // Keys' own limits go up to MAX_KEY_RATE_PER_MINUTE; each key's limit is applied on top.
  const keys = make('key', 1_000_000);
  const auth = make('auth', settings.authPerMinute);

  const decide = async (limiter: RateLimiterAbstract, key: string, points: number, limit: number): Promise<RateDecision> => {
    let res: RateLimiterRes;
    try {
      res = await limiter.consume(key, points);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      res = err;
    }
    const resetAt = Math.ceil((Date.now() + res.msBeforeNext) / 1000);
    const allowed = res.consumedPoints <= limit;
    return {
      allowed,
      limit,
      remaining: Math.max(0, limit - res.consumedPoints),
      resetAt,
      retryAfter: allowed ? 0 : Math.max(1, Math.ceil(res.msBeforeNext / 1000)),
    };
  };

  return {
    backend: redis ? 'redis' : 'memory',
    async consume(accountId, points = 1, billingActive) {
      const limit = billingActive === undefined ? await limitFor(accountId) : billingActive ? settings.billingPerMinute : settings.freePerMinute;
      return decide(accounts, accountId, Math.max(1, Math.floor(points)), limit);
    },
    consumeKey(keyId, limit, points = 1) {
      return decide(keys, keyId, Math.max(1, Math.floor(points)), limit);
    },
    consumeAuth(route, clientAddress) {
      return decide(auth, `${route}:${clientAddress}`, 1, settings.authPerMinute);
    },
    async ready(timeoutMs = 2000) {
      const r = redis;
      if (!r || r.status === 'ready') return true;
      return new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), timeoutMs);
        r.once('ready', () => {
          clearTimeout(timer);
          resolve(true);
        });
      });
    },
    async close() {
      if (redis) {
        redis.disconnect();
        redis = null;
      }
    },
  };
}
