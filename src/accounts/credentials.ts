import type { Kysely } from 'kysely';
import type { DB } from '../db/schema.ts';
import type { Database } from '../db/index.ts';
import { AppError } from '../shared/errors.ts';
import { iso } from '../shared/clock.ts';
import { parseScopes, type Scope } from '../shared/scopes.ts';
import { hashSecret, SECRET_PREFIX, secretMatches } from '../shared/secrets.ts';
import type { UserRow } from './users.ts';

export type CredentialKind = 'session' | 'api_key' | 'oauth';

/** An API key's scopes and limits, read with the key (docs/keys.md, ADR 0016). */
export interface KeyPolicy {
  scopes: Scope[];
  /** Model ids or `*` patterns; null = every model the account may use. */
  allowedModels: string[] | null;
  /** Credits this key may spend per calendar month (UTC); null = no limit of its own. */
  monthlyCreditLimit: number | null;
  /** Requests per minute for this key, on top of the account's limit; null = the account's only. */
  rateLimitPerMinute: number | null;
  /** When the key stops working (epoch ms); null = never. */
  expiresAt: number | null;
}

/** The stored allowed_models column (JSON array) as a list; null when unrestricted or unreadable. */
export function parseAllowedModels(stored: string | null): string[] | null {
  if (stored === null) return null;
  try {
    const v: unknown = JSON.parse(stored);
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : null;
  } catch {
    // An unreadable restriction must not become "every model": allow none.
    return [];
  }
}

/** Who is calling, and with what. Every protected route and MCP tool receives one. */
export interface Principal {
  user: UserRow;
  kind: CredentialKind;
  /** Session id, API key id or OAuth token id. */
  credentialId: string;
  keyPrefix?: string;
  /** OAuth tokens: the resource the token is bound to, and the client it was issued to. */
  audience?: string;
  oauthClientId?: string;
  /** API keys: the key's scopes and limits. */
  key?: KeyPolicy;
  /**
   * Whether the account's metered billing is active, read in the credential's own query (API keys
   * and sessions): the rate limit follows from it without another lookup per request.
   */
  billingActive?: boolean;
}

/** Resolves a further credential kind (OAuth access tokens join here); null when not its kind. */
export type CredentialResolver = (db: Kysely<DB>, token: string, now: number) => Promise<Principal | null>;

type KeyPolicyColumns = Pick<DB['api_keys'], 'scopes' | 'allowed_models' | 'monthly_credit_limit' | 'rate_limit_per_minute' | 'expires_at'>;

function keyPolicy(row: KeyPolicyColumns): KeyPolicy {
  return {
    scopes: parseScopes(row.scopes),
    allowedModels: parseAllowedModels(row.allowed_models),
    monthlyCreditLimit: row.monthly_credit_limit === null ? null : Number(row.monthly_credit_limit),
    rateLimitPerMinute: row.rate_limit_per_minute === null ? null : Number(row.rate_limit_per_minute),
    expiresAt: row.expires_at === null ? null : Number(row.expires_at),
  };
}

/**
 * The policy of a key for work done later in its name (scheduled runs): its limits as they are
 * now. A key revoked or expired since allows no model at all, so nothing runs on its behalf.
 */
export async function keyPolicyOf(db: Kysely<DB>, keyId: string, now: number): Promise<KeyPolicy> {
  const row = await db
    .selectFrom('api_keys')
    .select(['scopes', 'allowed_models', 'monthly_credit_limit', 'rate_limit_per_minute', 'revoked_at', 'expires_at'])
    .where('id', '=', keyId)
    .executeTakeFirst();
  if (!row) return { scopes: [], allowedModels: [], monthlyCreditLimit: null, rateLimitPerMinute: null, expiresAt: null };
  const policy = keyPolicy(row);
  const dead = row.revoked_at !== null || (row.expires_at !== null && Number(row.expires_at) <= now);
  return dead ? { ...policy, scopes: [], allowedModels: [] } : policy;
}

/** The API-key lookup: the key by its digest, with its account and the account's billing flag. */
function apiKeyLookup(db: Kysely<DB>, hash: string) {
  return db
    .selectFrom('api_keys')
    .innerJoin('users', 'users.id', 'api_keys.user_id')
    .leftJoin('billing_accounts', 'billing_accounts.user_id', 'api_keys.user_id')
    .selectAll('users')
    .select([
      'billing_accounts.billing_active',
      'api_keys.id as key_id',
      'api_keys.key_hash',
      'api_keys.prefix',
      'api_keys.revoked_at',
      'api_keys.last_used_at',
      'api_keys.scopes',
      'api_keys.expires_at',
      'api_keys.allowed_models',
      'api_keys.monthly_credit_limit',
      'api_keys.rate_limit_per_minute',
    ])
    .where('api_keys.key_hash', '=', hash);
}
type ApiKeyRow = NonNullable<Awaited<ReturnType<ReturnType<typeof apiKeyLookup>['executeTakeFirst']>>>;

