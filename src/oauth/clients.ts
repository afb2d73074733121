import type { Kysely } from 'kysely';
import { CustomOAuthError, InvalidClientError, InvalidClientMetadataError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { DB, OAuthClientsTable } from '../db/schema.ts';
import { newId } from '../shared/ids.ts';
import { hashSecret, newSecret, secretMatches } from '../shared/secrets.ts';
import { grantedScope, isLoopbackHost, redirectUriProblem, type RegisterClientInput } from './schemas.ts';

export type ClientRow = OAuthClientsTable;

const CLIENT_SECRET_PREFIX = 'tsfcs_';

/**
 * RFC 7591 dynamic registration. Public clients (`none`, what MCP clients use) get no secret;
 * confidential ones get a secret shown once and stored hashed.
 */
export async function registerClient(db: Kysely<DB>, input: RegisterClientInput, now: number, extraSchemes: ReadonlySet<string>) {
  input.redirect_uris.forEach((uri, i) => {
    const problem = redirectUriProblem(uri, extraSchemes);
    if (problem) throw invalidRedirectUri(`redirect_uris.${i}: ${problem}`);
  });
  const method = input.token_endpoint_auth_method ?? 'none';
  const grantTypes = input.grant_types ?? ['authorization_code', 'refresh_token'];
  const unsupported = grantTypes.filter((g) => g !== 'authorization_code' && g !== 'refresh_token');
  if (unsupported.length > 0) throw new InvalidClientMetadataError(`Unsupported grant_types: ${unsupported.join(', ')}`);
  const responseTypes = input.response_types ?? ['code'];
  if (responseTypes.some((r) => r !== 'code')) throw new InvalidClientMetadataError('Only the response type "code" is supported');
  const scope = grantedScope(input.scope);
  if (scope instanceof Error) throw new InvalidClientMetadataError(scope.message);
  const secret = method === 'none' ? null : newSecret(CLIENT_SECRET_PREFIX);
  const id = newId('mcpc');
  const issuedAt = Math.floor(now / 1000);
  const answer = {
    client_id: id,
    client_id_issued_at: issuedAt,
    ...(input.client_name ? { client_name: input.client_name } : {}),
    redirect_uris: input.redirect_uris,
    token_endpoint_auth_method: method,
    grant_types: grantTypes,
    response_types: responseTypes,
    scope,
  };
  await db
    .insertInto('oauth_clients')
    .values({
      id,
      client_name: input.client_name ?? '',
      redirect_uris: JSON.stringify(input.redirect_uris),
      token_endpoint_auth_method: method,
      client_secret_hash: secret ? hashSecret(secret) : null,
      metadata: JSON.stringify(answer),
      created_at: now,
    })
    .execute();
  return secret ? { ...answer, client_secret: secret, client_secret_expires_at: 0 } : answer;
}

export const invalidRedirectUri = (msg: string) => new CustomOAuthError('invalid_redirect_uri', msg);

export async function findClient(db: Kysely<DB>, clientId: string): Promise<ClientRow | undefined> {
  // A NUL (possible in a Basic header) names no client, and PostgreSQL could not compare it.
  if (clientId.includes('\u0000')) return undefined;
  return db.selectFrom('oauth_clients').selectAll().where('id', '=', clientId).executeTakeFirst();
}

export const redirectUrisOf = (c: ClientRow): string[] => JSON.parse(c.redirect_uris) as string[];

/**
 * Exact string match against a registered URI (OAuth 2.1 §2.3.1), except that an http loopback
 * URI matches on any port (RFC 8252 §7.3: native apps bind whatever port is free at the time).
 */
export function isRegisteredRedirect(c: ClientRow, uri: string): boolean {
  const registered = redirectUrisOf(c);
  if (registered.includes(uri)) return true;
  const asked = URL.parse(uri);
  if (asked?.protocol !== 'http:' || !isLoopbackHost(asked.hostname)) return false;
  // The strings must agree exactly apart from the port (no normalisation leeway).
  return registered.some((r) => URL.parse(r)?.protocol === 'http:' && stripPort(r) === stripPort(uri));
}

/** The URI string without its `:port` (only used on http loopback URIs). */
const stripPort = (uri: string): string => uri.replace(/^(http:\/\/(?:\[[^\]]*\]|[^/:?#]*))(?::\d*)?/i, '$1');

/** RFC 6749 §2.3.1: `Basic base64(urlencode(id):urlencode(secret))`; any malformation is invalid_client. */
function parseBasic(authorization: string): { id: string; secret: string } {
  const decoded = Buffer.from(authorization.replace(/^Basic\s+/i, '').trim(), 'base64').toString('utf8');
  const i = decoded.indexOf(':');
  if (i < 0) throw new InvalidClientError('Malformed Basic credentials: expected base64 of "client_id:client_secret"');
  try {
    return { id: decodeURIComponent(decoded.slice(0, i)), secret: decodeURIComponent(decoded.slice(i + 1)) };
  } catch {
    throw new InvalidClientError('Malformed Basic credentials: the client_id or secret is not valid percent-encoding');
  }
}

/**
 * Client authentication at the token and revocation endpoints: HTTP Basic, client_secret in the
 * body, or just client_id for public clients, as the client registered.
 */
export async function authenticateClient(
  db: Kysely<DB>,
  body: { client_id?: string | undefined; client_secret?: string | undefined },
  authorization: string | undefined,
): Promise<ClientRow> {
  let clientId = body.client_id;
  let secret = body.client_secret;
  let via: 'basic' | 'post' | 'none' = secret ? 'post' : 'none';
  if (authorization && /^Basic\s/i.test(authorization)) {
    const basic = parseBasic(authorization);
    if (clientId !== undefined && clientId !== basic.id) throw new InvalidClientError('client_id does not match the Basic credentials');
    clientId = basic.id;
    secret = basic.secret;
    via = 'basic';
  }
  if (!clientId) throw new InvalidClientError('client_id is required');
  const client = await findClient(db, clientId);
  if (!client) throw new InvalidClientError('Unknown client');
  if (client.token_endpoint_auth_method === 'none') {
    if (via !== 'none') throw new InvalidClientError('This client is public: it authenticates with client_id only');
    return client;
  }
  if (!secret || !client.client_secret_hash || !secretMatches(secret, client.client_secret_hash)) {
    throw new InvalidClientError('Client authentication failed');
  }
  return client;
}
