import { z } from 'zod';

/**
 * Configuration is parsed once from the environment at start-up and passed down.
 * Nothing else reads process.env per request.
 */
const csv = z
  .string()
  .optional()
  .transform((v) =>
    (v ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s.length > 0),
  );

const intFrom = (def: number, min: number, max: number) => z.coerce.number().int().min(min).max(max).default(def);

const envSchema = z.object({
  PORT: intFrom(8000, 0, 65535),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATA_DIR: z.string().min(1).default('./data'),
  DATABASE_URL: z
    .string()
    .optional()
    .refine((v) => v === undefined || v === '' || /^postgres(ql)?:\/\//.test(v), {
      message: 'must be a postgres:// URL (leave unset for the embedded SQLite database)',
    }),
  MIGRATION_DATABASE_URL: z
    .string()
    .optional()
    .refine((v) => v === undefined || v === '' || /^postgres(ql)?:\/\//.test(v), {
      message: 'must be a postgres:// URL (a role that owns the schema; used only to run migrations)',
    }),
  // PostgreSQL: how long a cached API-key lookup may be served (ADR 0025; changes invalidate it at once). 0 = no cache.
  CREDENTIAL_CACHE_SECONDS: intFrom(30, 0, 3600),
  PUBLIC_BASE_URL: z.url().optional(),
  ADMIN_EMAILS: csv,
  SMTP_URL: z
    .string()
    .optional()
    .refine((v) => v === undefined || v === '' || /^smtps?:\/\//.test(v), {
      message: 'must be an smtp:// or smtps:// URL',
    }),
  MAIL_FROM: z.string().min(3).default('TSFM <no-reply@localhost>'),
  SESSION_TTL_DAYS: intFrom(30, 1, 3650),
  BODY_LIMIT_BYTES: intFrom(10 * 1024 * 1024, 1024, 512 * 1024 * 1024),
  MCP_BODY_LIMIT_BYTES: intFrom(2 * 1024 * 1024, 1024, 512 * 1024 * 1024),
  // A request's headers and body must arrive within this (408, connection closed; 0: no limit). ADR 0040.
  REQUEST_TIMEOUT_MS: intFrom(60_000, 0, 3_600_000),
  // A body must bring at least this many bytes per second, over each window (408; 0: no minimum).
  REQUEST_BODY_MIN_BYTES_PER_SECOND: intFrom(1024, 0, 1024 * 1024 * 1024),
  REQUEST_BODY_RATE_WINDOW_MS: intFrom(10_000, 100, 3_600_000),
  // An answer whose connection takes nothing for this long (a client that stopped reading) is dropped (0: never).
  RESPONSE_SEND_TIMEOUT_MS: intFrom(30_000, 0, 3_600_000),
  REGIONS: csv,
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  LOG_FORMAT: z.enum(['auto', 'pretty', 'json']).default('auto'),
  CAPTCHA_VERIFIER: z.enum(['off', 'hcaptcha', 'turnstile']).default('off'),
  CAPTCHA_SECRET: z.string().optional(),
  // The public widget key: pages served by this process (the MCP consent page) render the widget with it.
  CAPTCHA_SITE_KEY: z.string().max(200).optional(),
  COOKIE_SECURE: z.enum(['auto', 'true', 'false']).default('auto'),
  TRUST_PROXY: z.string().default('false'),
  MODELS_DIR: z.string().min(1).optional(),
  INFERENCE_WORKERS: z.coerce.number().int().min(1).max(256).optional(),
  INFERENCE_THREADS: intFrom(1, 1, 64),
  INFERENCE_TIMEOUT_MS: intFrom(30_000, 100, 3_600_000),
  INFERENCE_QUEUE: intFrom(256, 1, 100_000),
  INFERENCE_QUEUE_WAIT_MS: intFrom(30_000, 10, 3_600_000),
  INFERENCE_ACCOUNT_CONCURRENCY: z.coerce.number().int().min(1).max(256).optional(),
  INFERENCE_ACCOUNT_QUEUE: z.coerce.number().int().min(1).max(100_000).optional(),
  INFERENCE_WORKER_RECYCLE_MB: intFrom(256, 0, 1_000_000),
  INFERENCE_WORKER_IDLE_RECYCLE_MB: intFrom(64, 0, 1_000_000),
  INFERENCE_WORKER_NICE: intFrom(10, 0, 19),
  MEMORY_IDLE_COMPACT_MS: intFrom(1000, 0, 3_600_000),
  MEMORY_IDLE_COMPACT_MB: intFrom(64, 0, 1_000_000),
  FORECAST_MAX_OUTPUT_VALUES: intFrom(2_000_000, 1, 100_000_000),
  INFERENCE_MAX_JOB_WORK_MS: z.coerce.number().int().min(1).max(360_000_000).optional(),
  MCP_MAX_OUTPUT_VALUES: intFrom(20_000, 1, 100_000_000),
  OAUTH_ACCESS_TOKEN_TTL_SECONDS: intFrom(3600, 60, 86_400),
  OAUTH_REFRESH_TOKEN_TTL_DAYS: intFrom(30, 1, 365),
  OAUTH_CODE_TTL_SECONDS: intFrom(60, 10, 600),
  // Private-use redirect schemes accepted besides reverse-domain ones (RFC 8252 §7.1); comma-separated.
  OAUTH_EXTRA_REDIRECT_SCHEMES: z
    .string()
    .regex(/^([a-z][a-z0-9+.-]*)?(,[a-z][a-z0-9+.-]*)*$/, 'comma-separated lower-case URI schemes')
    .default('cursor'),
  OAUTH_GITHUB_CLIENT_ID: z.string().optional(),
  OAUTH_GITHUB_CLIENT_SECRET: z.string().optional(),
  OAUTH_GOOGLE_CLIENT_ID: z.string().optional(),
  OAUTH_GOOGLE_CLIENT_SECRET: z.string().optional(),
  OAUTH_OIDC_ISSUER: z.url().optional(),
  OAUTH_OIDC_CLIENT_ID: z.string().optional(),
  OAUTH_OIDC_CLIENT_SECRET: z.string().optional(),
  OAUTH_OIDC_NAME: z
    .string()
    .regex(/^[a-z][a-z0-9-]{0,31}$/, 'lower-case letters, digits and dashes, starting with a letter')
    .default('oidc'),
  OAUTH_OIDC_LABEL: z.string().max(64).default('Single sign-on'),
  FREE_CREDITS: intFrom(80000, 0, 1_000_000_000),
  FREE_CREDITS_ON: z.enum(['verify', 'register']).default('verify'),
  EMAIL_VERIFICATION_TTL_HOURS: intFrom(24, 1, 24 * 30),
  EMAIL_VERIFICATION_RESENDS_PER_HOUR: intFrom(5, 1, 1000),
  PASSWORD_RESET_MAILS_PER_HOUR: intFrom(5, 1, 1000),
  INVITES_PER_DAY: intFrom(50, 0, 1_000_000),
  CREDIT_PRICE_NANO_USD: intFrom(100_000, 0, 1_000_000_000_000),
  BILLING_HOLD_GRACE_MS: intFrom(60_000, 0, 86_400_000),
  IDEMPOTENCY_TTL_HOURS: intFrom(24, 1, 24 * 30),
  IDEMPOTENCY_WAIT_MS: intFrom(5000, 0, 60_000),
  IDEMPOTENCY_MAX_BODY_BYTES: intFrom(8 * 1024 * 1024, 0, 256 * 1024 * 1024),
  MODELS_BILLING_ONLY: csv,
  PAYMENTS_PROVIDER: z.enum(['none', 'local', 'stripe']).default('none'),
  PAYMENTS_LOCAL_ALLOW_HTTPS: z.enum(['true', 'false']).default('false'),
  BILLING_RETURN_ORIGINS: csv,
  STRIPE_SECRET_KEY: z.string().optional(),
  STRIPE_WEBHOOK_SECRET: z.string().optional(),
  STRIPE_PRICE_ID: z.string().optional(),
  STRIPE_METER_EVENT_NAME: z.string().min(1).default('tsfm_credits'),
  STRIPE_API_BASE: z.url().optional(),
  RATE_LIMIT_FREE_PER_MINUTE: intFrom(1000, 1, 1_000_000_000),
  RATE_LIMIT_BILLING_PER_MINUTE: intFrom(1_000_000, 1, 1_000_000_000),
  AUTH_RATE_LIMIT_PER_MINUTE: intFrom(60, 1, 1_000_000_000),
  REDIS_URL: z
    .string()
    .optional()
    .refine((v) => v === undefined || v === '' || /^rediss?:\/\//.test(v), { message: 'must be a redis:// or rediss:// URL' }),
  METRICS: z.enum(['on', 'off']).default('on'),
  ROLE: z.enum(['gateway', 'inference']).default('gateway'),
  REMOTE_MODELS: z.string().optional(),
  MODEL_FALLBACKS: z.string().optional(),
  REMOTE_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).optional(),
  REMOTE_RETRIES: intFrom(1, 0, 10),
  REMOTE_HEALTH_INTERVAL_MS: intFrom(5000, 200, 3_600_000),
  INFERENCE_TOKEN: z.string().min(16, 'use at least 16 characters').optional(),
  METRICS_TOKEN: z.string().min(16, 'use at least 16 characters').optional(),
  // Outbound fetches (series URLs, schedule sources and callbacks): docs/schedules.md, ADR 0020.
  OUTBOUND_ALLOW_HTTP: z.enum(['true', 'false']).default('false'),
  OUTBOUND_ALLOW_LOOPBACK: z.enum(['true', 'false']).default('false'),
  OUTBOUND_TIMEOUT_MS: intFrom(10_000, 100, 120_000),
  OUTBOUND_MAX_BYTES: intFrom(5 * 1024 * 1024, 1024, 256 * 1024 * 1024),
  OUTBOUND_MAX_REDIRECTS: intFrom(3, 0, 10),
  INGEST_MAX_BYTES: intFrom(5 * 1024 * 1024, 1024, 256 * 1024 * 1024),
  INGEST_MAX_ROWS: intFrom(200_000, 1, 10_000_000),
  INGEST_MAX_COLUMNS: intFrom(100, 2, 10_000),
  INGEST_MAX_SERIES: intFrom(1000, 1, 100_000),
  // Points of an ingest answer (gaps included), and null steps filled for gaps per point read (ADR 0040).
  INGEST_MAX_POINTS: intFrom(2_000_000, 1, 2_000_000),
  INGEST_GAP_FILL_RATIO: z.coerce.number().min(0).max(100_000).default(10),
  SCHEDULER: z.enum(['on', 'off']).default('on'),
  SCHEDULER_INTERVAL_MS: intFrom(5000, 50, 3_600_000),
  SCHEDULE_LEASE_MS: intFrom(120_000, 1000, 86_400_000),
  SCHEDULES_MAX_ACTIVE: intFrom(20, 0, 100_000),
  SCHEDULE_MAX_ATTEMPTS: intFrom(4, 1, 20),
  SCHEDULE_RETRY_BASE_MS: intFrom(30_000, 10, 86_400_000),
  SCHEDULE_PAUSE_AFTER_FAILURES: intFrom(5, 1, 1000),
  SCHEDULE_MAX_PAYLOAD_BYTES: intFrom(1024 * 1024, 1024, 64 * 1024 * 1024),
  // 32 bytes, base64 or hex: encrypts the webhook signing secrets at rest (AES-256-GCM).
  SCHEDULE_SECRET_KEY: z
    .string()
    .optional()
    .refine((v) => v === undefined || keyBytes(v) !== null, { message: 'must be 32 bytes as 64 hex digits or base64' }),
});

