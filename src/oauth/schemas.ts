import { z } from 'zod';

/** The one scope this authorization server knows: use of the MCP endpoint. */
export const MCP_SCOPE = 'mcp';

/**
 * Scopes standard clients add by habit and that mean nothing here: refresh tokens are always
 * issued, and this server is not an OpenID provider. They are dropped, not refused (issue #21).
 */
const IGNORED_SCOPES = new Set(['offline_access', 'openid']);

/** The scope granted for a requested one (always `mcp`), or an Error naming the unknown scopes. */
export function grantedScope(requested: string | undefined): string | Error {
  const unknown = (requested ?? '').split(' ').filter((s) => s !== '' && s !== MCP_SCOPE && !IGNORED_SCOPES.has(s));
  if (unknown.length > 0) return new Error(`Unknown scope ${unknown.join(', ')}: only "${MCP_SCOPE}" is supported (offline_access and openid are ignored)`);
  return MCP_SCOPE;
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

/** Loopback hosts whose redirect URIs match on any port (RFC 8252 §7.3). */
export const isLoopbackHost = (hostname: string): boolean => LOOPBACK.has(hostname);

// RFC 8252 §7.1: a private-use scheme is a domain name the app controls, reversed
// (`com.example.app:`): at least two dot-separated labels. Plain words (`ms-word:`, `mailto:`,
// `javascript:`) are schemes of other programs and are refused.
const REVERSE_DOMAIN_SCHEME = /^[a-z][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*)+$/;

/**
 * Why a redirect URI cannot be registered, or null when it can: https anywhere, http only on
 * loopback (RFC 8252 native apps), or a reverse-domain private-use scheme (RFC 8252 §7.1), or a
 * scheme the operator allowed (`OAUTH_EXTRA_REDIRECT_SCHEMES`). Never a fragment.
 */
export function redirectUriProblem(v: string, extraSchemes: ReadonlySet<string>): string | null {
  const u = URL.parse(v);
  if (!u) return 'must be an absolute URL';
  if (u.hash !== '' || v.includes('#')) return 'must not contain a fragment';
  const scheme = u.protocol.slice(0, -1).toLowerCase();
  if (scheme === 'https') return u.hostname === '' ? 'must name a host' : null;
  if (scheme === 'http') return isLoopbackHost(u.hostname) ? null : 'http is allowed only on a loopback host (127.0.0.1, [::1], localhost); use https';
  if (REVERSE_DOMAIN_SCHEME.test(scheme) || extraSchemes.has(scheme)) return null;
  return `the scheme "${scheme}:" is not allowed: use https, http on loopback, or a reverse-domain private-use scheme such as "com.example.app:" (RFC 8252 §7.1)`;
}

/**
 * A request string: bounded, and without NUL, which PostgreSQL cannot store and no OAuth value
 * contains (a NUL is an `invalid_request`, not a database error).
 */
const text = (max: number) =>
  z
    .string()
    .max(max)
    .refine((v) => !v.includes('\u0000'), 'must not contain NUL characters');

export const RegisterClientRequest = z
  .object({
    // Optional in RFC 7591 §2; the consent page then names the client by its redirect host.
    client_name: text(200).trim().optional(),
    // Each URI is checked by redirectUriProblem() in registerClient (the allowed schemes are configuration).
    redirect_uris: z.array(text(2000)).min(1).max(10),
    token_endpoint_auth_method: z.enum(['none', 'client_secret_post', 'client_secret_basic']).optional(),
    grant_types: z.array(text(100)).max(10).optional(),
    response_types: z.array(text(100)).max(10).optional(),
    scope: text(200).optional(),
    client_uri: text(2000).optional(),
    logo_uri: text(2000).optional(),
    software_id: text(200).optional(),
    software_version: text(200).optional(),
  })
  .meta({ id: 'RegisterClientRequest' });
export type RegisterClientInput = z.infer<typeof RegisterClientRequest>;

export const RegisterClientResponse = z
  .object({
    client_id: z.string(),
    client_id_issued_at: z.number().int(),
    client_secret: z.string().optional(),
    client_secret_expires_at: z.number().int().optional(),
    client_name: z.string().optional(),
    redirect_uris: z.array(z.string()),
    token_endpoint_auth_method: z.string(),
    grant_types: z.array(z.string()),
    response_types: z.array(z.string()),
    scope: z.string(),
  })
  .meta({ id: 'RegisterClientResponse' });

/** GET /oauth/authorize query (RFC 6749 §4.1.1 with PKCE and RFC 8707 resource). */
export const AuthorizeQuery = z.object({
  response_type: text(50).optional(),
  client_id: text(200).optional(),
  redirect_uri: text(2000).optional(),
  code_challenge: text(200).optional(),
  code_challenge_method: text(20).optional(),
  scope: text(200).optional(),
  state: text(1000).optional(),
  resource: text(2000).optional(),
});

/** The spec's Body_postOAuthAuthorize (form). */
export const AuthorizeForm = z
  .object({
    client_id: text(200),
    redirect_uri: text(2000),
    code_challenge: text(200),
    code_challenge_method: text(20).default('S256'),
    scope: text(200).default(MCP_SCOPE),
    state: text(1000).default(''),
    resource: text(2000).default(''),
    action: text(20).default(''),
    email: text(320).nullish(),
    password: text(1024).nullish(),
    response_type: text(50).optional(),
    // The captcha answer, as the API names it or as the hCaptcha / Turnstile widget posts it.
    captcha_response: text(10_000).nullish(),
    'h-captcha-response': text(10_000).optional(),
    'cf-turnstile-response': text(10_000).optional(),
  })
  .meta({ id: 'Body_postOAuthAuthorize' });
export type AuthorizeFormT = z.infer<typeof AuthorizeForm>;

/** The spec's Body_createOAuthToken (form), with the refresh and RFC 8707 fields. */
export const TokenForm = z
  .object({
    grant_type: text(100),
    client_id: text(200).optional(),
    client_secret: text(200).optional(),
    code: text(200).optional(),
    code_verifier: text(200).optional(),
    redirect_uri: text(2000).optional(),
    refresh_token: text(200).optional(),
    resource: text(2000).optional(),
    scope: text(200).optional(),
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
    token: text(200),
    token_type_hint: text(50).optional(),
    client_id: text(200).optional(),
    client_secret: text(200).optional(),
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
