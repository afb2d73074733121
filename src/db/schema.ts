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
  /** When the owner proved the address (mailed link or a provider's verified e-mail); null until then. */
  email_verified_at: number | null;
  /** When the free credits were granted (once per account). */
  free_credits_granted_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface EmailVerificationsTable {
  id: string;
  user_id: string;
  email: string;
  token_hash: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
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
  /** Space-separated scopes (src/shared/scopes.ts). */
  scopes: string;
  expires_at: number | null;
  /** JSON array of model ids or `*` patterns; null = every model. */
  allowed_models: string | null;
  monthly_credit_limit: number | null;
  rate_limit_per_minute: number | null;
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

export interface BillingAccountsTable {
  user_id: string;
  /** Prepaid (free and granted) credits left; never below zero. */
  balance: number;
  billing_active: number;
  provider: string | null;
  customer_id: string | null;
  subscription_id: string | null;
  billing_changed_at: number | null;
  /** `created` time (ms) of the last provider event applied; older events are not applied. */
  provider_event_at: number | null;
  /** Credits; a debit that takes the balance below it mails the account once. Null = off. */
  low_balance_threshold: number | null;
  /** When the alert was mailed; cleared (re-armed) when the balance is back at or above the threshold. */
  low_balance_alerted_at: number | null;
  created_at: number;
  updated_at: number;
}

export type LedgerKind = 'grant' | 'debit' | 'adjustment';

export interface CreditLedgerTable {
  id: string;
  user_id: string;
  kind: LedgerKind;
  /** Signed change of the prepaid balance. */
  amount: number;
  /** Credits of a debit charged through metered billing (not from the balance). */
  metered_credits: number;
  request_id: string | null;
  usage_event_id: string | null;
  audit_id: string | null;
  description: string | null;
  created_at: number;
}

export interface CreditHoldsTable {
  id: string;
  user_id: string;
  request_id: string;
  free_credits: number;
  metered_credits: number;
  created_at: number;
  expires_at: number;
  /** The API key the call was made with (counts towards its monthly limit while open). */
  key_id?: string | null;
}

export interface UsageEventsTable {
  id: string;
  user_id: string;
  request_id: string;
  created_at: number;
  model: string;
  source: 'api' | 'batch' | 'ensemble' | 'mcp' | 'playground' | 'schedule';
  credential_kind: 'session' | 'api_key' | 'oauth';
  key_id: string | null;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  credits: number;
  free_credits: number;
  metered_credits: number;
  cost_nano_usd: number;
  latency_ms: number;
  status: 'succeeded' | 'timed_out';
}

export interface MeteredUsageOutboxTable {
  id: string;
  user_id: string;
  provider: string;
  customer_id: string | null;
  usage_event_id: string;
  credits: number;
  created_at: number;
  reported_at: number | null;
  attempts: number;
  last_error: string | null;
}

export interface AuditRecordsTable {
  id: string;
  actor_user_id: string;
  action: 'grant_credits' | 'reset_usage';
  target_user_id: string;
  amount: number;
  balance_before: number;
  balance_after: number;
  usage_events_deleted: number | null;
  window_start: number | null;
  window_end: number | null;
  reason: string;
  note: string | null;
  idempotency_key: string | null;
  request_hash: string;
  response_json: string;
  created_at: number;
}

export interface BillingSessionsTable {
  id: string;
  token_hash: string;
  user_id: string;
  kind: 'checkout' | 'portal';
  success_url: string | null;
  cancel_url: string | null;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

export interface PaymentEventsTable {
  id: string;
  provider: string;
  type: string;
  received_at: number;
}

/** A claimed idempotency key (src/idempotency/, ADR 0015). */
export interface IdempotencyKeysTable {
  account_id: string;
  key: string;
  /** Operation id the key was first used with. */
  operation: string;
  /** SHA-256 of the operation id and the validated input, canonical JSON. */
  request_hash: string;
  status: 'in_progress' | 'done';
  /** The attempt that holds the key (its metering request id). */
  request_id: string;
  /** An in-progress claim older than this belongs to an attempt that died; another may take it over. */
  locked_until: number;
  status_code: number | null;
  /** The stored answer (JSON); null while in progress, or when it was larger than IDEMPOTENCY_MAX_BODY_BYTES. */
  response_body: string | null;
  credits_charged: number | null;
  created_at: number;
  expires_at: number;
}

export interface SchedulesTable {
  id: string;
  user_id: string;
  name: string;
  model: string;
  cron_expression: string;
  parameters_json: string;
  ingest_json: string;
  source_url: string;
  callback_url: string;
  /** The webhook signing secret: `enc:v1:…` (AES-256-GCM under SCHEDULE_SECRET_KEY) or `whsec_…` as is. */
  secret: string;
  credential_kind: 'session' | 'api_key' | 'oauth';
  credential_id: string;
  status: 'active' | 'paused';
  paused_reason: string | null;
  consecutive_failures: number;
  next_run_at: number | null;
  last_run_at: number | null;
  created_at: number;
  updated_at: number;
}

export type ScheduleRunStatus = 'pending' | 'running' | 'retrying' | 'succeeded' | 'failed' | 'skipped';

export interface ScheduleRunsTable {
  id: string;
  schedule_id: string;
  user_id: string;
  scheduled_for: number;
  status: ScheduleRunStatus;
  attempts: number;
  lease_owner: string | null;
  lease_until: number | null;
  next_attempt_at: number;
  webhook_id: string;
  payload: string | null;
  credits: number | null;
  response_status: number | null;
  error: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
}

export interface DB {
  users: UsersTable;
  sessions: SessionsTable;
  api_keys: ApiKeysTable;
  password_resets: PasswordResetsTable;
  email_verifications: EmailVerificationsTable;
  contact_messages: ContactMessagesTable;
  invites: InvitesTable;
  oauth_clients: OAuthClientsTable;
  oauth_codes: OAuthCodesTable;
  oauth_tokens: OAuthTokensTable;
  oauth_identities: OAuthIdentitiesTable;
  oauth_login_states: OAuthLoginStatesTable;
  billing_accounts: BillingAccountsTable;
  credit_ledger: CreditLedgerTable;
  credit_holds: CreditHoldsTable;
  usage_events: UsageEventsTable;
  metered_usage_outbox: MeteredUsageOutboxTable;
  audit_records: AuditRecordsTable;
  billing_sessions: BillingSessionsTable;
  payment_events: PaymentEventsTable;
  idempotency_keys: IdempotencyKeysTable;
  schedules: SchedulesTable;
  schedule_runs: ScheduleRunsTable;
}