/** A 32-byte key given as 64 hex digits or base64; null when it is neither. */
export function keyBytes(v: string): Buffer | null {
  if (/^[0-9a-f]{64}$/i.test(v)) return Buffer.from(v, 'hex');
  const b = Buffer.from(v, 'base64');
  return b.length === 32 ? b : null;
}

/** A third-party identity provider people can sign in with (configured by environment). */
export interface IdentityProviderConfig {
  /** Key used in URLs and stored on identities: `github`, `google` or OAUTH_OIDC_NAME. */
  name: string;
  label: string;
  kind: 'github' | 'oidc';
  /** OIDC issuer (discovery); null for GitHub, which is plain OAuth 2.0. */
  issuer: string | null;
  clientId: string;
  clientSecret: string;
}

export type Config = {
  port: number;
  host: string;
  dataDir: string;
  database: { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string; migrationUrl: string | null; credentialCacheMs: number };
  publicBaseUrl: string;
  adminEmails: ReadonlySet<string>;
  mail: { smtpUrl: string | null; from: string; outboxDir: string };
  sessionTtlMs: number;
  bodyLimitBytes: number;
  /**
   * POST /mcp bodies: the MCP SDK validates and our tools prepare tool arguments in one turn of the
   * event loop (no sliced parser, no typed columns there), so the endpoint takes less than REST
   * (a 5.7 MB forecast over MCP held the loop 35–55 ms); larger data go through REST or a source URL.
   */
  mcpBodyLimitBytes: number;
  /** How long a connection may take to send a request (ADR 0040). */
  http: {
    /** Headers and body in all, from the request's first byte (Node's requestTimeout; 0: none). */
    requestTimeoutMs: number;
    /** A body bringing fewer bytes than this per second over a window is cut (0: no minimum). */
    bodyMinBytesPerSecond: number;
    bodyRateWindowMs: number;
    /** Once an answer is being sent, how long its connection may make no progress before it is closed (0: never). */
    sendTimeoutMs: number;
  };
  regions: string[];
  logLevel: z.infer<typeof envSchema>['LOG_LEVEL'];
  /** auto: human-readable lines when stdout is a terminal, JSON lines otherwise. */
  logFormat: z.infer<typeof envSchema>['LOG_FORMAT'];
  captcha: { kind: 'off' | 'hcaptcha' | 'turnstile'; secret: string | null; siteKey: string | null };
  cookieSecure: boolean;
  /** Fastify's trustProxy: false, a hop count, or the proxies' addresses/CIDRs (never "trust everyone"). */
  trustProxy: false | number | string[];
  inference: {
    modelsDir: string;
    workers: number | null;
    threads: number;
    /** Running time of one job, from the moment a worker picks it up. */
    timeoutMs: number;
    maxQueue: number;
    /** Longest wait for a free worker before 503 upstream_unavailable. */
    queueWaitMs: number;
    /** Jobs one account may run at once; null = half the workers (at least one). */
    accountConcurrency: number | null;
    /** Jobs one account may have waiting for a worker; one more is 429 while other accounts are admitted. null = a quarter of maxQueue (at least one). */
    accountQueue: number | null;
    /** A worker thread whose JavaScript heap has grown past this after a job is replaced (0: never). */
    workerRecycleBytes: number;
    /**
     * A worker thread whose JavaScript heap is past this after its last job is replaced once the
     * pool has had no job for memory.idleCompactMs (0: never).
     */
    workerIdleRecycleBytes: number;
    /** Nice steps the worker threads lower their CPU priority by (Linux; 0: none): the event loop comes first. */
    workerNice: number;
  };
  memory: {
    /** Quiet time (no request in flight, no job on a worker) after which memory is given back (0: never). */
    idleCompactMs: number;
    /**
     * The main thread's heap plus external memory must have grown this much since the last idle
     * collection for one to run (default 64 MB: only after large requests); 0: never (the pause is
     * 45–90 ms on a busy 2-core machine, for a request that arrives during it).
     */
    idleCompactGrowthBytes: number;
  };
  forecast: {
    /** Largest response, in numbers (horizon × series × (1 + quantile levels + samples)); beyond: 413. */
    maxOutputValues: number;
    /**
     * The same cap for MCP tool calls (at most maxOutputValues): the MCP SDK writes a tool's whole
     * answer in one JSON.stringify on the event loop, and an agent reads it as text.
     */
    mcpMaxOutputValues: number;
    /**
     * Largest estimated model time of one engine job (src/engine/work.ts, milliseconds of the
     * reference core); beyond: 413 at planning. Default half of INFERENCE_TIMEOUT_MS, so that what
     * is accepted has room for a loaded machine before the engine's time limit.
     */
    maxJobWorkMs: number;
  };
  /** The authorization server of the MCP endpoint. */
  oauth: { accessTokenTtlMs: number; refreshTokenTtlMs: number; codeTtlMs: number; extraRedirectSchemes: ReadonlySet<string> };
  identityProviders: IdentityProviderConfig[];
  /** E-mail verification links and the limits around account mail. */
  verification: {
    ttlMs: number;
    resendsPerHour: number;
    /** Password reset links mailed to one account per hour; forgot-password asks past it mail nothing. */
    resetMailsPerHour: number;
  };
  invitesPerDay: number;
  billing: {
    freeCredits: number;
    /** When the free credits are granted: once the e-mail is verified (default) or at register. */
    freeCreditsOn: 'verify' | 'register';
    creditPriceNanoUsd: number;
    /** A hold outlives the inference timeout by this much before the sweeper releases it. */
    holdGraceMs: number;
    billingOnlyModels: string[];
    /** `none` (default: no billing can be turned on), `local` (development only) or `stripe`. */
    provider: 'none' | 'local' | 'stripe';
    /** Origins that checkout/portal redirects may point to (PUBLIC_BASE_URL's origin is always allowed). */
    returnOrigins: string[];
    stripe: { secretKey: string; webhookSecret: string; priceId: string; meterEventName: string; apiBase: string | null } | null;
  };
  rateLimit: { freePerMinute: number; billingPerMinute: number; authPerMinute: number; redisUrl: string | null };
  /** Idempotency-Key on the forecast operations (docs/idempotency.md). */
  idempotency: {
    /** How long a stored answer is replayed (IDEMPOTENCY_TTL_HOURS, default 24 h). */
    ttlMs: number;
    /** How long a repeat waits for the first call still running before 409 idempotency_in_progress. */
    waitMs: number;
    /** Answers larger than this are not stored (a replay then says so, 409 conflict); the call is charged once either way. */
    maxBodyBytes: number;
  };
  /** gateway: the whole service; inference: only the engine's models over OIP v2 (docs/remote-inference.md). */
  role: 'gateway' | 'inference';
  /** Models the gateway runs on remote inference nodes, and fallback chains. */
  remote: {
    routes: { model: string; endpoints: string[] }[];
    fallbacks: Map<string, string[]>;
    timeoutMs: number;
    retries: number;
    healthIntervalMs: number;
    /** Bearer token between gateway and nodes (the node requires it when set). */
    token: string | null;
  };
  /** GET /metrics: off, or on with a bearer token (null: loopback clients only). */
  metrics: { enabled: boolean; token: string | null };
  /** Fetches this service makes on a user's behalf (src/outbound): refused towards private networks. */
  outbound: OutboundConfig;
  /** POST /v1/series/ingest limits. */
  ingest: {
    maxBytes: number;
    maxRows: number;
    maxColumns: number;
    maxSeries: number;
    /** Points of the answer in all, gaps included. */
    maxPoints: number;
    /** Null steps filled for gaps per point read (plus a floor of 1000): the answer follows from the data sent. */
    gapFillRatio: number;
  };
  schedules: {
    /** The scheduler loop runs in this process (every replica may run it: runs are claimed in the database). */
    scheduler: boolean;
    intervalMs: number;
    leaseMs: number;
    maxActive: number;
    maxAttempts: number;
    retryBaseMs: number;
    pauseAfterFailures: number;
    maxPayloadBytes: number;
    /** AES-256-GCM key for the webhook secrets at rest; null stores them as they are (docs/schedules.md). */
    secretKey: Buffer | null;
  };
};

