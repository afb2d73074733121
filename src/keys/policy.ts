import type { KeyPolicy, Principal } from '../accounts/credentials.ts';
import { iso } from '../shared/clock.ts';
import { AppError } from '../shared/errors.ts';
import { DEFAULT_KEY_SCOPES } from '../shared/scopes.ts';

/**
 * Checks an API key's own limits that do not need the database: allowed models. The meter calls
 * it at its model-access check, the point every forecast, batch item, ensemble member and MCP
 * call goes through (src/billing/meter.ts), so no surface can skip it.
 */

/**
 * A tiny anchored glob: `*` matches any run of characters, everything else matches itself.
 * Model ids are short ASCII names (the schema allows [A-Za-z0-9._:/*-]), so no library's brace or
 * class syntax is wanted; every other character is escaped before the regular expression is built.
 */
export function globToRegExp(pattern: string): RegExp {
  const body = pattern
    .split('*')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${body}$`);
}

export function modelMatches(patterns: readonly string[], model: string): boolean {
  return patterns.some((p) => (p.includes('*') ? globToRegExp(p).test(model) : p === model));
}

/** Throws 403 key_model_not_allowed when the caller's API key may not run `model`. */
export function assertKeyAllowsModel(principal: Principal, model: string): void {
  const allowed = principal.kind === 'api_key' ? principal.key?.allowedModels : null;
  if (!allowed || modelMatches(allowed, model)) return;
  throw new AppError(
    'key_model_not_allowed',
    `This API key may not run model '${model}': its allowed_models are ${allowed.join(', ') || '(none)'} (PATCH /api/account/keys/{key_id} to change them)`,
  );
}

/** Midnight UTC on the first day of the month of `now`: the start of a key's monthly budget. */
export function monthStartUtc(now: number): number {
  const d = new Date(now);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}

/**
 * What a caller may hand on to the keys it creates or changes (ADR 0037): a session may give
 * anything (null); an API key at most its own scopes and limits; an OAuth token (not accepted by
 * the key routes today) at most the default scopes, like its scope check.
 */
export function keyGrantOf(principal: Principal): KeyPolicy | null {
  if (principal.kind === 'session') return null;
  if (principal.kind === 'api_key' && principal.key) return principal.key;
  return { scopes: [...DEFAULT_KEY_SCOPES], allowedModels: null, monthlyCreditLimit: null, rateLimitPerMinute: null, expiresAt: null };
}

/** A key's scopes and limits as asked for: create gives every field (null = none); PATCH only those it changes. */
export type KeyTerms = { [K in keyof KeyPolicy]?: KeyPolicy[K] };

/**
 * Refuses (403 forbidden) terms looser than the caller's own when the caller is not a session: a
 * scope it does not hold, no limit or a higher one where it has one, a model pattern its own
 * allowed_models do not cover, a later expiry or none. A leaked keys:write key can then mint and
 * change keys, but none that does more than itself.
 */
export function assertWithinGrant(principal: Principal, terms: KeyTerms): void {
  const grant = keyGrantOf(principal);
  if (!grant) return;
  const faults: string[] = [];
  if (terms.scopes !== undefined) {
    const extra = terms.scopes.filter((s) => !grant.scopes.includes(s));
    if (extra.length > 0) faults.push(`scopes ${extra.join(', ')} (it holds ${grant.scopes.join(', ') || 'none'})`);
  }
  const atMost = (field: string, asked: number | null | undefined, own: number | null, show: (n: number) => string = String) => {
    if (asked === undefined || own === null) return;
    if (asked === null) faults.push(`${field} unset (its own is ${show(own)}; give one at most that)`);
    else if (asked > own) faults.push(`${field} ${show(asked)} (its own is ${show(own)})`);
  };
  atMost('monthly_credit_limit', terms.monthlyCreditLimit, grant.monthlyCreditLimit);
  atMost('rate_limit_per_minute', terms.rateLimitPerMinute, grant.rateLimitPerMinute);
  atMost('expires_at', terms.expiresAt, grant.expiresAt, iso);
  if (terms.allowedModels !== undefined && grant.allowedModels !== null) {
    const own = grant.allowedModels.join(', ') || '(none)';
    if (terms.allowedModels === null) faults.push(`allowed_models unset (its own are ${own}; list some of those)`);
    else {
      // A pattern is covered when one of the caller's patterns matches it with its `*` read as a
      // literal character, which only a `*` of the caller's can match: every id it matches is then
      // matched by the caller's pattern too (sound; a cover split across patterns is refused).
      const outside = terms.allowedModels.filter((p) => !modelMatches(grant.allowedModels ?? [], p));
      if (outside.length > 0) faults.push(`allowed_models ${outside.join(', ')} (its own are ${own})`);
    }
  }
  if (faults.length === 0) return;
  throw new AppError(
    'forbidden',
    `An API key may create or change keys only within its own scopes and limits; this one may not give ${faults.join('; ')}. Use a signed-in session to go beyond them.`,
  );
}
