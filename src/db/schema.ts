/** Row types of the tables, as the query builder sees them. Times are epoch milliseconds. */
export interface UsersTable {
  id: string;
  email: string;
  name: string | null;
  password_hash: string | null;
  role: 'user' | 'admin';
  ref: string | null;
  accepted_data_terms_version: string | null;
  accepted_free_tier_data_terms: number | null;
  analytics_distinct_id: string | null;
  service_improvement_opt_in: number;
  created_at: number;
  updated_at: number;
}

export interface SessionsTable {
  id: string;
  user_id: string;
  token_hash: string;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
}

export interface ApiKeysTable {
  id: string;
  user_id: string;
  label: string;
  prefix: string;
  key_hash: string;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

export interface PasswordResetsTable {
  id: string;
  user_id: string;
  token_hash: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

export interface ContactMessagesTable {
  id: string;
  name: string;
  email: string;
  message: string;
  company: string | null;
  topic: string | null;
  source: string | null;
  analytics_distinct_id: string | null;
  created_at: number;
}

export interface InvitesTable {
  id: string;
  user_id: string;
  email: string;
  ref: string;
  created_at: number;
}

export interface OAuthClientsTable {
  id: string;
  client_name: string;
  redirect_uris: string;
  token_endpoint_auth_method: 'none' | 'client_secret_post' | 'client_secret_basic';
  client_secret_hash: string | null;
  metadata: string;
  created_at: number;
}

export interface OAuthCodesTable {
  id: string;
  code_hash: string;
  client_id: string;
  user_id: string;
  redirect_uri: string;
  code_challenge: string;
  scope: string;
  resource: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

export interface OAuthTokensTable {
  id: string;
  kind: 'access' | 'refresh';
  token_hash: string;
  grant_id: string;
  client_id: string;
  user_id: string;
  scope: string;
  resource: string;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
}

export interface OAuthIdentitiesTable {
  id: string;
  user_id: string;
  provider: string;
  subject: string;
  email: string | null;
  created_at: number;
  last_login_at: number | null;
}

export interface OAuthLoginStatesTable {
  id: string;
  state_hash: string;
  provider: string;
  code_verifier: string;
  next_path: string;
  link_user_id: string | null;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

export interface DB {
  users: UsersTable;
  sessions: SessionsTable;
  api_keys: ApiKeysTable;
  password_resets: PasswordResetsTable;
  contact_messages: ContactMessagesTable;
  invites: InvitesTable;
  oauth_clients: OAuthClientsTable;
  oauth_codes: OAuthCodesTable;
  oauth_tokens: OAuthTokensTable;
  oauth_identities: OAuthIdentitiesTable;
  oauth_login_states: OAuthLoginStatesTable;
}