export interface OutboundConfig {
  allowHttp: boolean;
  /** Tests and single-machine setups only: lets 127.0.0.0/8 and ::1 through (never private ranges). */
  allowLoopback: boolean;
  timeoutMs: number;
  maxBytes: number;
  maxRedirects: number;
}

export class ConfigError extends Error {}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  // Empty strings count as unset, the way shells and .env files usually mean them.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  const e = parsed.data;
  if (e.CAPTCHA_VERIFIER !== 'off' && !e.CAPTCHA_SECRET) {
    throw new ConfigError('Invalid configuration:\n  CAPTCHA_SECRET: required when CAPTCHA_VERIFIER is set');
  }
  const identityProviders: IdentityProviderConfig[] = [];
  const pair = (prefix: string, id: string | undefined, secret: string | undefined): { id: string; secret: string } | null => {
    if (!id && !secret) return null;
    if (!id || !secret) throw new ConfigError(`Invalid configuration:\n  ${prefix}_CLIENT_ID and ${prefix}_CLIENT_SECRET: set both or neither`);
    return { id, secret };
  };
  const gh = pair('OAUTH_GITHUB', e.OAUTH_GITHUB_CLIENT_ID, e.OAUTH_GITHUB_CLIENT_SECRET);
  if (gh) identityProviders.push({ name: 'github', label: 'GitHub', kind: 'github', issuer: null, clientId: gh.id, clientSecret: gh.secret });
  const gg = pair('OAUTH_GOOGLE', e.OAUTH_GOOGLE_CLIENT_ID, e.OAUTH_GOOGLE_CLIENT_SECRET);
  if (gg)
    identityProviders.push({ name: 'google', label: 'Google', kind: 'oidc', issuer: 'https://accounts.google.com', clientId: gg.id, clientSecret: gg.secret });
  const oidc = pair('OAUTH_OIDC', e.OAUTH_OIDC_CLIENT_ID, e.OAUTH_OIDC_CLIENT_SECRET);
  if (oidc || e.OAUTH_OIDC_ISSUER) {
    if (!oidc || !e.OAUTH_OIDC_ISSUER) {
      throw new ConfigError('Invalid configuration:\n  OAUTH_OIDC_ISSUER: set together with OAUTH_OIDC_CLIENT_ID and OAUTH_OIDC_CLIENT_SECRET');
    }
    if (e.OAUTH_OIDC_NAME === 'github' || e.OAUTH_OIDC_NAME === 'google') {
      throw new ConfigError('Invalid configuration:\n  OAUTH_OIDC_NAME: must differ from github and google');
    }
    identityProviders.push({
      name: e.OAUTH_OIDC_NAME,
      label: e.OAUTH_OIDC_LABEL,
      kind: 'oidc',
      issuer: e.OAUTH_OIDC_ISSUER,
      clientId: oidc.id,
      clientSecret: oidc.secret,
    });
  }
  if (e.PAYMENTS_PROVIDER === 'stripe') {
    const missing = (['STRIPE_SECRET_KEY', 'STRIPE_WEBHOOK_SECRET', 'STRIPE_PRICE_ID'] as const).filter((k) => !e[k]);
    if (missing.length > 0) {
      throw new ConfigError(`Invalid configuration:\n  ${missing.map((k) => `${k}: required when PAYMENTS_PROVIDER=stripe`).join('\n  ')}`);
    }
  }
  if (e.MIGRATION_DATABASE_URL && !e.DATABASE_URL) {
    throw new ConfigError('Invalid configuration:\n  MIGRATION_DATABASE_URL: set only together with DATABASE_URL (PostgreSQL)');
  }
  const returnOrigins = e.BILLING_RETURN_ORIGINS.map((o) => {
    try {
      return new URL(o).origin;
    } catch {
      throw new ConfigError(`Invalid configuration:\n  BILLING_RETURN_ORIGINS: '${o}' is not a URL`);
    }
  });
  const publicBaseUrl = (e.PUBLIC_BASE_URL ?? `http://${e.HOST === '0.0.0.0' ? '127.0.0.1' : e.HOST}:${e.PORT}`).replace(/\/+$/, '');
  if (e.PAYMENTS_PROVIDER === 'local' && publicBaseUrl.startsWith('https://') && e.PAYMENTS_LOCAL_ALLOW_HTTPS !== 'true') {
    throw new ConfigError(
      'Invalid configuration:\n  PAYMENTS_PROVIDER: `local` turns billing on for anyone without payment; it is refused when PUBLIC_BASE_URL is https (a public deployment). Use stripe, or set PAYMENTS_LOCAL_ALLOW_HTTPS=true to force it',
    );
  }
  return {
    port: e.PORT,
    host: e.HOST,
    dataDir: e.DATA_DIR,
    database: e.DATABASE_URL
      ? { kind: 'postgres', url: e.DATABASE_URL, migrationUrl: e.MIGRATION_DATABASE_URL ?? null, credentialCacheMs: e.CREDENTIAL_CACHE_SECONDS * 1000 }
      : { kind: 'sqlite', path: `${e.DATA_DIR}/tsfm.sqlite` },
    publicBaseUrl,
    adminEmails: new Set(e.ADMIN_EMAILS.map((s) => s.toLowerCase())),
    mail: { smtpUrl: e.SMTP_URL ?? null, from: e.MAIL_FROM, outboxDir: `${e.DATA_DIR}/outbox` },
    sessionTtlMs: e.SESSION_TTL_DAYS * 24 * 3600 * 1000,
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    mcpBodyLimitBytes: Math.min(e.MCP_BODY_LIMIT_BYTES, e.BODY_LIMIT_BYTES),
    http: {
      requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
      bodyMinBytesPerSecond: e.REQUEST_BODY_MIN_BYTES_PER_SECOND,
      bodyRateWindowMs: e.REQUEST_BODY_RATE_WINDOW_MS,
      sendTimeoutMs: e.RESPONSE_SEND_TIMEOUT_MS,
    },
    regions: e.REGIONS.length > 0 ? e.REGIONS : ['local'],
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    captcha: { kind: e.CAPTCHA_VERIFIER, secret: e.CAPTCHA_SECRET ?? null, siteKey: e.CAPTCHA_SITE_KEY ?? null },
    cookieSecure: e.COOKIE_SECURE === 'auto' ? publicBaseUrl.startsWith('https://') : e.COOKIE_SECURE === 'true',
    trustProxy: parseTrustProxy(e.TRUST_PROXY),
    inference: {
      modelsDir: e.MODELS_DIR ?? `${e.DATA_DIR}/models`,
      workers: e.INFERENCE_WORKERS ?? null,
      threads: e.INFERENCE_THREADS,
      timeoutMs: e.INFERENCE_TIMEOUT_MS,
      maxQueue: e.INFERENCE_QUEUE,
      queueWaitMs: e.INFERENCE_QUEUE_WAIT_MS,
      accountConcurrency: e.INFERENCE_ACCOUNT_CONCURRENCY ?? null,
      accountQueue: e.INFERENCE_ACCOUNT_QUEUE ?? null,
      workerRecycleBytes: e.INFERENCE_WORKER_RECYCLE_MB * 1024 * 1024,
      workerIdleRecycleBytes: e.INFERENCE_WORKER_IDLE_RECYCLE_MB * 1024 * 1024,
      workerNice: e.INFERENCE_WORKER_NICE,
    },
    memory: { idleCompactMs: e.MEMORY_IDLE_COMPACT_MS, idleCompactGrowthBytes: e.MEMORY_IDLE_COMPACT_MB * 1024 * 1024 },
    forecast: {
      maxOutputValues: e.FORECAST_MAX_OUTPUT_VALUES,
      mcpMaxOutputValues: Math.min(e.MCP_MAX_OUTPUT_VALUES, e.FORECAST_MAX_OUTPUT_VALUES),
      maxJobWorkMs: e.INFERENCE_MAX_JOB_WORK_MS ?? Math.floor(e.INFERENCE_TIMEOUT_MS / 2),
    },
    oauth: {
      accessTokenTtlMs: e.OAUTH_ACCESS_TOKEN_TTL_SECONDS * 1000,
      refreshTokenTtlMs: e.OAUTH_REFRESH_TOKEN_TTL_DAYS * 24 * 3600 * 1000,
      codeTtlMs: e.OAUTH_CODE_TTL_SECONDS * 1000,
      extraRedirectSchemes: new Set(e.OAUTH_EXTRA_REDIRECT_SCHEMES.split(',').filter((x) => x !== '' && x !== 'http' && x !== 'https')),
    },
    identityProviders,
    verification: {
      ttlMs: e.EMAIL_VERIFICATION_TTL_HOURS * 3600_000,
      resendsPerHour: e.EMAIL_VERIFICATION_RESENDS_PER_HOUR,
      resetMailsPerHour: e.PASSWORD_RESET_MAILS_PER_HOUR,
    },
    invitesPerDay: e.INVITES_PER_DAY,
    billing: {
      freeCredits: e.FREE_CREDITS,
      freeCreditsOn: e.FREE_CREDITS_ON,
      creditPriceNanoUsd: e.CREDIT_PRICE_NANO_USD,
      holdGraceMs: e.BILLING_HOLD_GRACE_MS,
      billingOnlyModels: e.MODELS_BILLING_ONLY,
      provider: e.PAYMENTS_PROVIDER,
      returnOrigins: [new URL(publicBaseUrl).origin, ...returnOrigins],
      stripe:
        e.PAYMENTS_PROVIDER === 'stripe'
          ? {
              secretKey: e.STRIPE_SECRET_KEY ?? '',
              webhookSecret: e.STRIPE_WEBHOOK_SECRET ?? '',
              priceId: e.STRIPE_PRICE_ID ?? '',
              meterEventName: e.STRIPE_METER_EVENT_NAME,
              apiBase: e.STRIPE_API_BASE ?? null,
            }
          : null,
    },
    rateLimit: {
      freePerMinute: e.RATE_LIMIT_FREE_PER_MINUTE,
      billingPerMinute: e.RATE_LIMIT_BILLING_PER_MINUTE,
      authPerMinute: e.AUTH_RATE_LIMIT_PER_MINUTE,
      redisUrl: e.REDIS_URL ?? null,
    },
    idempotency: { ttlMs: e.IDEMPOTENCY_TTL_HOURS * 3600_000, waitMs: e.IDEMPOTENCY_WAIT_MS, maxBodyBytes: e.IDEMPOTENCY_MAX_BODY_BYTES },
    metrics: { enabled: e.METRICS === 'on', token: e.METRICS_TOKEN ?? null },
    role: e.ROLE,
    remote: {
      routes: parseRemoteModels(e.REMOTE_MODELS ?? ''),
      fallbacks: parseFallbacks(e.MODEL_FALLBACKS ?? ''),
      timeoutMs: e.REMOTE_TIMEOUT_MS ?? e.INFERENCE_TIMEOUT_MS,
      retries: e.REMOTE_RETRIES,
      healthIntervalMs: e.REMOTE_HEALTH_INTERVAL_MS,
      token: e.INFERENCE_TOKEN ?? null,
    },
    outbound: {
      allowHttp: e.OUTBOUND_ALLOW_HTTP === 'true',
      allowLoopback: e.OUTBOUND_ALLOW_LOOPBACK === 'true',
      timeoutMs: e.OUTBOUND_TIMEOUT_MS,
      maxBytes: e.OUTBOUND_MAX_BYTES,
      maxRedirects: e.OUTBOUND_MAX_REDIRECTS,
    },
    ingest: {
      maxBytes: e.INGEST_MAX_BYTES,
      maxRows: e.INGEST_MAX_ROWS,
      maxColumns: e.INGEST_MAX_COLUMNS,
      maxSeries: e.INGEST_MAX_SERIES,
      maxPoints: e.INGEST_MAX_POINTS,
      gapFillRatio: e.INGEST_GAP_FILL_RATIO,
    },
    schedules: {
      scheduler: e.SCHEDULER === 'on',
      intervalMs: e.SCHEDULER_INTERVAL_MS,
      leaseMs: e.SCHEDULE_LEASE_MS,
      maxActive: e.SCHEDULES_MAX_ACTIVE,
      maxAttempts: e.SCHEDULE_MAX_ATTEMPTS,
      retryBaseMs: e.SCHEDULE_RETRY_BASE_MS,
      pauseAfterFailures: e.SCHEDULE_PAUSE_AFTER_FAILURES,
      maxPayloadBytes: e.SCHEDULE_MAX_PAYLOAD_BYTES,
      secretKey: e.SCHEDULE_SECRET_KEY ? keyBytes(e.SCHEDULE_SECRET_KEY) : null,
    },
  };
}

