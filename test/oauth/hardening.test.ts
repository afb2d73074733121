import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CaptchaVerifier } from '../../src/accounts/captcha.ts';
import { DB_KIND, registerUser, type TestUser } from '../helpers/app.ts';
import { createListeningApp, type ListeningApp } from '../helpers/listen.ts';
import { authorizeCode, pkcePair, registerClientAt, returnLink, submitAuthorize, tokenRequest } from './flow.ts';

/** Issues #11 (OAuth part), #12 (5, 8, 9 on the consent form) and #21 (what RFC 7591/8252 allow). */
describe(`OAuth hardening (${DB_KIND})`, () => {
  let t: ListeningApp;
  let u: TestUser;
  before(async () => {
    t = await createListeningApp();
    u = await registerUser(t);
  });
  after(() => t.close());

  const post = (path: string, body: string, headers: Record<string, string>) =>
    fetch(`${t.baseUrl}${path}`, { method: 'POST', headers, body, redirect: 'manual' });

  const expectRfcError = async (r: Response, status: number, error: string) => {
    const text = await r.text();
    assert.equal(r.status, status, text);
    const body = JSON.parse(text) as Record<string, unknown>;
    assert.equal(body.error, error, text);
    assert.equal(typeof body.error_description, 'string');
    assert.equal(r.headers.get('cache-control'), 'no-store');
  };

  test('#11: /oauth/register answers invalid_redirect_uri to "not a url", 415 to a form body', async () => {
    await expectRfcError(
      await post('/oauth/register', JSON.stringify({ client_name: 'x', redirect_uris: ['not a url'] }), { 'content-type': 'application/json' }),
      400,
      'invalid_redirect_uri',
    );
    await expectRfcError(await post('/oauth/register', '{"client_name": ', { 'content-type': 'application/json' }), 400, 'invalid_request');
    await expectRfcError(
      await post('/oauth/register', 'client_name=x&redirect_uris=https://a.example/cb', { 'content-type': 'application/x-www-form-urlencoded' }),
      415,
      'invalid_request',
    );
  });

  test('#11: malformed JSON and constructor/__proto__ keys on /oauth/token and /oauth/revoke are invalid_request', async () => {
    for (const path of ['/oauth/token', '/oauth/revoke']) {
      for (const raw of [
        '{bad',
        '{"__proto__": {"x": 1}, "grant_type": "refresh_token", "token": "t"}',
        '{"constructor": {"prototype": {"x": 1}}, "grant_type": "refresh_token", "token": "t"}',
      ]) {
        await expectRfcError(await post(path, raw, { 'content-type': 'application/json' }), 400, 'invalid_request');
      }
      await expectRfcError(await post(path, '<x/>', { 'content-type': 'application/xml' }), 415, 'invalid_request');
    }
  });

  test('#11: POST /oauth/authorize takes only its form: JSON (even malformed) or XML is a 415 page', async () => {
    for (const [raw, type] of [
      ['{bad', 'application/json'],
      ['{"__proto__": {"x": 1}}', 'application/json'],
      ['<x/>', 'application/xml'],
    ] as const) {
      const r = await post('/oauth/authorize', raw, { 'content-type': type, origin: t.baseUrl });
      assert.equal(r.status, 415, type);
      assert.match(r.headers.get('content-type') ?? '', /text\/html/);
      assert.match(await r.text(), /Unsupported content type/);
    }
  });

  test('#11: a malformed Basic header on /oauth/token is invalid_client, not a 500', async () => {
    for (const basic of ['Basic %%%', `Basic ${Buffer.from('%E0%A4%A:secret').toString('base64')}`, `Basic ${Buffer.from('no-colon').toString('base64')}`]) {
      const r = await post('/oauth/token', 'grant_type=authorization_code&code=x', {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: basic,
      });
      await expectRfcError(r, 401, 'invalid_client');
      assert.match(r.headers.get('www-authenticate') ?? '', /^Basic /);
    }
  });

  test('#12.8: a known client and redirect URI are never redirected to without the user (response_type=token)', async () => {
    const client = await registerClientAt(t.baseUrl, ['https://evil.example/landing']);
    const r = await fetch(
      `${t.baseUrl}/oauth/authorize?${new URLSearchParams({ response_type: 'token', client_id: client.client_id, redirect_uri: 'https://evil.example/landing', state: 's' })}`,
      { redirect: 'manual' },
    );
    assert.equal(r.status, 400);
    assert.equal(r.headers.get('location'), null);
    const back = returnLink(await r.text());
    // The RFC 6749 §4.1.2.1 answer is still there, behind the user's click.
    assert.equal(back?.origin, 'https://evil.example');
    assert.equal(back?.searchParams.get('error'), 'unsupported_response_type');
    assert.equal(back?.searchParams.get('state'), 's');
    // Unknown client: no link at all.
    const unknown = await fetch(`${t.baseUrl}/oauth/authorize?client_id=mcpc_nope&redirect_uri=https%3A%2F%2Fevil.example%2Flanding&response_type=token`, {
      redirect: 'manual',
    });
    assert.equal(unknown.status, 400);
    assert.equal(returnLink(await unknown.text()), null);
  });

  test('#12.8: private-use redirect schemes must be reverse-domain style (RFC 8252 §7.1)', async () => {
    for (const uri of ['ms-word:ofe|u|https://evil.example/x.docx', 'mailto:a@example.com', 'tel:123', 'intent://x', 'vscode:/cb', 'javascript:alert(1)']) {
      const r = await post('/oauth/register', JSON.stringify({ redirect_uris: [uri] }), { 'content-type': 'application/json' });
      await expectRfcError(r, 400, 'invalid_redirect_uri');
    }
    const ok = await registerClientAt(t.baseUrl, ['com.example.app:/oauth/cb', 'cursor://anysphere.cursor-mcp/oauth/callback']);
    assert.deepEqual(ok.redirect_uris, ['com.example.app:/oauth/cb', 'cursor://anysphere.cursor-mcp/oauth/callback']);
  });

  test('#12.8: a client registered under the old rules cannot use a scheme that is now refused', async () => {
    const client = await registerClientAt(t.baseUrl, ['https://ok.example/cb']);
    await t.deps.database.db
      .updateTable('oauth_clients')
      .set({ redirect_uris: JSON.stringify(['ms-word:ofe|u|https://evil.example/x']) })
      .where('id', '=', client.client_id)
      .execute();
    const r = await fetch(
      `${t.baseUrl}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: client.client_id, redirect_uri: 'ms-word:ofe|u|https://evil.example/x', code_challenge: pkcePair().challenge })}`,
      { redirect: 'manual' },
    );
    assert.equal(r.status, 400);
    assert.equal(returnLink(await r.text()), null);
  });

  test('#12.9: the consent form refuses Origin: null and other sites, with or without the cookie', async () => {
    const client = await registerClientAt(t.baseUrl);
    const pk = pkcePair();
    const base = { client_id: client.client_id, redirect_uri: client.redirect_uris[0] as string, code_challenge: pk.challenge, state: 's', action: 'approve' };
    const cookie = `tsfm_session=${u.token}`;
    for (const origin of ['null', 'https://evil.example']) {
      for (const withCookie of [true, false]) {
        const fields = withCookie ? base : { ...base, email: u.email, password: u.password };
        const r = await submitAuthorize(t.baseUrl, fields, withCookie ? { origin, cookie } : { origin });
        assert.equal(r.status, 403, `${origin} cookie=${withCookie}`);
        assert.equal(r.location, null);
      }
    }
    // The cookie alone, with no Origin and no Sec-Fetch-Site: not provably this site's page.
    const r = await fetch(`${t.baseUrl}/oauth/authorize`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
      body: new URLSearchParams(base).toString(),
      redirect: 'manual',
    });
    assert.equal(r.status, 403);
    // A browser on this site (Sec-Fetch-Site without Origin, or the Origin) gets its code.
    const viaFetchMetadata = await fetch(`${t.baseUrl}/oauth/authorize`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, 'sec-fetch-site': 'same-origin' },
      body: new URLSearchParams(base).toString(),
      redirect: 'manual',
    });
    assert.equal(viaFetchMetadata.status, 303, await viaFetchMetadata.text());
    assert.ok(new URL(viaFetchMetadata.headers.get('location') ?? '').searchParams.get('code'));
    const viaOrigin = await submitAuthorize(t.baseUrl, base, { cookie });
    assert.equal(viaOrigin.status, 303, viaOrigin.text);
  });

  test('#12.9: the consent page makes the browser send its Origin (referrer policy same-origin, not no-referrer)', async () => {
    const client = await registerClientAt(t.baseUrl);
    const r = await fetch(
      `${t.baseUrl}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: client.client_id, redirect_uri: client.redirect_uris[0] as string, code_challenge: pkcePair().challenge })}`,
    );
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('referrer-policy'), 'same-origin');
    assert.match(r.headers.get('content-security-policy') ?? '', /form-action 'self'/);
  });

  test('#21: client_name is optional; the consent page names the client by its redirect host', async () => {
    const r = await post('/oauth/register', JSON.stringify({ redirect_uris: ['https://app.example/cb'] }), { 'content-type': 'application/json' });
    assert.equal(r.status, 201);
    const c = (await r.json()) as { client_id: string; client_name?: string };
    assert.equal(c.client_name, undefined);
    const page = await fetch(
      `${t.baseUrl}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: c.client_id, redirect_uri: 'https://app.example/cb', code_challenge: pkcePair().challenge })}`,
    );
    assert.equal(page.status, 200);
    assert.match(await page.text(), /an application at <em>app\.example<\/em>/);
  });

  test('#21: a loopback redirect URI matches on any port (RFC 8252 §7.3), and the code is bound to the port used', async () => {
    const client = await registerClientAt(t.baseUrl, ['http://127.0.0.1/callback', 'http://localhost:9/cb']);
    const pk = pkcePair();
    // Registered without a port, used with one; registered with one, used with another.
    for (const used of ['http://127.0.0.1:53682/callback', 'http://localhost:4321/cb']) {
      const code = await authorizeCode(t.baseUrl, { client_id: client.client_id, redirect_uris: [used] }, u, { challenge: pk.challenge });
      const wrongPort = await tokenRequest(t.baseUrl, {
        grant_type: 'authorization_code',
        client_id: client.client_id,
        code,
        code_verifier: pk.verifier,
        redirect_uri: used.replace(/:(\d+)\//, ':1/'),
      });
      assert.equal(wrongPort.body.error, 'invalid_grant');
    }
    const code = await authorizeCode(t.baseUrl, { client_id: client.client_id, redirect_uris: ['http://127.0.0.1:8123/callback'] }, u, {
      challenge: pk.challenge,
    });
    const ok = await tokenRequest(t.baseUrl, {
      grant_type: 'authorization_code',
      client_id: client.client_id,
      code,
      code_verifier: pk.verifier,
      redirect_uri: 'http://127.0.0.1:8123/callback',
    });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    // Only the port may differ: another path or host is still refused.
    for (const uri of ['http://127.0.0.1:8123/other', 'http://[::1]:8123/callback']) {
      const r = await fetch(
        `${t.baseUrl}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: client.client_id, redirect_uri: uri, code_challenge: pk.challenge })}`,
        { redirect: 'manual' },
      );
      assert.equal(r.status, 400, uri);
    }
  });

  test('#21: offline_access and openid scopes are ignored, not refused; the grant is "mcp"', async () => {
    const client = await registerClientAt(t.baseUrl, ['https://app.example/cb'], { scope: 'mcp offline_access openid' });
    const pk = pkcePair();
    const res = await submitAuthorize(t.baseUrl, {
      client_id: client.client_id,
      redirect_uri: 'https://app.example/cb',
      code_challenge: pk.challenge,
      scope: 'openid mcp offline_access',
      action: 'approve',
      email: u.email,
      password: u.password,
    });
    assert.equal(res.status, 303, res.text);
    const code = new URL(res.location ?? '').searchParams.get('code') ?? '';
    const tok = await tokenRequest(t.baseUrl, {
      grant_type: 'authorization_code',
      client_id: client.client_id,
      code,
      code_verifier: pk.verifier,
      redirect_uri: 'https://app.example/cb',
    });
    assert.equal(tok.status, 200);
    assert.equal(tok.body.scope, 'mcp');
    const refreshed = await tokenRequest(t.baseUrl, {
      grant_type: 'refresh_token',
      client_id: client.client_id,
      refresh_token: tok.body.refresh_token,
      scope: 'mcp offline_access',
    });
    assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
    const unknown = await tokenRequest(t.baseUrl, {
      grant_type: 'refresh_token',
      client_id: client.client_id,
      refresh_token: refreshed.body.refresh_token,
      scope: 'admin',
    });
    assert.equal(unknown.body.error, 'invalid_scope');
  });

  test('#21: protected-resource metadata is served at the root path too', async () => {
    const root = await fetch(`${t.baseUrl}/.well-known/oauth-protected-resource`);
    assert.equal(root.status, 200);
    const at = await (await fetch(`${t.baseUrl}/.well-known/oauth-protected-resource/mcp`)).json();
    assert.deepEqual(await root.json(), at);
    assert.equal(root.headers.get('access-control-allow-origin'), null); // no Origin sent
    const cors = await fetch(`${t.baseUrl}/.well-known/oauth-protected-resource`, { headers: { origin: 'http://inspector.local' } });
    assert.equal(cors.headers.get('access-control-allow-origin'), '*');
  });
});

