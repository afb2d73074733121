import type { Principal } from '../accounts/credentials.ts';
import { AppError } from '../shared/errors.ts';

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
