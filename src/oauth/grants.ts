import { createHash, timingSafeEqual } from 'node:crypto';
import type { Kysely, Transaction } from 'kysely';
import {
  InvalidGrantError,
  InvalidRequestError,
  InvalidScopeError,
  InvalidTargetError,
  UnsupportedResponseTypeError,
  type OAuthError,
} from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { Config } from '../config.ts';
import type { DB } from '../db/schema.ts';
import { newId } from '../shared/ids.ts';
import { hashSecret, newSecret, SECRET_PREFIX } from '../shared/secrets.ts';
import { findClient, isRegisteredRedirect, type ClientRow } from './clients.ts';
import { canonicalResource, mcpResource } from './endpoints.ts';
import { grantedScope, redirectUriProblem, type TokenFormT } from './schemas.ts';

export interface OAuthCtx {
  db: Kysely<DB>;
  config: Pick<Config, 'publicBaseUrl' | 'oauth'>;
  now: number;
}

/** An authorization request that passed every check: safe to show consent for and to answer. */
export interface AuthorizationRequest {
  client: ClientRow;
  redirectUri: string;
  codeChallenge: string;
  scope: string;
  state: string;
  resource: string;
}

/** Errors that must not be sent to the redirect URI at all (unknown client, unregistered redirect_uri). */
export class DirectAuthorizeError extends Error {
  readonly oauth: OAuthError;
  constructor(oauth: OAuthError) {
    super(oauth.message);
    this.oauth = oauth;
  }
}

/**
 * Errors about a known client and registered redirect URI. Anyone can register a client (RFC
 * 7591), so a registered URI proves nothing: these are shown on a page whose link takes the user
 * back with `error=…&state=…` (RFC 9700 §4.11.2), never redirected to without the user's action.
 */
export class RedirectAuthorizeError extends Error {
  readonly oauth: OAuthError;
  readonly redirectUri: string;
  readonly state: string;
  constructor(oauth: OAuthError, redirectUri: string, state: string) {
    super(oauth.message);
    this.oauth = oauth;
    this.redirectUri = redirectUri;
    this.state = state;
  }
}

// S256 challenges are base64url SHA-256 digests: exactly 43 characters (RFC 7636 §4.2).
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
// RFC 7636 §4.1: 43..128 unreserved characters.
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

export interface AuthorizeParams {
  response_type?: string | undefined;
  client_id?: string | undefined;
  redirect_uri?: string | undefined;
  code_challenge?: string | undefined;
  code_challenge_method?: string | undefined;
  scope?: string | undefined;
  state?: string | undefined;
  resource?: string | undefined;
}

/**
 * Checks an authorization request in the order RFC 6749 §4.1.2.1 requires: first the client and
 * its redirect URI (failures are shown to the user, never redirected), then everything else
 * (failures go back to the client's redirect URI).
 */
export async function checkAuthorizationRequest(ctx: OAuthCtx, p: AuthorizeParams): Promise<AuthorizationRequest> {
  if (!p.client_id) throw new DirectAuthorizeError(new InvalidRequestError('client_id is required'));
  const client = await findClient(ctx.db, p.client_id);
  if (!client) throw new DirectAuthorizeError(new InvalidRequestError('Unknown client_id'));
  if (!p.redirect_uri) throw new DirectAuthorizeError(new InvalidRequestError('redirect_uri is required'));
  if (!isRegisteredRedirect(client, p.redirect_uri)) {
    throw new DirectAuthorizeError(new InvalidRequestError('redirect_uri does not match a registered redirect URI exactly'));
  }
  // Clients registered under older, looser rules: a URI that is no longer allowed is never used.
  const problem = redirectUriProblem(p.redirect_uri, ctx.config.oauth.extraRedirectSchemes);
  if (problem) throw new DirectAuthorizeError(new InvalidRequestError(`redirect_uri ${problem}`));
  const state = p.state ?? '';
  const fail = (e: OAuthError) => new RedirectAuthorizeError(e, p.redirect_uri as string, state);
  if (p.response_type !== undefined && p.response_type !== 'code') {
    throw fail(new UnsupportedResponseTypeError('Only response_type=code is supported'));
  }
  const method = p.code_challenge_method || 'S256';
  if (method !== 'S256') throw fail(new InvalidRequestError('code_challenge_method must be S256 (plain is not accepted)'));
  if (!p.code_challenge) throw fail(new InvalidRequestError('code_challenge is required (PKCE)'));
  if (!S256_CHALLENGE.test(p.code_challenge)) throw fail(new InvalidRequestError('code_challenge is not an S256 challenge'));
  const scope = grantedScope(p.scope);
  if (scope instanceof Error) throw fail(new InvalidScopeError(scope.message));
  const ours = mcpResource(ctx.config);
  const resource = p.resource ? canonicalResource(p.resource) : ours;
  if (resource !== ours) throw fail(new InvalidTargetError(`This server issues tokens only for ${ours}`));
  return { client, redirectUri: p.redirect_uri, codeChallenge: p.code_challenge, scope, state, resource };
}