/** #12.5: the consent page signs in through the login service, and every OAuth POST is limited per address. */
describe(`OAuth consent sign-in and limits (${DB_KIND})`, () => {
  let t: ListeningApp;
  let u: TestUser;
  // A captcha that passes only the answer "human" (what a real widget would post).
  const captcha: CaptchaVerifier = { verify: async (response) => response === 'human' };
  before(async () => {
    t = await createListeningApp({
      env: { AUTH_RATE_LIMIT_PER_MINUTE: '4', CAPTCHA_VERIFIER: 'hcaptcha', CAPTCHA_SECRET: 'x', CAPTCHA_SITE_KEY: 'site-key-1' },
      overrides: { captcha },
    });
    const r = await fetch(`${t.baseUrl}/api/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'consent-user@example.com', password: 'correct horse battery', captcha_response: 'human' }),
    });
    const body = (await r.json()) as { user: { id: string; email: string }; token: string };
    u = { id: body.user.id, email: body.user.email, password: 'correct horse battery', token: body.token };
  });
  after(() => t.close());

  test('the consent form checks the captcha like /api/auth/login, and renders the widget', async () => {
    const client = await registerClientAt(t.baseUrl);
    const pk = pkcePair();
    const base = {
      client_id: client.client_id,
      redirect_uri: client.redirect_uris[0] as string,
      code_challenge: pk.challenge,
      action: 'approve',
      email: u.email,
      password: u.password,
    };
    const page = await fetch(
      `${t.baseUrl}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: client.client_id, redirect_uri: client.redirect_uris[0] as string, code_challenge: pk.challenge })}`,
    );
    const html = await page.text();
    assert.match(html, /class="h-captcha" data-sitekey="site-key-1"/);
    assert.match(page.headers.get('content-security-policy') ?? '', /script-src https:\/\/hcaptcha\.com/);
    const noCaptcha = await submitAuthorize(t.baseUrl, base);
    assert.equal(noCaptcha.status, 400);
    assert.equal(noCaptcha.location, null);
    assert.match(noCaptcha.text, /Captcha verification failed/);
    const withCaptcha = await submitAuthorize(t.baseUrl, { ...base, 'h-captcha-response': 'human' });
    assert.equal(withCaptcha.status, 303, withCaptcha.text);
    assert.ok(new URL(withCaptcha.location ?? '').searchParams.get('code'));
  });

  test('password guesses on the consent page are limited per address and share the sign-in budget', async () => {
    // The test app does not trust proxies, so every request here comes from 127.0.0.1: a fresh
    // budget comes from a fresh app.
    const t2 = await createListeningApp({ env: { AUTH_RATE_LIMIT_PER_MINUTE: '3' } });
    try {
      const v = await registerUser(t2);
      const client = await registerClientAt(t2.baseUrl);
      const base = {
        client_id: client.client_id,
        redirect_uri: client.redirect_uris[0] as string,
        code_challenge: pkcePair().challenge,
        action: 'approve',
        email: v.email,
      };
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) statuses.push((await submitAuthorize(t2.baseUrl, { ...base, password: `wrong-${i}-password` })).status);
      assert.deepEqual(statuses, [401, 401, 401]);
      const fourth = await submitAuthorize(t2.baseUrl, { ...base, password: v.password });
      assert.equal(fourth.status, 429);
      assert.equal(fourth.location, null);
      // The guesses used up the sign-in budget of this address too.
      const loginAttempt = await fetch(`${t2.baseUrl}/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: v.email, password: v.password }),
      });
      assert.equal(loginAttempt.status, 429);
    } finally {
      await t2.close();
    }
  });

  test('/oauth/register, /oauth/token and /oauth/revoke answer 429 too_many_requests past the per-address limit', async () => {
    const t3 = await createListeningApp({ env: { AUTH_RATE_LIMIT_PER_MINUTE: '2' } });
    try {
      for (const [path, body, type] of [
        ['/oauth/register', JSON.stringify({ redirect_uris: ['https://a.example/cb'] }), 'application/json'],
        ['/oauth/token', 'grant_type=refresh_token&client_id=mcpc_x&refresh_token=x', 'application/x-www-form-urlencoded'],
        ['/oauth/revoke', 'token=x&client_id=mcpc_x', 'application/x-www-form-urlencoded'],
      ] as const) {
        const statuses: number[] = [];
        let last: Response | null = null;
        for (let i = 0; i < 3; i++) {
          last = await fetch(`${t3.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': type }, body });
          statuses.push(last.status);
          if (i < 2) await last.text();
        }
        assert.ok(statuses[0] !== 429 && statuses[1] !== 429, `${path} ${statuses}`);
        assert.equal(statuses[2], 429, path);
        const b = (await last?.json()) as { error: string };
        assert.equal(b.error, 'too_many_requests');
        assert.ok(Number(last?.headers.get('retry-after')) >= 1);
      }
    } finally {
      await t3.close();
    }
  });
});
