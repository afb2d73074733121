import type { DialectMigration } from './index.ts';

/**
 * OAuth: the authorization server of the MCP endpoint (clients, codes, tokens) and the identities
 * people sign in with at third-party providers. Secrets are stored as SHA-256 digests only; every
 * row that belongs to an account goes with it (ON DELETE CASCADE). Numbered 0003: 0002 is billing's.
 */
export const m0003_oauth: DialectMigration = {
  async up(db) {
    await db.schema
      .createTable('oauth_clients')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('client_name', 'text', (c) => c.notNull())
      .addColumn('redirect_uris', 'text', (c) => c.notNull()) // JSON array
      .addColumn('token_endpoint_auth_method', 'text', (c) => c.notNull())
      .addColumn('client_secret_hash', 'text')
      .addColumn('metadata', 'text', (c) => c.notNull()) // JSON: the registered metadata as answered
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();

    await db.schema
      .createTable('oauth_codes')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('code_hash', 'text', (c) => c.notNull().unique())
      .addColumn('client_id', 'text', (c) => c.notNull().references('oauth_clients.id').onDelete('cascade'))
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('redirect_uri', 'text', (c) => c.notNull())
      .addColumn('code_challenge', 'text', (c) => c.notNull())
      .addColumn('scope', 'text', (c) => c.notNull())
      .addColumn('resource', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .addColumn('used_at', 'bigint')
      .execute();

    // Access and refresh tokens. `grant_id` ties every token to the code that started the grant,
    // so a replayed code or refresh token can revoke the whole family at once.
    await db.schema
      .createTable('oauth_tokens')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('kind', 'text', (c) => c.notNull()) // 'access' | 'refresh'
      .addColumn('token_hash', 'text', (c) => c.notNull().unique())
      .addColumn('grant_id', 'text', (c) => c.notNull())
      .addColumn('client_id', 'text', (c) => c.notNull().references('oauth_clients.id').onDelete('cascade'))
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('scope', 'text', (c) => c.notNull())
      .addColumn('resource', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .addColumn('revoked_at', 'bigint')
      .execute();
    await db.schema.createIndex('oauth_tokens_grant_idx').on('oauth_tokens').column('grant_id').execute();
    await db.schema.createIndex('oauth_tokens_user_idx').on('oauth_tokens').column('user_id').execute();

    await db.schema
      .createTable('oauth_identities')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
      .addColumn('provider', 'text', (c) => c.notNull())
      .addColumn('subject', 'text', (c) => c.notNull())
      .addColumn('email', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('last_login_at', 'bigint')
      .execute();
    await db.schema.createIndex('oauth_identities_subject').on('oauth_identities').columns(['provider', 'subject']).unique().execute();
    await db.schema.createIndex('oauth_identities_user_provider').on('oauth_identities').columns(['user_id', 'provider']).unique().execute();

    // An identity-provider sign-in in flight: state (hashed) → PKCE verifier and where to go next.
    await db.schema
      .createTable('oauth_login_states')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('state_hash', 'text', (c) => c.notNull().unique())
      .addColumn('provider', 'text', (c) => c.notNull())
      .addColumn('code_verifier', 'text', (c) => c.notNull())
      .addColumn('next_path', 'text', (c) => c.notNull())
      .addColumn('link_user_id', 'text', (c) => c.references('users.id').onDelete('cascade'))
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .addColumn('used_at', 'bigint')
      .execute();
  },
};
