import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { OAuth2Server } from 'oauth2-mock-server';
import type { UserRow } from '../../src/accounts/users.ts';
import { DEFAULT_NEXT, safeNext } from '../../src/identity/service.ts';
import { call, createTestApp, DB_KIND, expectSchema, registerUser, routeSchema, uniqueEmail, type TestApp } from '../helpers/app.ts';

const BASE = 'http://127.0.0.1:8000';

/** Sign-in with a real OpenID Connect server (oauth2-mock-server) listening on loopback. */
describe(`identity-provider sign-in (${DB_KIND})`, () => {
  let idp: OAuth2Server;
  let t: TestApp;
  let claims: Record<string, unknown> = {};
  const created: UserRow[] = [];
  before(async () => {
    idp = new OAuth2Server();
    await idp.issuer.keys.generate('RS256');
    await idp.start(0, '127.0.0.1');
    idp.service.on('beforeTokenSigning', (token: { payload: Record<string, unknown> }) => Object.assign(token.payload, claims));
    t = await createTestApp({
      env: {
        PUBLIC_BASE_URL: BASE,
        OAUTH_OIDC_ISSUER: idp.issuer.url as string,
        OAUTH_OIDC_CLIENT_ID: 'tsfm-test',
        OAUTH_OIDC_CLIENT_SECRET: 'shh',
        OAUTH_OIDC_NAME: 'acme',
        OAUTH_OIDC_LABEL: 'Acme SSO',
      },
      overrides: { accountCreatedHooks: [async (_trx, user) => void created.push(user)] },
    });
  });
  after(async () => {
    await t.close();
    await idp.stop();
  });

  const cookieOf = (res: { cookies: { name: string; value: string }[] }, name: string) => res.cookies.find((c) => c.name === name)?.value;

  /** The browser's round trip: start → provider (answers at once) → callback. */
  async function signIn(opts: { next?: string; sessionCookie?: string; tamper?: (u: URL) => void; dropStateCookie?: boolean } = {}) {
    const q = new URLSearchParams({ provider: 'acme', ...(opts.next !== undefined ? { next: opts.next } : {}) });
    const start = await t.app.inject({
      method: 'GET',
      url: `/api/auth/oauth/start?${q}`,
      headers: opts.sessionCookie ? { cookie: `tsfm_session=${opts.sessionCookie}` } : {},
    });
    assert.equal(start.statusCode, 302, start.body);
    const to = new URL(start.headers.location as string);
    assert.equal(to.origin, new URL(idp.issuer.url as string).origin);
    assert.equal(to.searchParams.get('code_challenge_method'), 'S256');
    assert.ok(to.searchParams.get('state'));
    const stateCookie = cookieOf(start, 'tsfm_oauth_state');
    assert.equal(stateCookie, to.searchParams.get('state'));
    const atIdp = await fetch(to, { redirect: 'manual' });
    assert.equal(atIdp.status, 302);
    const back = new URL(atIdp.headers.get('location') as string);
    assert.equal(back.origin + back.pathname, `${BASE}/api/auth/oauth/callback/acme`);
    opts.tamper?.(back);
    const cb = await t.app.inject({
      method: 'GET',
      url: back.pathname + back.search,
      headers: opts.dropStateCookie ? {} : { cookie: `tsfm_oauth_state=${stateCookie}` },
    });
    return {
      cb,
      callbackPath: back.pathname + back.search,
      stateCookie: stateCookie as string,
      location: cb.headers.location as string,
      session: cookieOf(cb, 'tsfm_session'),
    };
  }

  test('a new person: account created (with the account hooks), session started, redirected to next', async () => {
    const email = uniqueEmail('idp-new');
    claims = { sub: `sub-${email}`, email, email_verified: true, name: 'Ida P' };
    const before = created.length;
    const r = await signIn({ next: '/dashboard?tab=keys' });
    assert.equal(r.cb.statusCode, 302);
    assert.equal(r.location, '/dashboard?tab=keys');
    assert.match(r.session ?? '', /^tsfs_/);
    const me = await call(t, 'GET', '/api/account/me', { token: r.session as string });
    assert.equal(me.status, 200);
    assert.equal(me.body.email, email);
    assert.equal(me.body.name, 'Ida P');
    assert.equal(created.length, before + 1, 'accountCreatedHooks ran');
    assert.equal(created.at(-1)?.email, email);
    const ids = await call(t, 'GET', '/api/account/oauth/identities', { token: r.session as string });
    assert.equal(ids.status, 200);
    expectSchema(routeSchema(t, 'GET', '/api/account/oauth/identities'), ids.body);
    assert.deepEqual(
      ids.body.identities.map((i: { provider: string }) => i.provider),
      ['acme'],
    );
    assert.deepEqual(ids.body.providers, [{ name: 'acme', label: 'Acme SSO' }]);
    // Signing in again finds the same account.
    const again = await signIn();
    assert.equal(again.location, DEFAULT_NEXT);
    const me2 = await call(t, 'GET', '/api/account/me', { token: again.session as string });
    assert.equal(me2.body.id, me.body.id);
    assert.equal(created.length, before + 1);
    // The last way to sign in cannot be removed.
    const del = await call(t, 'DELETE', '/api/account/oauth/identities/acme', { token: r.session as string });
    assert.equal(del.status, 409);
    assert.equal(del.body.code, 'conflict');
  });

  test('linking: a verified e-mail of an existing account links to it; unlinking then works (password remains)', async () => {
    const u = await registerUser(t);
    claims = { sub: `sub-${u.email}`, email: u.email.toUpperCase(), email_verified: true };
    const r = await signIn();
    const me = await call(t, 'GET', '/api/account/me', { token: r.session as string });
    assert.equal(me.body.id, u.id);
    const ids = await call(t, 'GET', '/api/account/oauth/identities', { token: u.token });
    assert.equal(ids.body.identities.length, 1);
    const del = await call(t, 'DELETE', '/api/account/oauth/identities/acme', { token: u.token });
    assert.equal(del.status, 200, del.text);
    const del2 = await call(t, 'DELETE', '/api/account/oauth/identities/acme', { token: u.token });
    assert.equal(del2.status, 404);
    const none = await call(t, 'GET', '/api/account/oauth/identities', { token: u.token });
    assert.deepEqual(none.body.identities, []);
  });

  test('#12.2 a provider sign-in is not linked to an account whose e-mail was never verified (squatter)', async () => {
    // Someone registers the victim's address with a password and never confirms it.
    const squatter = await registerUser(t, { verified: false });
    const key = await call(t, 'POST', '/api/account/keys', { token: squatter.token, body: { label: 'squat' } });
    assert.equal(key.status, 200);
    // The real owner signs in with a provider that verified the address.
    claims = { sub: `sub-owner-${squatter.email}`, email: squatter.email, email_verified: true };
    const r = await signIn();
    assert.equal(r.location, '/login?oauth_error=account_not_verified');
    assert.equal(r.session, undefined, 'no session into the squatted account');
    const ids = await call(t, 'GET', '/api/account/oauth/identities', { token: squatter.token });
    assert.deepEqual(ids.body.identities, [], 'nothing linked');
    // Once the address is verified by its owner, the provider links to it.
    const verified = await registerUser(t);
    claims = { sub: `sub-owner-${verified.email}`, email: verified.email, email_verified: true };
    const ok = await signIn();
    const me = await call(t, 'GET', '/api/account/me', { token: ok.session as string });
    assert.equal(me.body.id, verified.id);
  });

  test('an account created by a provider sign-in counts as verified and gets its free credits', async () => {
    const email = uniqueEmail('idp-credits');
    claims = { sub: `sub-${email}`, email, email_verified: true };
    const r = await signIn();
    const me = await call(t, 'GET', '/api/account/me', { token: r.session as string });
    assert.equal(me.body.email_verified, true);
    const bill = await call(t, 'GET', '/api/account/billing', { token: r.session as string });
    assert.equal(bill.body.free_credits.remaining, 80000);
  });

  test('an unverified e-mail neither links nor creates an account', async () => {
    const u = await registerUser(t);
    claims = { sub: `sub-unverified-${u.email}`, email: u.email, email_verified: false };
    const r = await signIn();
    assert.equal(r.location, '/login?oauth_error=email_not_verified');
    assert.equal(r.session, undefined);
    const ids = await call(t, 'GET', '/api/account/oauth/identities', { token: u.token });
    assert.deepEqual(ids.body.identities, []);
  });

  test('a signed-in browser links the provider to its own account, whatever the provider e-mail', async () => {
    const u = await registerUser(t);
    claims = { sub: `sub-link-${u.email}`, email: uniqueEmail('other'), email_verified: true };
    const r = await signIn({ sessionCookie: u.token, next: '/account/settings' });
    assert.equal(r.location, '/account/settings');
    const ids = await call(t, 'GET', '/api/account/oauth/identities', { token: u.token });
    assert.equal(ids.body.identities.length, 1);
  });

  test('error paths: missing state, state from another browser, replayed callback, provider error, unknown provider', async () => {
    claims = { sub: 'sub-errors', email: uniqueEmail('err'), email_verified: true };
    const noState = await signIn({ tamper: (u) => u.searchParams.delete('state') });
    assert.equal(noState.location, '/login?oauth_error=missing_state');
    assert.equal(noState.session, undefined);
    const foreign = await signIn({ dropStateCookie: true });
    assert.equal(foreign.location, '/login?oauth_error=state_mismatch');
    assert.equal(foreign.session, undefined);
    const ok = await signIn();
    assert.ok(ok.session);
    const replay = await t.app.inject({ method: 'GET', url: ok.callbackPath, headers: { cookie: `tsfm_oauth_state=${ok.stateCookie}` } });
    assert.equal(replay.headers.location, '/login?oauth_error=invalid_state');
    const denied = await signIn({
      tamper: (u) => {
        u.searchParams.delete('code');
        u.searchParams.set('error', 'access_denied');
      },
    });
    assert.equal(denied.location, '/login?oauth_error=access_denied');
    const badCode = await signIn({ tamper: (u) => u.searchParams.set('code', 'forged') });
    assert.equal(badCode.location, '/login?oauth_error=provider_error');
    const unknown = await call(t, 'GET', '/api/auth/oauth/start?provider=nope');
    assert.equal(unknown.status, 404);
    const unknownCb = await call(t, 'GET', '/api/auth/oauth/callback/nope?code=x&state=y');
    assert.equal(unknownCb.status, 404);
  });

  test('no open redirect through next', async () => {
    for (const evil of [
      'https://evil.example/x',
      '//evil.example/x',
      '/\\evil.example',
      '\\\\evil.example',
      'javascript:alert(1)',
      '/ok\r\nLocation: https://evil.example',
      'http:/evil.example',
    ]) {
      assert.equal(safeNext(evil, BASE), DEFAULT_NEXT, evil);
    }
    assert.equal(safeNext('/account/usage?x=1#y', BASE), '/account/usage?x=1#y');
    assert.equal(safeNext('/../../etc', BASE), '/etc');
    claims = { sub: 'sub-redirect', email: uniqueEmail('redir'), email_verified: true };
    const r = await signIn({ next: '//evil.example/steal' });
    assert.equal(r.location, DEFAULT_NEXT);
  });

  test('identities routes need a credential', async () => {
    assert.equal((await call(t, 'GET', '/api/account/oauth/identities')).status, 400);
    assert.equal((await call(t, 'GET', '/api/account/oauth/identities', { token: 'tsfs_nope' })).status, 401);
    assert.equal((await call(t, 'DELETE', '/api/account/oauth/identities/acme', { token: 'tsfs_nope' })).status, 401);
  });
});
