import type { CredentialResolver } from '../accounts/credentials.ts';
import { hashSecret, SECRET_PREFIX, secretMatches } from '../shared/secrets.ts';

/**
 * OAuth access tokens as a credential kind of the one resolver. A token is accepted only while it
 * is live and only for the resource it was issued for (`audience`); routes other than the MCP
 * endpoint refuse `oauth` principals (see http/auth.ts and docs/oauth-mcp.md).
 */
export function oauthAccessTokenResolver(audience: string): CredentialResolver {
  return async (db, token, now) => {
    if (!token.startsWith(SECRET_PREFIX.oauthAccess)) return null;
    const hash = hashSecret(token);
    const row = await db
      .selectFrom('oauth_tokens')
      .innerJoin('users', 'users.id', 'oauth_tokens.user_id')
      .selectAll('users')
      .select([
        'oauth_tokens.id as token_id',
        'oauth_tokens.kind as token_kind',
        'oauth_tokens.token_hash',
        'oauth_tokens.resource',
        'oauth_tokens.expires_at',
        'oauth_tokens.revoked_at',
        'oauth_tokens.client_id',
      ])
      .where('oauth_tokens.token_hash', '=', hash)
      .executeTakeFirst();
    if (row?.token_kind !== 'access' || row.revoked_at !== null || row.expires_at <= now) return null;
    if (row.resource !== audience || !secretMatches(token, row.token_hash)) return null;
    const { token_id, token_kind: _k, token_hash: _h, resource, expires_at: _e, revoked_at: _r, client_id, ...user } = row;
    return { user, kind: 'oauth', credentialId: token_id, audience: resource, oauthClientId: client_id };
  };
}
