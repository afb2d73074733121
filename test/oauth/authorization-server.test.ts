import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { OAuthMetadataSchema, OAuthProtectedResourceMetadataSchema } from '@modelcontextprotocol/sdk/shared/auth.js';
import { DB_KIND, registerUser, type TestUser } from '../helpers/app.ts';
import { createListeningApp, type ListeningApp } from '../helpers/listen.ts';
import { authorizeCode, pkcePair, registerClientAt, returnLink, submitAuthorize, tokenRequest } from './flow.ts';

/** The authorization server's contract and the attacks it must turn away. */
describe(`OAuth authorization server (${DB_KIND})`, () => {
  let t: ListeningApp;
  let u: TestUser;
  let offset = 0;
  before(async () => {
    t = await createListeningApp({ overrides: { clock: { now: () => Date.now() + offset } } });
    u = await registerUser(t);
  });
  after(() => t.close());

  const mcp = (token: string | null, body: unknown = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }) =>
    fetch(`${t.baseUrl}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: JSON.stringify(body),
    });

  /** A registered client, a user's approval and the code exchange: a live token set. */
  async function grant(user = u) {
    const client = await registerClientAt(t.baseUrl);
    const pk = pkcePair();
    const code = await authorizeCode(t.baseUrl, client, user, { challenge: pk.challenge });
    const r = await tokenRequest(t.baseUrl, {
      grant_type: 'authorization_code',
      client_id: client.client_id,
      code,
      code_verifier: pk.verifier,
      redirect_uri: client.redirect_uris[0] as string,
    });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return { client, tokens: r.body as { access_token: string; refresh_token: string; expires_in: number; token_type: string; scope: string } };
  }

  const expectOAuthError = (r: { status: number; body: Record<string, unknown>; headers: Headers }, status: number, error: string) => {
    assert.equal(r.status, status, JSON.stringify(r.body));
    assert.equal(r.body.error, error);
    assert.equal(typeof r.body.error_description, 'string');
    assert.deepEqual(Object.keys(r.body).sort(), ['error', 'error_description']);
    assert.equal(r.headers.get('cache-control'), 'no-store');
  };

  test('RFC 8414 and RFC 9728 metadata, as the SDK client parses them', async () => {
    const as = await (await fetch(`${t.baseUrl}/.well-known/oauth-authorization-server`)).json();
    const m = OAuthMetadataSchema.parse(as);
    assert.equal(m.issuer, t.baseUrl);
    assert.equal(m.authorization_endpoint, `${t.baseUrl}/oauth/authorize`);
    assert.equal(m.token_endpoint, `${t.baseUrl}/oauth/token`);
    assert.equal(m.registration_endpoint, `${t.baseUrl}/oauth/register`);
    assert.deepEqual(m.response_types_supported, ['code']);
    assert.deepEqual(m.grant_types_supported, ['authorization_code', 'refresh_token']);
    assert.deepEqual(m.code_challenge_methods_supported, ['S256']);
    assert.ok(m.token_endpoint_auth_methods_supported?.includes('none'));
    assert.deepEqual(m.scopes_supported, ['mcp']);
    const prm = OAuthProtectedResourceMetadataSchema.parse(await (await fetch(`${t.baseUrl}/.well-known/oauth-protected-resource/mcp`)).json());
    assert.equal(prm.resource, `${t.baseUrl}/mcp`);
    assert.deepEqual(prm.authorization_servers, [t.baseUrl]);
    const pre = await fetch(`${t.baseUrl}/oauth/token`, {
      method: 'OPTIONS',
      headers: { origin: 'http://inspector.local', 'access-control-request-method': 'POST' },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get('access-control-allow-origin'), '*');
  });

  test('/mcp without a credential or with a bad one: 401 pointing at the resource metadata', async () => {
    for (const token of [null, 'tsfo_not-a-real-token', 'garbage']) {
      const r = await mcp(token);
      assert.equal(r.status, 401);
      const h = r.headers.get('www-authenticate') ?? '';
      assert.match(h, /^Bearer /);
      assert.ok(h.includes(`resource_metadata="${t.baseUrl}/.well-known/oauth-protected-resource/mcp"`), h);
      if (token) assert.match(h, /error="invalid_token"/);
      const body = (await r.json()) as { code: string };
      assert.equal(body.code, token ? 'invalid_credential' : 'missing_credential');
    }
    // The browser's session cookie does not open /mcp: Bearer only.
    const viaCookie = await fetch(`${t.baseUrl}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', cookie: `tsfm_session=${u.token}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    assert.equal(viaCookie.status, 401);
    // …while the same session token as Bearer does.
    assert.equal((await mcp(u.token)).status, 200);
  });

  test('dynamic registration: public client without secret; bad redirect URIs and unknown scopes are refused', async () => {
    const c = await registerClientAt(t.baseUrl, ['https://app.example/cb', 'cursor://mcp/cb']);
    assert.match(c.client_id, /^mcpc_/);
    assert.equal(c.client_secret, undefined);
    for (const [body, error] of [
      [{ client_name: 'x', redirect_uris: ['javascript:alert(1)'] }, 'invalid_redirect_uri'],
      [{ client_name: 'x', redirect_uris: ['http://evil.example/cb'] }, 'invalid_redirect_uri'],
      [{ client_name: 'x', redirect_uris: ['https://a.example/cb#frag'] }, 'invalid_redirect_uri'],
      [{ client_name: 'x', redirect_uris: ['https://a.example/cb'], scope: 'mcp admin' }, 'invalid_client_metadata'],
      [{ client_name: 'x', redirect_uris: ['https://a.example/cb'], grant_types: ['client_credentials'] }, 'invalid_client_metadata'],
    ] as const) {
      const r = await fetch(`${t.baseUrl}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expectOAuthError({ status: r.status, body: (await r.json()) as Record<string, unknown>, headers: r.headers }, 400, error);
    }
  });

  test('happy path tokens: Bearer, expiry, scope; accepted on /mcp, refused on REST routes (audience)', async () => {
    const { tokens } = await grant();
    assert.equal(tokens.token_type, 'Bearer');
    assert.equal(tokens.expires_in, 3600);
    assert.equal(tokens.scope, 'mcp');
    assert.equal((await mcp(tokens.access_token)).status, 200);
    const rest = await fetch(`${t.baseUrl}/api/account/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    assert.equal(rest.status, 401);
    assert.equal(((await rest.json()) as { code: string }).code, 'invalid_credential');
    // Only the digest is stored.
    const rows = await t.deps.database.db.selectFrom('oauth_tokens').select(['token_hash']).where('user_id', '=', u.id).execute();
    assert.ok(rows.length >= 2);
    assert.ok(rows.every((r) => /^[0-9a-f]{64}$/.test(r.token_hash) && r.token_hash !== tokens.access_token));
  });

  test('attack: wrong PKCE verifier is rejected', async () => {
    const client = await registerClientAt(t.baseUrl);
    const pk = pkcePair();
    const code = await authorizeCode(t.baseUrl, client, u, { challenge: pk.challenge });
    const wrong = await tokenRequest(t.baseUrl, {
      grant_type: 'authorization_code',
      client_id: client.client_id,
      code,
      code_verifier: pkcePair().verifier,
      redirect_uri: client.redirect_uris[0] as string,
    });
    expectOAuthError(wrong, 400, 'invalid_grant');
    const missing = await tokenRequest(t.baseUrl, {
      grant_type: 'authorization_code',
      client_id: client.client_id,
      code,
      redirect_uri: client.redirect_uris[0] as string,
    });
    expectOAuthError(missing, 400, 'invalid_request');
  });

  test('attack: the plain PKCE method is refused (a page linking back with invalid_request, no redirect)', async () => {
    const client = await registerClientAt(t.baseUrl);
    const pk = pkcePair();
    const common = {
      client_id: client.client_id,
      redirect_uri: client.redirect_uris[0] as string,
      code_challenge: pk.verifier,
      code_challenge_method: 'plain',
      scope: 'mcp',
      state: 'abc',
    };
    const get = await fetch(`${t.baseUrl}/oauth/authorize?${new URLSearchParams({ response_type: 'code', ...common })}`, { redirect: 'manual' });
    assert.equal(get.status, 400);
    assert.equal(get.headers.get('location'), null);
    const loc = returnLink(await get.text());
    assert.equal(loc?.searchParams.get('error'), 'invalid_request');
    assert.equal(loc?.searchParams.get('state'), 'abc');
    assert.equal(loc?.searchParams.get('code'), null);
    const post = await submitAuthorize(t.baseUrl, { ...common, action: 'approve', email: u.email, password: u.password });
    assert.equal(post.status, 400);
    assert.equal(post.location, null);
    assert.equal(returnLink(post.text)?.searchParams.get('error'), 'invalid_request');
    assert.equal(returnLink(post.text)?.searchParams.get('code'), null);
  });

  test('attack: a redirect_uri that is not registered exactly is never redirected to; a mismatch at the token endpoint fails', async () => {
    const client = await registerClientAt(t.baseUrl, ['http://127.0.0.1:9/callback', 'http://127.0.0.1:9/other']);
    const pk = pkcePair();
    // (Another port of the same loopback URI is allowed: RFC 8252 §7.3.)
    for (const evil of ['https://evil.example/cb', 'http://127.0.0.1:9/callback/', 'http://localhost:9/callback', 'http://127.0.0.1:9/callback?x=1']) {
      const get = await fetch(
        `${t.baseUrl}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: client.client_id, redirect_uri: evil, code_challenge: pk.challenge, code_challenge_method: 'S256' })}`,
        { redirect: 'manual' },
      );
      assert.equal(get.status, 400, evil);
      assert.equal(get.headers.get('location'), null);
      const post = await submitAuthorize(t.baseUrl, {
        client_id: client.client_id,
        redirect_uri: evil,
        code_challenge: pk.challenge,
        action: 'approve',
        email: u.email,
        password: u.password,
      });
      assert.equal(post.status, 400);
      assert.equal(post.location, null);
    }
    const code = await authorizeCode(t.baseUrl, client, u, { challenge: pk.challenge });
    const r = await tokenRequest(t.baseUrl, {
      grant_type: 'authorization_code',
      client_id: client.client_id,
      code,
      code_verifier: pk.verifier,
      redirect_uri: 'http://127.0.0.1:9/other',
    });
    expectOAuthError(r, 400, 'invalid_grant');
    const unknownClient = await fetch(`${t.baseUrl}/oauth/authorize?client_id=mcpc_nope&redirect_uri=${encodeURIComponent('https://evil.example/cb')}`, {
      redirect: 'manual',
    });
    assert.equal(unknownClient.status, 400);
    assert.equal(unknownClient.headers.get('location'), null);
  });

  test('attack: a reused code fails and revokes the tokens it issued', async () => {
    const client = await registerClientAt(t.baseUrl);
    const pk = pkcePair();
    const code = await authorizeCode(t.baseUrl, client, u, { challenge: pk.challenge });
    const form = {
      grant_type: 'authorization_code',
      client_id: client.client_id,
      code,
      code_verifier: pk.verifier,
      redirect_uri: client.redirect_uris[0] as string,
    };
    const first = await tokenRequest(t.baseUrl, form);
    assert.equal(first.status, 200);
    assert.equal((await mcp(first.body.access_token)).status, 200);
    const second = await tokenRequest(t.baseUrl, form);
    expectOAuthError(second, 400, 'invalid_grant');
    assert.equal((await mcp(first.body.access_token)).status, 401);
    const refresh = await tokenRequest(t.baseUrl, { grant_type: 'refresh_token', client_id: client.client_id, refresh_token: first.body.refresh_token });
    expectOAuthError(refresh, 400, 'invalid_grant');
  });

  test('attack: an expired code is refused', async () => {
    const client = await registerClientAt(t.baseUrl);
    const pk = pkcePair();
    const code = await authorizeCode(t.baseUrl, client, u, { challenge: pk.challenge });
    offset = 61_000; // codes live 60 s
    try {
      const r = await tokenRequest(t.baseUrl, {
        grant_type: 'authorization_code',
        client_id: client.client_id,
        code,
        code_verifier: pk.verifier,
        redirect_uri: client.redirect_uris[0] as string,
      });
      expectOAuthError(r, 400, 'invalid_grant');
      assert.match(String(r.body.error_description), /expired/);
    } finally {
      offset = 0;
    }
  });

  test('attack: a code of another client is refused', async () => {
    const a = await registerClientAt(t.baseUrl);
    const b = await registerClientAt(t.baseUrl);
    const pk = pkcePair();
    const code = await authorizeCode(t.baseUrl, a, u, { challenge: pk.challenge });
    const r = await tokenRequest(t.baseUrl, {
      grant_type: 'authorization_code',
      client_id: b.client_id,
      code,
      code_verifier: pk.verifier,
      redirect_uri: a.redirect_uris[0] as string,
    });
    expectOAuthError(r, 400, 'invalid_grant');
  });

  test('attack: tokens for another resource are neither issued nor accepted', async () => {
    const client = await registerClientAt(t.baseUrl);
    const pk = pkcePair();
    const post = await submitAuthorize(t.baseUrl, {
      client_id: client.client_id,
      redirect_uri: client.redirect_uris[0] as string,
      code_challenge: pk.challenge,
      resource: 'https://other.example/mcp',
      state: 's',
      action: 'approve',
      email: u.email,
      password: u.password,
    });
    assert.equal(post.status, 400);
    assert.equal(post.location, null);
    assert.equal(returnLink(post.text)?.searchParams.get('error'), 'invalid_target');
    const code = await authorizeCode(t.baseUrl, client, u, { challenge: pk.challenge });
    const r = await tokenRequest(t.baseUrl, {
      grant_type: 'authorization_code',
      client_id: client.client_id,
      code,
      code_verifier: pk.verifier,
      redirect_uri: client.redirect_uris[0] as string,
      resource: 'https://other.example/mcp',
    });
    expectOAuthError(r, 400, 'invalid_target');
    // A token bound to some other resource (as another deployment would issue) is not accepted here.
    const { tokens } = await grant();
    assert.equal((await mcp(tokens.access_token)).status, 200);
    await t.deps.database.db.updateTable('oauth_tokens').set({ resource: 'https://other.example/mcp' }).where('user_id', '=', u.id).execute();
    assert.equal((await mcp(tokens.access_token)).status, 401);
  });

  test('attack: a revoked token stops working at once; revoking the refresh token ends the grant', async () => {
    const { client, tokens } = await grant();
    assert.equal((await mcp(tokens.access_token)).status, 200);
    const rv = await fetch(`${t.baseUrl}/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: tokens.access_token, client_id: client.client_id }).toString(),
    });
    assert.equal(rv.status, 200);
    assert.equal((await mcp(tokens.access_token)).status, 401);
    const { client: c2, tokens: t2 } = await grant();
    await fetch(`${t.baseUrl}/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: t2.refresh_token, client_id: c2.client_id }).toString(),
    });
    assert.equal((await mcp(t2.access_token)).status, 401);
    const r = await tokenRequest(t.baseUrl, { grant_type: 'refresh_token', client_id: c2.client_id, refresh_token: t2.refresh_token });
    expectOAuthError(r, 400, 'invalid_grant');
  });

  test('refresh rotation: a new pair each time; replaying a retired refresh token revokes the grant', async () => {
    const { client, tokens } = await grant();
    const r1 = await tokenRequest(t.baseUrl, { grant_type: 'refresh_token', client_id: client.client_id, refresh_token: tokens.refresh_token });
    assert.equal(r1.status, 200, JSON.stringify(r1.body));
    assert.notEqual(r1.body.refresh_token, tokens.refresh_token);
    assert.equal((await mcp(r1.body.access_token)).status, 200);
    const replay = await tokenRequest(t.baseUrl, { grant_type: 'refresh_token', client_id: client.client_id, refresh_token: tokens.refresh_token });
    expectOAuthError(replay, 400, 'invalid_grant');
    assert.equal((await mcp(r1.body.access_token)).status, 401);
    const again = await tokenRequest(t.baseUrl, { grant_type: 'refresh_token', client_id: client.client_id, refresh_token: r1.body.refresh_token });
    expectOAuthError(again, 400, 'invalid_grant');
  });

  test('state: echoed when given, absent when not; deny redirects with access_denied', async () => {
    const client = await registerClientAt(t.baseUrl);
    const pk = pkcePair();
    const base = { client_id: client.client_id, redirect_uri: client.redirect_uris[0] as string, code_challenge: pk.challenge };
    const noState = await submitAuthorize(t.baseUrl, { ...base, action: 'approve', email: u.email, password: u.password });
    const loc = new URL(noState.location ?? '');
    assert.ok(loc.searchParams.get('code'));
    assert.equal(loc.searchParams.has('state'), false);
    const denied = await submitAuthorize(t.baseUrl, { ...base, state: 'xyz', action: 'deny' });
    assert.equal(denied.status, 303);
    const d = new URL(denied.location ?? '');
    assert.equal(d.searchParams.get('error'), 'access_denied');
    assert.equal(d.searchParams.get('state'), 'xyz');
    assert.equal(d.searchParams.get('code'), null);
  });

  test('sign-in: wrong password re-shows the page (401, no redirect); a browser session skips the sign-in', async () => {
    const client = await registerClientAt(t.baseUrl);
    const pk = pkcePair();
    const base = { client_id: client.client_id, redirect_uri: client.redirect_uris[0] as string, code_challenge: pk.challenge, state: 's1' };
    const bad = await submitAuthorize(t.baseUrl, { ...base, action: 'approve', email: u.email, password: 'wrong-password' });
    assert.equal(bad.status, 401);
    assert.equal(bad.location, null);
    assert.match(bad.text, /Wrong e-mail or password/);
    const noCred = await submitAuthorize(t.baseUrl, { ...base, action: 'approve' });
    assert.equal(noCred.status, 401);
    // With the browser's session cookie (from the login route): consent only.
    const cookie = `tsfm_session=${u.token}`;
    const page = await fetch(`${t.baseUrl}/oauth/authorize?${new URLSearchParams({ response_type: 'code', ...base, code_challenge_method: 'S256' })}`, {
      headers: { cookie },
    });
    const html = await page.text();
    assert.match(html, /Signed in as/);
    assert.doesNotMatch(html, /name="password"/);
    const ok = await submitAuthorize(t.baseUrl, { ...base, action: 'approve' }, { cookie });
    assert.equal(ok.status, 303);
    assert.ok(new URL(ok.location ?? '').searchParams.get('code'));
    // A cross-site post is refused even with the cookie.
    const csrf = await submitAuthorize(t.baseUrl, { ...base, action: 'approve' }, { cookie, origin: 'https://evil.example' });
    assert.equal(csrf.status, 403);
  });

  test('token endpoint: unsupported grant, unknown client, malformed body', async () => {
    const client = await registerClientAt(t.baseUrl);
    expectOAuthError(await tokenRequest(t.baseUrl, { grant_type: 'password', client_id: client.client_id }), 400, 'unsupported_grant_type');
    expectOAuthError(
      await tokenRequest(t.baseUrl, { grant_type: 'authorization_code', client_id: 'mcpc_nope', code: 'x', code_verifier: 'y', redirect_uri: 'z' }),
      401,
      'invalid_client',
    );
    expectOAuthError(await tokenRequest(t.baseUrl, { client_id: client.client_id }), 400, 'invalid_request');
  });

  test('deleting the account revokes its tokens (rows cascade)', async () => {
    const v = await registerUser(t);
    const { tokens } = await grant(v);
    assert.equal((await mcp(tokens.access_token)).status, 200);
    const del = await fetch(`${t.baseUrl}/api/account/me`, { method: 'DELETE', headers: { authorization: `Bearer ${v.token}` } });
    assert.equal(del.status, 200);
    assert.equal((await mcp(tokens.access_token)).status, 401);
    const left = await t.deps.database.db.selectFrom('oauth_tokens').select('id').where('user_id', '=', v.id).execute();
    assert.equal(left.length, 0);
  });
});