const IPV4 = /^(\d{1,3})(\.\d{1,3}){3}$/;
const IPV6 = /^[0-9a-f:.]+$/i;

/**
 * TRUST_PROXY: `false` (default), a hop count (`1` = one reverse proxy in front), or a
 * comma-separated list of proxy addresses/CIDRs (Fastify's trustProxy accepts all three).
 * `true` means one hop: trusting every hop would let a client pick its own address by sending
 * X-Forwarded-For, which defeats the per-address limits.
 */
export function parseTrustProxy(raw: string): false | number | string[] {
  const v = raw.trim().toLowerCase();
  if (v === 'false' || v === '0') return false;
  if (v === 'true') return 1;
  if (/^\d+$/.test(v)) {
    const n = Number(v);
    if (n > 32) throw new ConfigError('Invalid configuration:\n  TRUST_PROXY: a hop count is at most 32');
    return n;
  }
  const list = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  for (const item of list) {
    const [addr, bits, extra] = item.split('/');
    const okAddr = addr !== undefined && ((IPV4.test(addr) && addr.split('.').every((o) => Number(o) <= 255)) || (addr.includes(':') && IPV6.test(addr)));
    const okBits = bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (addr?.includes(':') ? 128 : 32));
    if (!okAddr || !okBits || extra !== undefined) {
      throw new ConfigError(
        `Invalid configuration:\n  TRUST_PROXY: '${item}' is not an IP address or CIDR (use false, a hop count, or a comma-separated list of proxy addresses)`,
      );
    }
  }
  if (list.length === 0) return false;
  return list;
}

