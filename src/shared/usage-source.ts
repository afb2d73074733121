import type { IncomingHttpHeaders } from 'node:http';
import type { Principal } from '../accounts/credentials.ts';
import type { UsageSource } from '../forecasting/metering.ts';

/** The header the web playground sends so its calls are recorded with source `playground`. */
export const CLIENT_HEADER = 'x-tsfm-client';

/** Said in the OpenAPI description of every operation that honours the header. */
export const CLIENT_HEADER_DOC =
  'Usage source: send `x-tsfm-client: playground` with a session credential (the web playground does) to record the call with source `playground`; the header is ignored for API keys and OAuth tokens.';

/**
 * The usage source of a call: `playground` when the web app says so with a session credential
 * (the browser's cookie, or a session token), otherwise the operation's own source. API keys and
 * OAuth tokens cannot relabel their calls: the header is ignored for them.
 */
export function usageSourceOf(headers: IncomingHttpHeaders, principal: Principal, routeSource: UsageSource): UsageSource {
  return principal.kind === 'session' && headers[CLIENT_HEADER] === 'playground' ? 'playground' : routeSource;
}