const API_KEY_STATEMENT = 'tsfm_api_key_v1';
/** The lookup's SQL text (one parameter, the digest), compiled once per Kysely instance. */
const lookupText = new WeakMap<Kysely<DB>, string>();
function apiKeyLookupText(db: Kysely<DB>): string {
  let text = lookupText.get(db);
  if (text === undefined) {
    text = apiKeyLookup(db, '').compile().sql;
    lookupText.set(db, text);
  }
  return text;
}

const invalid = () => new AppError('invalid_credential', 'The credential is unknown, expired or revoked');

/**
 * The key's row by its digest. PostgreSQL: from the lookup cache while it is live (ADR 0025), else
 * a named statement, parsed and planned once per connection (parse + plan were about 0.3 ms of every
 * API-key request's lookup in the statement log); SQLite: the query builder (its statement cache).
 * Only rows found are cached: an unknown digest is looked up every time.
 */
async function apiKeyRow(db: Kysely<DB>, hash: string, lookup: Pick<Database, 'prepared' | 'credentialCache'>): Promise<ApiKeyRow | undefined> {
  const cache = lookup.credentialCache;
  const cached = cache?.get(hash) as ApiKeyRow | undefined;
  if (cached !== undefined) return cached;
  const generation = cache?.snapshot() ?? 0;
  const row = lookup.prepared
    ? ((await lookup.prepared(API_KEY_STATEMENT, apiKeyLookupText(db), [hash]))[0] as ApiKeyRow | undefined)
    : await apiKeyLookup(db, hash).executeTakeFirst();
  if (row && cache) cache.set(hash, row.id, row, generation);
  return row;
}

/**
 * The one credential resolver. Looks the secret up by its SHA-256 digest (indexed, unique),
 * then re-checks the digest in constant time before trusting the row.
 */
export async function resolveCredential(
  db: Kysely<DB>,
  token: string,
  now: number,
  extraResolvers: readonly CredentialResolver[] = [],
  lookup: Pick<Database, 'prepared' | 'credentialCache'> = {},
): Promise<Principal> {
  const hash = hashSecret(token);
  if (token.startsWith(SECRET_PREFIX.apiKey)) {
    const row = await apiKeyRow(db, hash, lookup);
    if (!row || row.revoked_at !== null || !secretMatches(token, row.key_hash)) throw invalid();
    if (row.expires_at !== null && Number(row.expires_at) <= now) {
      throw new AppError('invalid_credential', `This API key expired at ${iso(Number(row.expires_at))}; create a new one`);
    }
    // last_used_at is informational; write it at most once a minute per key (a cached row keeps the
    // time written, so the cache does not turn this into a write per request).
    if (row.last_used_at === null || now - row.last_used_at > 60_000) {
      await db.updateTable('api_keys').set({ last_used_at: now }).where('id', '=', row.key_id).execute();
      row.last_used_at = now;
    }
    const {
      key_id,
      key_hash: _h,
      prefix,
      revoked_at: _r,
      last_used_at: _l,
      scopes,
      expires_at,
      allowed_models,
      monthly_credit_limit,
      rate_limit_per_minute,
      billing_active,
      ...user
    } = row;
    const key = keyPolicy({ scopes, allowed_models, monthly_credit_limit, rate_limit_per_minute, expires_at });
    return { user, kind: 'api_key', credentialId: key_id, keyPrefix: prefix, key, billingActive: billing_active === 1 };
  }
  if (token.startsWith(SECRET_PREFIX.session)) {
    const row = await db
      .selectFrom('sessions')
      .innerJoin('users', 'users.id', 'sessions.user_id')
      .leftJoin('billing_accounts', 'billing_accounts.user_id', 'sessions.user_id')
      .selectAll('users')
      .select(['sessions.id as session_id', 'sessions.token_hash', 'sessions.expires_at', 'sessions.revoked_at', 'billing_accounts.billing_active'])
      .where('sessions.token_hash', '=', hash)
      .executeTakeFirst();
    if (!row || row.revoked_at !== null || row.expires_at <= now || !secretMatches(token, row.token_hash)) throw invalid();
    const { session_id, token_hash: _h, expires_at: _e, revoked_at: _r, billing_active, ...user } = row;
    return { user, kind: 'session', credentialId: session_id, billingActive: billing_active === 1 };
  }
  for (const r of extraResolvers) {
    const p = await r(db, token, now);
    if (p) return p;
  }
  throw invalid();
}