/** `model=http://node-a:8001|http://node-b:8001,other/model=http://node-c:8001` */
function parseRemoteModels(v: string): { model: string; endpoints: string[] }[] {
  const seen = new Set<string>();
  return v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
    .map((entry) => {
      const eq = entry.indexOf('=');
      const model = eq > 0 ? entry.slice(0, eq).trim() : '';
      const endpoints =
        eq > 0
          ? entry
              .slice(eq + 1)
              .split('|')
              .map((u) => u.trim())
              .filter((u) => u.length > 0)
          : [];
      if (!model || endpoints.length === 0) throw new ConfigError(`Invalid configuration:\n  REMOTE_MODELS: '${entry}' is not model=url[|url…]`);
      if (seen.has(model)) throw new ConfigError(`Invalid configuration:\n  REMOTE_MODELS: '${model}' is listed twice`);
      seen.add(model);
      for (const u of endpoints) {
        let url: URL;
        try {
          url = new URL(u);
        } catch {
          throw new ConfigError(`Invalid configuration:\n  REMOTE_MODELS: '${u}' is not a URL`);
        }
        if (url.protocol !== 'http:' && url.protocol !== 'https:')
          throw new ConfigError(`Invalid configuration:\n  REMOTE_MODELS: '${u}' must be http:// or https://`);
      }
      return { model, endpoints };
    });
}

/** `chronos2>ttm>auto-ets,other>naive`: when the first model cannot serve, the next ones are tried. */
function parseFallbacks(v: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const chain of v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0)) {
    const ids = chain.split('>').map((s) => s.trim());
    if (ids.length < 2 || ids.some((id) => id.length === 0))
      throw new ConfigError(`Invalid configuration:\n  MODEL_FALLBACKS: '${chain}' is not model>fallback[>fallback…]`);
    if (new Set(ids).size !== ids.length) throw new ConfigError(`Invalid configuration:\n  MODEL_FALLBACKS: '${chain}' names a model twice`);
    const [first, ...rest] = ids as [string, ...string[]];
    if (out.has(first)) throw new ConfigError(`Invalid configuration:\n  MODEL_FALLBACKS: '${first}' has two chains`);
    out.set(first, rest);
  }
  return out;
}
