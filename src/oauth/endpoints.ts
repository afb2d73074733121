import type { Config } from '../config.ts';
import { MCP_SCOPE } from './schemas.ts';

/** Paths the spec leaves open; announced in the metadata and documented in docs/oauth-mcp.md. */
export const OAUTH_PATHS = {
  authorize: '/oauth/authorize',
  token: '/oauth/token',
  register: '/oauth/register',
  revoke: '/oauth/revoke',
  asMetadata: '/.well-known/oauth-authorization-server',
  mcpResourceMetadata: '/.well-known/oauth-protected-resource/mcp',
  rootResourceMetadata: '/.well-known/oauth-protected-resource',
} as const;

export const MCP_PATH = '/mcp';

/** The MCP endpoint as a protected resource: every token is bound to exactly this URI. */
export const mcpResource = (config: Pick<Config, 'publicBaseUrl'>): string => `${config.publicBaseUrl}${MCP_PATH}`;

export const mcpResourceMetadataUrl = (config: Pick<Config, 'publicBaseUrl'>): string => `${config.publicBaseUrl}${OAUTH_PATHS.mcpResourceMetadata}`;

/** RFC 8414 metadata. */
export function authorizationServerMetadata(config: Pick<Config, 'publicBaseUrl'>) {
  const base = config.publicBaseUrl;
  return {
    issuer: base,
    authorization_endpoint: base + OAUTH_PATHS.authorize,
    token_endpoint: base + OAUTH_PATHS.token,
    registration_endpoint: base + OAUTH_PATHS.register,
    revocation_endpoint: base + OAUTH_PATHS.revoke,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none', 'client_secret_post', 'client_secret_basic'],
    revocation_endpoint_auth_methods_supported: ['none', 'client_secret_post', 'client_secret_basic'],
    scopes_supported: [MCP_SCOPE],
  };
}

/** RFC 9728 metadata of the MCP endpoint. */
export function mcpProtectedResourceMetadata(config: Pick<Config, 'publicBaseUrl'>) {
  return {
    resource: mcpResource(config),
    authorization_servers: [config.publicBaseUrl],
    scopes_supported: [MCP_SCOPE],
    bearer_methods_supported: ['header'],
    resource_name: 'TSFM forecasting (MCP)',
  };
}

/** Resource indicators are compared in one form: no trailing slash. */
export const canonicalResource = (r: string): string => r.replace(/\/+$/, '');
