import { z } from 'zod';

/** The one scope this authorization server knows: use of the MCP endpoint. */
export const MCP_SCOPE = 'mcp';

const FORBIDDEN_SCHEMES = new Set(['javascript:', 'data:', 'vbscript:', 'file:', 'blob:', 'about:']);
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * A redirect URI a client may register: https anywhere, http only on loopback (RFC 8252 native
 * apps), or a private-use scheme (`cursor://…`). Never a fragment, never a script-capable scheme.
 */
export const RedirectUri = z
  .string()
  .max(2000)
  .refine((v) => URL.canParse(v), 'must be an absolute URL')
  .refine((v) => {
    const u = new URL(v);
    if (u.hash !== '' || v.includes('#')) return false;
    if (FORBIDDEN_SCHEMES.has(u.protocol)) return false;
    if (u.protocol === 'http:') return LOOPBACK.has(u.hostname);
    return true;
  }, 'must be https, http on a loopback host, or a private-use scheme, without a fragment');

export const RegisterClientRequest = z
  .object({
    client_name: z.string().trim().min(1).max(200),
    redirect_uris: z.array(RedirectUri).min(1).max(10),
    token_endpoint_auth_method: z.enum(['none', 'client_secret_post', 'client_secret_basic']).optional(),
    grant_types: z.array(z.string().max(100)).max(10).optional(),
    response_types: z.array(z.string().max(100)).max(10).optional(),
    scope: z.string().max(200).optional(),
    client_uri: z.string().max(2000).optional(),
    logo_uri: z.string().max(2000).optional(),
    software_id: z.string().max(200).optional(),
    software_version: z.string().max(200).optional(),
  })
  .meta({ id: 'RegisterClientRequest' });
export type RegisterClientInput = z.infer<typeof RegisterClientRequest>;

export const RegisterClientResponse = z
  .object({
    client_id: z.string(),
    client_id_issued_at: z.number().int(),
    client_secret: z.string().optional(),
    client_secret_expires_at: z.number().int().optional(),
    client_name: z.string(),
    redirect_uris: z.array(z.string()),
    token_endpoint_auth_method: z.string(),
    grant_types: z.array(z.string()),
    response_types: z.array(z.string()),
    scope: z.string(),
  })
  .meta({ id: 'RegisterClientResponse' });

/** GET /oauth/authorize query (RFC 6749 §4.1.1 with PKCE and RFC 8707 resource). */
export const AuthorizeQuery = z.object({
  response_type: z.string().max(50).optional(),
  client_id: z.string().max(200).optional(),
  redirect_uri: z.string().max(2000).optional(),
  code_challenge: z.string().max(200).optional(),
  code_challenge_method: z.string().max(20).optional(),
  scope: z.string().max(200).optional(),
  state: z.string().max(1000).optional(),
  resource: z.string().max(2000).optional(),
});

/** The spec's Body_postOAuthAuthorize (form). */
export const AuthorizeForm = z
  .object({
    client_id: z.string().max(200),
    redirect_uri: z.string().max(2000),
    code_challenge: z.string().max(200),
    code_challenge_method: z.string().max(20).default('S256'),
    scope: z.string().max(200).default(MCP_SCOPE),
    state: z.string().max(1000).default(''),
    resource: z.string().max(2000).default(''),
    action: z.string().max(20).default(''),
    email: z.string().max(320).nullish(),
    password: z.string().max(1024).nullish(),
    response_type: z.string().max(50).optional(),
  })
  .meta({ id: 'Body_postOAuthAuthorize' });
export type AuthorizeFormT = z.infer<typeof AuthorizeForm>;

/** The spec's Body_createOAuthToken (form), with the refresh and RFC 8707 fields. */
export const TokenForm = z
  .object({
    grant_type: z.string().max(100),
    client_id: z.string().max(200).optional(),
    client_secret: z.string().max(200).optional(),
    code: z.string().max(200).optional(),
    code_verifier: z.string().max(200).optional(),
    redirect_uri: z.string().max(2000).optional(),
    refresh_token: z.string().max(200).optional(),
    resource: z.string().max(2000).optional(),
    scope: z.string().max(200).optional(),
  })
  .meta({ id: 'Body_createOAuthToken' });
export type TokenFormT = z.infer<typeof TokenForm>;

export const TokenResponse = z
  .object({
    access_token: z.string(),
    token_type: z.literal('Bearer'),
    expires_in: z.number().int(),
    refresh_token: z.string(),
    scope: z.string(),
  })
  .meta({ id: 'OAuthTokenResponse' });

export const RevokeForm = z
  .object({
    token: z.string().max(200),
    token_type_hint: z.string().max(50).optional(),
    client_id: z.string().max(200).optional(),
    client_secret: z.string().max(200).optional(),
  })
  .meta({ id: 'Body_revokeOAuthToken' });

export const OAuthErrorBody = z.object({ error: z.string(), error_description: z.string().optional() }).meta({ id: 'OAuthErrorResponse' });

export const AuthorizationServerMetadata = z
  .object({
    issuer: z.string(),
    authorization_endpoint: z.string(),
    token_endpoint: z.string(),
    registration_endpoint: z.string(),
    revocation_endpoint: z.string(),
    response_types_supported: z.array(z.string()),
    response_modes_supported: z.array(z.string()),
    grant_types_supported: z.array(z.string()),
    code_challenge_methods_supported: z.array(z.string()),
    token_endpoint_auth_methods_supported: z.array(z.string()),
    revocation_endpoint_auth_methods_supported: z.array(z.string()),
    scopes_supported: z.array(z.string()),
    service_documentation: z.string().optional(),
  })
  .meta({ id: 'OAuthAuthorizationServerMetadata' });

export const ProtectedResourceMetadata = z
  .object({
    resource: z.string(),
    authorization_servers: z.array(z.string()),
    scopes_supported: z.array(z.string()),
    bearer_methods_supported: z.array(z.string()),
    resource_name: z.string(),
  })
  .meta({ id: 'OAuthProtectedResourceMetadata' });
