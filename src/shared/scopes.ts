import { AppError } from './errors.ts';

/**
 * What an API key may do (least privilege, ADR 0016), in the manner of Stripe's restricted keys.
 * Sessions (a person signed in) may do everything their account may; OAuth tokens (bound to
 * /mcp) get the default scopes. A key gets the default scopes unless it is created with others.
 */
export const SCOPES = {
  forecast: 'run forecasts, batches, ensembles, cross-validation, anomaly detection and imputation (uses credits); schedules and series ingest',
  'usage:read': 'read usage and cost reports',
  'billing:read': 'read the billing summary and payments profile',
  'keys:write': 'create, change and revoke API keys',
  'account:write': 'change privacy and alert settings, sign out everywhere, delete the account',
  'billing:write': 'start a checkout or open the payments portal',
  admin: "administrator operations (and the account's administrator role)",
} as const;

export type Scope = keyof typeof SCOPES;
export const SCOPE_NAMES = Object.keys(SCOPES) as [Scope, ...Scope[]];
export const DEFAULT_KEY_SCOPES: readonly Scope[] = ['forecast', 'usage:read', 'billing:read'];

/** The stored form (space-separated, like OAuth's `scope`), read leniently: unknown words are dropped. */
export function parseScopes(stored: string): Scope[] {
  return stored.split(/\s+/).filter((s): s is Scope => Object.hasOwn(SCOPES, s));
}

export function formatScopes(scopes: readonly Scope[]): string {
  return SCOPE_NAMES.filter((s) => scopes.includes(s)).join(' ');
}

/** The part of a principal a scope check needs (structural, so this layer imports no feature). */
export interface ScopedCaller {
  kind: 'session' | 'api_key' | 'oauth';
  /** API keys only: the key's scopes. */
  key?: { scopes: readonly Scope[] };
}

/** Does the caller hold `scope`? Sessions hold every scope; OAuth tokens and keys without a policy the defaults. */
export function hasScope(caller: ScopedCaller, scope: Scope): boolean {
  if (caller.kind === 'session') return true;
  const held = caller.kind === 'api_key' && caller.key ? caller.key.scopes : DEFAULT_KEY_SCOPES;
  return held.includes(scope);
}

/** Throws the 403 that names the credential needed. */
export function requireScope(caller: ScopedCaller, scope: Scope): void {
  if (hasScope(caller, scope)) return;
  const what = caller.kind === 'oauth' ? 'An OAuth access token' : 'This API key';
  throw new AppError('forbidden', `${what} lacks scope ${scope}: this operation needs a signed-in session or an API key with scope ${scope}`);
}