/** The redirect URI with parameters added (its own query is kept). */
export function redirectWith(redirectUri: string, params: Record<string, string>): string {
  const u = new URL(redirectUri);
  for (const [k, v] of Object.entries(params)) if (v !== '') u.searchParams.set(k, v);
  return u.href;
}

export async function issueCode(ctx: OAuthCtx, req: AuthorizationRequest, userId: string): Promise<string> {
  const code = newSecret(SECRET_PREFIX.oauthCode);
  await ctx.db
    .insertInto('oauth_codes')
    .values({
      id: newId('ocd'),
      code_hash: hashSecret(code),
      client_id: req.client.id,
      user_id: userId,
      redirect_uri: req.redirectUri,
      code_challenge: req.codeChallenge,
      scope: req.scope,
      resource: req.resource,
      created_at: ctx.now,
      expires_at: ctx.now + ctx.config.oauth.codeTtlMs,
      used_at: null,
    })
    .execute();
  return code;
}

export function s256(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

function pkceMatches(verifier: string, challenge: string): boolean {
  const a = Buffer.from(s256(verifier));
  const b = Buffer.from(challenge);
  return a.length === b.length && timingSafeEqual(a, b);
}

export interface TokenSet {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

async function issueTokens(
  trx: Transaction<DB> | Kysely<DB>,
  ctx: OAuthCtx,
  g: { grantId: string; clientId: string; userId: string; scope: string; resource: string },
): Promise<TokenSet> {
  const access = newSecret(SECRET_PREFIX.oauthAccess);
  const refresh = newSecret(SECRET_PREFIX.oauthRefresh);
  const common = { grant_id: g.grantId, client_id: g.clientId, user_id: g.userId, scope: g.scope, resource: g.resource, created_at: ctx.now, revoked_at: null };
  await trx
    .insertInto('oauth_tokens')
    .values([
      { ...common, id: newId('oat'), kind: 'access', token_hash: hashSecret(access), expires_at: ctx.now + ctx.config.oauth.accessTokenTtlMs },
      { ...common, id: newId('ort'), kind: 'refresh', token_hash: hashSecret(refresh), expires_at: ctx.now + ctx.config.oauth.refreshTokenTtlMs },
    ])
    .execute();
  return {
    access_token: access,
    token_type: 'Bearer',
    expires_in: Math.floor(ctx.config.oauth.accessTokenTtlMs / 1000),
    refresh_token: refresh,
    scope: g.scope,
  };
}

async function revokeGrant(db: Kysely<DB> | Transaction<DB>, grantId: string, now: number): Promise<void> {
  await db.updateTable('oauth_tokens').set({ revoked_at: now }).where('grant_id', '=', grantId).where('revoked_at', 'is', null).execute();
}

function checkResourceParam(ctx: OAuthCtx, requested: string | undefined, bound: string): void {
  if (requested !== undefined && requested !== '' && canonicalResource(requested) !== bound) {
    throw new InvalidTargetError(`The grant is bound to ${bound}`);
  }
  void ctx;
}

/**
 * authorization_code grant. The code is consumed first with a guarded update (only one
 * presentation can ever win); a second presentation finds it used and revokes every token the
 * first one produced (OAuth 2.1 §4.1.3). Then the binding checks: client, expiry, redirect URI,
 * PKCE S256, resource.
 */
export async function exchangeCode(ctx: OAuthCtx, client: ClientRow, form: TokenFormT): Promise<TokenSet> {
  if (!form.code) throw new InvalidRequestError('code is required');
  if (!form.code_verifier) throw new InvalidRequestError('code_verifier is required (PKCE)');
  if (!form.redirect_uri) throw new InvalidRequestError('redirect_uri is required');
  const codeHash = hashSecret(form.code);
  return ctx.db
    .transaction()
    .execute(async (trx) => {
      const row = await trx
        .updateTable('oauth_codes')
        .set({ used_at: ctx.now })
        .where('code_hash', '=', codeHash)
        .where('used_at', 'is', null)
        .returningAll()
        .executeTakeFirst();
      if (!row) {
        const used = await trx.selectFrom('oauth_codes').select(['id', 'client_id']).where('code_hash', '=', codeHash).executeTakeFirst();
        if (used && used.client_id === client.id) {
          // Replay: whoever holds the tokens from the first exchange loses them too.
          await revokeGrant(trx, used.id, ctx.now);
          // The revocation must survive the error below, so it is committed by returning a marker.
          return { replayed: true as const };
        }
        throw new InvalidGrantError('The authorization code is invalid or was already used');
      }
      if (row.client_id !== client.id) throw new InvalidGrantError('The authorization code was issued to another client');
      if (row.expires_at <= ctx.now) throw new InvalidGrantError('The authorization code has expired');
      if (row.redirect_uri !== form.redirect_uri) throw new InvalidGrantError('redirect_uri does not match the authorization request');
      if (!VERIFIER.test(form.code_verifier as string)) throw new InvalidGrantError('code_verifier is malformed');
      if (!pkceMatches(form.code_verifier as string, row.code_challenge)) throw new InvalidGrantError('code_verifier does not match the code_challenge');
      checkResourceParam(ctx, form.resource, row.resource);
      return issueTokens(trx, ctx, { grantId: row.id, clientId: client.id, userId: row.user_id, scope: row.scope, resource: row.resource });
    })
    .then((r) => {
      if ('replayed' in r) throw new InvalidGrantError('The authorization code was already used; the tokens issued for it are revoked');
      return r;
    });
}

/**
 * refresh_token grant with rotation: the presented refresh token is retired with a guarded update
 * and a new pair is issued. Presenting a retired refresh token again revokes the whole grant.
 */
export async function refreshTokens(ctx: OAuthCtx, client: ClientRow, form: TokenFormT): Promise<TokenSet> {
  if (!form.refresh_token) throw new InvalidRequestError('refresh_token is required');
  const scope = grantedScope(form.scope);
  if (scope instanceof Error) throw new InvalidScopeError(scope.message);
  const hash = hashSecret(form.refresh_token);
  const r = await ctx.db.transaction().execute(async (trx) => {
    const row = await trx
      .updateTable('oauth_tokens')
      .set({ revoked_at: ctx.now })
      .where('token_hash', '=', hash)
      .where('kind', '=', 'refresh')
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', ctx.now)
      .where('client_id', '=', client.id)
      .returningAll()
      .executeTakeFirst();
    if (!row) {
      const old = await trx
        .selectFrom('oauth_tokens')
        .select(['grant_id', 'client_id', 'revoked_at'])
        .where('token_hash', '=', hash)
        .where('kind', '=', 'refresh')
        .executeTakeFirst();
      if (old && old.client_id === client.id && old.revoked_at !== null) {
        await revokeGrant(trx, old.grant_id, ctx.now);
        return { replayed: true as const };
      }
      throw new InvalidGrantError('The refresh token is invalid, expired or revoked');
    }
    checkResourceParam(ctx, form.resource, row.resource);
    return issueTokens(trx, ctx, { grantId: row.grant_id, clientId: client.id, userId: row.user_id, scope: row.scope, resource: row.resource });
  });
  if ('replayed' in r) throw new InvalidGrantError('The refresh token was already used; the grant is revoked');
  return r;
}

/**
 * RFC 7009 revocation. Revoking a refresh token ends its grant (RFC 7009 §2.1); revoking an
 * access token ends that token. Unknown tokens and other clients' tokens are ignored (200).
 */
export async function revokeToken(ctx: OAuthCtx, client: ClientRow, token: string): Promise<void> {
  const row = await ctx.db
    .selectFrom('oauth_tokens')
    .select(['id', 'kind', 'grant_id', 'client_id'])
    .where('token_hash', '=', hashSecret(token))
    .executeTakeFirst();
  if (!row || row.client_id !== client.id) return;
  if (row.kind === 'refresh') await revokeGrant(ctx.db, row.grant_id, ctx.now);
  else await ctx.db.updateTable('oauth_tokens').set({ revoked_at: ctx.now }).where('id', '=', row.id).where('revoked_at', 'is', null).execute();
}
