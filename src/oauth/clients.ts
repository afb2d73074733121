import type { Kysely } from 'kysely';
import { CustomOAuthError, InvalidClientError, InvalidClientMetadataError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { DB, OAuthClientsTable } from '../db/schema.ts';
import { newId } from '../shared/ids.ts';
import { hashSecret, newSecret, secretMatches } from '../shared/secrets.ts';
import { MCP_SCOPE, type RegisterClientInput } from './schemas.ts';

export type ClientRow = OAuthClientsTable;

const CLIENT_SECRET_PREFIX = 'tsfcs_';

/**
 * RFC 7591 dynamic registration. Public clients (`none`, what MCP clients use) get no secret;
 * confidential ones get a secret shown once and stored hashed.
 */
export async function registerClient(db: Kysely<DB>, input: RegisterClientInput, now: number) {
  const method = input.token_endpoint_auth_method ?? 'none';
  const grantTypes = input.grant_types ?? ['authorization_code', 'refresh_token'];
  const unsupported = grantTypes.filter((g) => g !== 'authorization_code' && g !== 'refresh_token');
  if (unsupported.length > 0) throw new InvalidClientMetadataError(`Unsupported grant_types: ${unsupported.join(', ')}`);
  const responseTypes = input.response_types ?? ['code'];
  if (responseTypes.some((r) => r !== 'code')) throw new InvalidClientMetadataError('Only the response type "code" is supported');
  if (input.scope?.split(' ').some((s) => s !== '' && s !== MCP_SCOPE)) {
    throw new InvalidClientMetadataError(`Only the scope "${MCP_SCOPE}" is supported`);
  }
  const secret = method === 'none' ? null : newSecret(CLIENT_SECRET_PREFIX);
  const id = newId('mcpc');
  const issuedAt = Math.floor(now / 1000);
  const answer = {
    client_id: id,
    client_id_issued_at: issuedAt,
    client_name: input.client_name,
    redirect_uris: input.redirect_uris,
    token_endpoint_auth_method: method,
    grant_types: grantTypes,
    response_types: responseTypes,
    scope: MCP_SCOPE,
  };
  await db
    .insertInto('oauth_clients')
    .values({
      id,
      client_name: input.client_name,
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

export function findClient(db: Kysely<DB>, clientId: string): Promise<ClientRow | undefined> {
  return db.selectFrom('oauth_clients').selectAll().where('id', '=', clientId).executeTakeFirst();
}

export const redirectUrisOf = (c: ClientRow): string[] => JSON.parse(c.redirect_uris) as string[];

/** Exact string match against a registered URI (OAuth 2.1 §2.3.1; no loopback port leeway). */
export const isRegisteredRedirect = (c: ClientRow, uri: string): boolean => redirectUrisOf(c).includes(uri);

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
    const decoded = Buffer.from(authorization.replace(/^Basic\s+/i, ''), 'base64').toString('utf8');
    const i = decoded.indexOf(':');
    if (i < 0) throw new InvalidClientError('Malformed Basic credentials');
    const basicId = decodeURIComponent(decoded.slice(0, i));
    if (clientId !== undefined && clientId !== basicId) throw new InvalidClientError('client_id does not match the Basic credentials');
    clientId = basicId;
    secret = decodeURIComponent(decoded.slice(i + 1));
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
