import assert from 'node:assert/strict';
import { after, before, describe, mock, test } from 'node:test';
import argon2 from 'argon2';
import { paymentsWarning } from '../../src/billing/providers/index.ts';
import { ConfigError, loadConfig } from '../../src/config.ts';
import {
  call,
  createTestApp,
  DB_KIND,
  expectSchema,
  registerUser,
  routeSchema,
  uniqueEmail,
  verificationTokenFor,
  verifyEmail,
  type TestApp,
} from '../helpers/app.ts';
import { createListeningApp, type ListeningApp } from '../helpers/listen.ts';
import { authorizeCode, pkcePair, registerClientAt, tokenRequest } from '../oauth/flow.ts';
import { forecast } from '../billing/helpers.ts';

/** Issue #12, the account, billing and operator items: each test fails on the code before the fix. */
describe(`accounts you can trust (${DB_KIND})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ env: { ADMIN_EMAILS: ' ops@example.com ,boss@example.com', EMAIL_VERIFICATION_RESENDS_PER_HOUR: '3', INVITES_PER_DAY: '5' } });
  });
  after(() => t.close());

  test('#12.1 ADMIN_EMAILS gives the role only once the e-mail is verified (trimmed, case-folded)', async () => {
    const r = await call(t, 'POST', '/api/auth/register', { body: { email: '  OPS@Example.COM ', password: 'ops password' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.user.email, 'ops@example.com');
    assert.equal(r.body.user.role, 'user', 'no administrator role without proof of the address');
    const grant = await call(t, 'POST', '/api/admin/billing/credits', {
      token: r.body.token,
      body: { target_user_id: r.body.user.id, amount: 1_000_000_000, reason: 'mine' },
    });
    assert.equal(grant.status, 403);
    // Logging in again does not promote an unverified account either.
    const login = await call(t, 'POST', '/api/auth/login', { body: { email: 'Ops@example.com', password: 'ops password' } });
    assert.equal(login.body.user.role, 'user');
    await verifyEmail(t, 'ops@example.com');
    const me = await call(t, 'GET', '/api/account/me', { token: r.body.token });
    assert.equal(me.body.role, 'admin');
    assert.equal(me.body.email_verified, true);
  });

  test('#12.13 free credits come with the verification, once; the mailed link opens a page; the token is single use', async () => {
    const u = await registerUser(t, { verified: false });
    const bill = async () => (await call(t, 'GET', '/api/account/billing', { token: u.token })).body;
    assert.equal((await bill()).free_credits.remaining, 0, 'no credits before verification');
    assert.equal((await forecast(t, u.token)).status, 402);
    const token = verificationTokenFor(t, u.email);
    const mail = t.mailer.sent.findLast((m) => m.to === u.email);
    const link = new URL(/(http\S+verify-email\S+)/.exec(mail?.text ?? '')?.[1] ?? '');
    // The link opens a page (not a 404) that only shows a button: a prefetch does not use the token.
    const page = await t.app.inject({ method: 'GET', url: link.pathname + link.search });
    assert.equal(page.statusCode, 200);
    assert.match(page.headers['content-type'] as string, /text\/html/);
    assert.match(page.body, /<form method="post"/);
    assert.equal((await bill()).free_credits.remaining, 0);
    // The button posts the form.
    const done = await t.app.inject({
      method: 'POST',
      url: '/verify-email',
      payload: new URLSearchParams({ token }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(done.statusCode, 200, done.body);
    assert.match(done.body, /is confirmed/);
    assert.equal((await bill()).free_credits.remaining, 80000);
    assert.equal((await forecast(t, u.token)).status, 200);
    // Used once: again (the README's walk-through run a second time) answers that the address is
    // already confirmed, and grants nothing more.
    const again = await call(t, 'POST', '/api/auth/verify-email', { body: { token } });
    assert.equal(again.status, 200, again.text);
    expectSchema(routeSchema(t, 'POST', '/api/auth/verify-email'), again.body);
    assert.equal(again.body.already_verified, true);
    assert.equal(again.body.user.email_verified, true);
    const replay = await t.app.inject({
      method: 'POST',
      url: '/verify-email',
      payload: `token=${encodeURIComponent(token)}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(replay.statusCode, 200, replay.body);
    assert.match(replay.body, /is already confirmed/);
    // A link that was never mailed is still refused.
    const unknown = await call(t, 'POST', '/api/auth/verify-email', { body: { token: `${token}x` } });
    assert.equal(unknown.status, 401);
    assert.match(unknown.body.error, /invalid, used or expired/);
    const granted = await t.deps.database.db.selectFrom('credit_ledger').select('amount').where('user_id', '=', u.id).where('kind', '=', 'grant').execute();
    assert.equal(granted.length, 1);
    // The secret is stored hashed only.
    const rows = await t.deps.database.db.selectFrom('email_verifications').select('token_hash').where('user_id', '=', u.id).execute();
    assert.ok(rows.every((r) => r.token_hash !== token && /^[0-9a-f]{64}$/.test(r.token_hash)));
  });

  test('confirming an address already confirmed says so (200, already_verified), with a used or an unused link', async () => {
    const u = await registerUser(t, { verified: false });
    const first = verificationTokenFor(t, u.email);
    assert.equal((await call(t, 'POST', '/api/auth/verify-email/resend', { token: u.token })).status, 200);
    const second = verificationTokenFor(t, u.email);
    assert.notEqual(first, second);
    const ok = await call(t, 'POST', '/api/auth/verify-email', { body: { token: first } });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.already_verified, false);
    for (const token of [second, first]) {
      const r = await call(t, 'POST', '/api/auth/verify-email', { body: { token } });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.already_verified, true);
    }
    // The account's e-mail is no longer the one the link was mailed to: refused as before.
    await t.deps.database.db
      .updateTable('users')
      .set({ email: uniqueEmail('moved') })
      .where('id', '=', u.id)
      .execute();
    const moved = await call(t, 'POST', '/api/auth/verify-email', { body: { token: first } });
    assert.equal(moved.status, 401, moved.text);
  });

  test('#12.13 resend: limited per hour, refused once verified; an expired link does not verify', async () => {
    const u = await registerUser(t, { verified: false });
    // One link was mailed at register; the limit is 3 an hour.
    for (let i = 0; i < 2; i++) assert.equal((await call(t, 'POST', '/api/auth/verify-email/resend', { token: u.token })).status, 200);
    const limited = await call(t, 'POST', '/api/auth/verify-email/resend', { token: u.token });
    assert.equal(limited.status, 429);
    assert.equal(limited.body.code, 'rate_limit_exceeded');
    await t.deps.database.db
      .updateTable('email_verifications')
      .set({ expires_at: Date.now() - 1 })
      .where('user_id', '=', u.id)
      .execute();
    const expired = await call(t, 'POST', '/api/auth/verify-email', { body: { token: verificationTokenFor(t, u.email) } });
    assert.equal(expired.status, 401);
    await t.deps.database.db
      .updateTable('email_verifications')
      .set({ created_at: Date.now() - 7200_000 })
      .where('user_id', '=', u.id)
      .execute();
    assert.equal((await call(t, 'POST', '/api/auth/verify-email/resend', { token: u.token })).status, 200);
    await verifyEmail(t, u.email);
    const done = await call(t, 'POST', '/api/auth/verify-email/resend', { token: u.token });
    assert.equal(done.status, 409);
  });

  test('#12.13 invites: only from a verified address, at most INVITES_PER_DAY per account', async () => {
    const unverified = await registerUser(t, { verified: false });
    const refused = await call(t, 'POST', '/api/account/invites', { token: unverified.token, body: { emails: [uniqueEmail('inv')] } });
    assert.equal(refused.status, 403);
    const u = await registerUser(t);
    const three = Array.from({ length: 3 }, () => uniqueEmail('inv'));
    assert.equal((await call(t, 'POST', '/api/account/invites', { token: u.token, body: { emails: three } })).status, 200);
    const over = await call(t, 'POST', '/api/account/invites', {
      token: u.token,
      body: { emails: [uniqueEmail('inv'), uniqueEmail('inv'), uniqueEmail('inv')] },
    });
    assert.equal(over.status, 429);
    assert.match(over.body.error, /5 invitations per account in 24 hours; 2 left/);
    assert.equal((await call(t, 'POST', '/api/account/invites', { token: u.token, body: { emails: [uniqueEmail('inv'), uniqueEmail('inv')] } })).status, 200);
  });

  test('#12.7 "sign out everywhere" revokes sessions; DELETE /api/account/keys revokes every key', async () => {
    const u = await registerUser(t);
    const other = await call(t, 'POST', '/api/auth/login', { body: { email: u.email, password: u.password } });
    // Revoking keys needs a session or a key with scope keys:write (least privilege, ADR 0016).
    const k1 = await call(t, 'POST', '/api/account/keys', { token: u.token, body: { label: 'a', scopes: ['forecast', 'keys:write'] } });
    const k2 = await call(t, 'POST', '/api/account/keys', { token: u.token, body: { label: 'b' } });
    const out = await call(t, 'POST', '/api/auth/sign-out-everywhere', { token: u.token });
    assert.equal(out.status, 200, out.text);
    assert.equal((await call(t, 'GET', '/api/account/me', { token: u.token })).status, 401);
    assert.equal((await call(t, 'GET', '/api/account/me', { token: other.body.token })).status, 401);
    // API keys survive (documented), until revoked all at once.
    assert.equal((await call(t, 'GET', '/api/account/me', { token: k1.body.key })).status, 200);
    assert.equal((await call(t, 'DELETE', '/api/account/keys', { token: k2.body.key })).status, 403, 'a default key may not');
    const all = await call(t, 'DELETE', '/api/account/keys', { token: k1.body.key });
    assert.equal(all.status, 200, all.text);
    assert.equal(all.body.revoked, 2);
    assert.equal((await call(t, 'POST', '/v1/validate', { body: { api_key: k2.body.key } })).status, 401);
  });

  test('#12.11 reset-password checks the token before hashing the password', async () => {
    const hash = mock.method(argon2, 'hash');
    try {
      const r = await call(t, 'POST', '/api/auth/reset-password', { body: { token: 'tsfr_made-up-token', password: 'a new password' } });
      assert.equal(r.status, 401);
      assert.equal(hash.mock.callCount(), 0, 'no argon2 run for a made-up token');
    } finally {
      hash.mock.restore();
    }
  });

  test('#12.7 a password reset of an unverified (possibly squatted) account revokes its keys and verifies the address', async () => {
    const u = await registerUser(t, { verified: false });
    const key = await call(t, 'POST', '/api/account/keys', { token: u.token, body: { label: 'squat' } });
    assert.equal((await call(t, 'POST', '/api/auth/forgot-password', { body: { email: u.email } })).status, 200);
    const mail = t.mailer.sent.findLast((m) => m.to === u.email && /reset-password\?token=/.test(m.text));
    const token = decodeURIComponent(/reset-password\?token=(\S+)/.exec(mail?.text ?? '')?.[1] ?? '');
    assert.equal((await call(t, 'POST', '/api/auth/reset-password', { body: { token, password: 'owner password' } })).status, 200);
    assert.equal((await call(t, 'POST', '/v1/validate', { body: { api_key: key.body.key } })).status, 401);
    const login = await call(t, 'POST', '/api/auth/login', { body: { email: u.email, password: 'owner password' } });
    assert.equal(login.body.user.email_verified, true);
  });

  test('#12.12 admin idempotency keys are scoped per administrator, and the actor is part of the request hash', async () => {
    const a = await registerUser(t, { email: 'boss@example.com' });
    const target = await registerUser(t);
    // A second administrator (promoted by the operator CLI's way: the role column).
    const b = await registerUser(t);
    await t.deps.database.db.updateTable('users').set({ role: 'admin' }).where('id', '=', b.id).execute();
    const body = { target_user_id: target.id, amount: 10, reason: 'promo', idempotency_key: 'same-key' };
    const first = await call(t, 'POST', '/api/admin/billing/credits', { token: a.token, body });
    assert.equal(first.status, 200, first.text);
    const replay = await call(t, 'POST', '/api/admin/billing/credits', { token: a.token, body });
    assert.equal(replay.body.adjustment.id, first.body.adjustment.id);
    const byB = await call(t, 'POST', '/api/admin/billing/credits', { token: b.token, body });
    assert.equal(byB.status, 200, byB.text);
    assert.notEqual(byB.body.adjustment.id, first.body.adjustment.id, "B's key is B's own: a new grant, not A's answer");
    assert.equal(byB.body.adjustment.actor_user_id, b.id);
    assert.equal(byB.body.balance, first.body.balance + 10);
  });

  test('#12.12 the local checkout link secret never reaches the request log', async () => {
    const lines: string[] = [];
    const logged = await createTestApp({
      env: { LOG_LEVEL: 'info' },
      overrides: { logger: undefined, logStream: { write: (l: string) => void lines.push(l) } },
    });
    try {
      const u = await registerUser(logged);
      const s = await call(logged, 'POST', '/api/account/billing/payments', { token: u.token, body: { action: 'checkout' } });
      const url = new URL(s.body.url);
      const secret = decodeURIComponent(url.pathname.split('/').at(-1) ?? '');
      assert.match(secret, /^tsfb_/);
      assert.equal((await logged.app.inject({ method: 'GET', url: url.pathname })).statusCode, 200);
      const confirm = await logged.app.inject({
        method: 'POST',
        url: url.pathname,
        payload: 'decision=confirm',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      assert.equal(confirm.statusCode, 303);
      assert.ok(lines.length > 0, 'requests were logged');
      assert.ok(
        lines.some((l) => l.includes('/api/billing/local/checkout/:token')),
        'the route is still recognisable',
      );
      assert.ok(!lines.some((l) => l.includes(secret) || l.includes(encodeURIComponent(secret))), 'the secret is not in the log');
    } finally {
      await logged.close();
    }
  });
});

describe(`per-address limits and proxies (${DB_KIND})`, () => {
  test('#12.10 TRUST_PROXY=1: a client cannot dodge the login limit by rotating X-Forwarded-For', async () => {
    const t = await createTestApp({ env: { TRUST_PROXY: '1', AUTH_RATE_LIMIT_PER_MINUTE: '3' } });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        const r = await call(t, 'POST', '/api/auth/login', {
          body: { email: 'x@example.com', password: 'wrong password' },
          headers: { 'x-forwarded-for': `203.0.113.${i}, 198.51.100.7` },
        });
        statuses.push(r.status);
      }
      assert.deepEqual(statuses, [401, 401, 401, 429, 429]);
    } finally {
      await t.close();
    }
  });

  test('#12.10 TRUST_PROXY takes a hop count or a list of proxies; nonsense stops start-up', () => {
    assert.equal(loadConfig({ TRUST_PROXY: '2' }).trustProxy, 2);
    assert.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, 1);
    assert.equal(loadConfig({}).trustProxy, false);
    assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.1, 192.168.0.0/16,::1' }).trustProxy, ['10.0.0.1', '192.168.0.0/16', '::1']);
    assert.throws(() => loadConfig({ TRUST_PROXY: 'everyone' }), /TRUST_PROXY/);
    assert.throws(() => loadConfig({ TRUST_PROXY: '10.0.0.300' }), /TRUST_PROXY/);
  });

  test('#12.11 #12.13 reset-password, contact, invites and sign-in start are limited per client address', async () => {
    const t = await createTestApp({ env: { AUTH_RATE_LIMIT_PER_MINUTE: '2', OAUTH_GITHUB_CLIENT_ID: 'id', OAUTH_GITHUB_CLIENT_SECRET: 'secret' } });
    try {
      const u = await registerUser(t);
      const third = async (send: () => Promise<number>) => {
        const got = [await send(), await send(), await send()];
        return got[2];
      };
      assert.equal(
        await third(async () => (await call(t, 'POST', '/api/auth/reset-password', { body: { token: 'tsfr_nope', password: 'whatever password' } })).status),
        429,
      );
      assert.equal(await third(async () => (await call(t, 'POST', '/api/contact', { body: { name: 'n', email: 'a@b.co', message: 'hi' } })).status), 429);
      assert.equal(
        await third(async () => (await call(t, 'POST', '/api/account/invites', { token: u.token, body: { emails: [uniqueEmail('i')] } })).status),
        429,
      );
      assert.equal(await third(async () => (await t.app.inject({ method: 'GET', url: '/api/auth/oauth/start?provider=github' })).statusCode), 429);
    } finally {
      await t.close();
    }
  });
});

describe(`payments provider off by default (${DB_KIND})`, () => {
  test('#12.3 no provider unless configured: checkout is refused; local is development only', async () => {
    const t = await createTestApp({ env: { PAYMENTS_PROVIDER: '' } });
    try {
      assert.equal(t.deps.config.billing.provider, 'none');
      const u = await registerUser(t);
      const s = await call(t, 'POST', '/api/account/billing/payments', { token: u.token, body: { action: 'checkout' } });
      assert.equal(s.status, 409);
      assert.match(s.body.error, /no payments provider/);
      assert.equal((await call(t, 'GET', '/api/account/billing/payments', { token: u.token })).body.provider, 'none');
    } finally {
      await t.close();
    }
    assert.throws(
      () => loadConfig({ PAYMENTS_PROVIDER: 'local', PUBLIC_BASE_URL: 'https://forecast.example.com' }),
      (e: unknown) => e instanceof ConfigError && /PAYMENTS_LOCAL_ALLOW_HTTPS/.test(e.message),
    );
    const forced = loadConfig({ PAYMENTS_PROVIDER: 'local', PUBLIC_BASE_URL: 'https://forecast.example.com', PAYMENTS_LOCAL_ALLOW_HTTPS: 'true' });
    assert.equal(forced.billing.provider, 'local');
    assert.match(paymentsWarning(forced) ?? '', /development mode/);
    assert.equal(paymentsWarning(loadConfig({})), null);
  });

  test('#12.13 FREE_CREDITS_ON=register grants at register (the old behaviour, by choice)', async () => {
    const t = await createTestApp({ env: { FREE_CREDITS_ON: 'register' } });
    try {
      const u = await registerUser(t, { verified: false });
      assert.equal((await call(t, 'GET', '/api/account/billing', { token: u.token })).body.free_credits.remaining, 80000);
      await verifyEmail(t, u.email);
      assert.equal((await call(t, 'GET', '/api/account/billing', { token: u.token })).body.free_credits.remaining, 80000, 'not twice');
    } finally {
      await t.close();
    }
  });
});

describe(`password reset and OAuth grants (${DB_KIND})`, () => {
  let t: ListeningApp;
  before(async () => {
    t = await createListeningApp();
  });
  after(() => t.close());

  const oauthTokens = async (user: { email: string; password: string }) => {
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
    return { client, access: r.body.access_token as string, refresh: r.body.refresh_token as string };
  };
  const mcpStatus = async (token: string) =>
    (
      await fetch(`${t.baseUrl}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      })
    ).status;

  test('#12.7 a password reset revokes sessions and OAuth access and refresh tokens; API keys stay (documented)', async () => {
    const u = await registerUser(t);
    const { client, access, refresh } = await oauthTokens(u);
    assert.equal(await mcpStatus(access), 200);
    const key = await call(t, 'POST', '/api/account/keys', { token: u.token, body: { label: 'k' } });
    await call(t, 'POST', '/api/auth/forgot-password', { body: { email: u.email } });
    const mail = t.mailer.sent.findLast((m) => m.to === u.email && /reset-password\?token=/.test(m.text));
    const token = decodeURIComponent(/reset-password\?token=(\S+)/.exec(mail?.text ?? '')?.[1] ?? '');
    assert.equal((await call(t, 'POST', '/api/auth/reset-password', { body: { token, password: 'brand new password' } })).status, 200);
    assert.equal(await mcpStatus(access), 401, 'OAuth access token revoked');
    const refreshed = await tokenRequest(t.baseUrl, { grant_type: 'refresh_token', client_id: client.client_id, refresh_token: refresh });
    assert.equal(refreshed.status, 400, 'refresh token revoked');
    assert.equal((await call(t, 'GET', '/api/account/me', { token: u.token })).status, 401, 'session revoked');
    assert.equal((await call(t, 'GET', '/api/account/me', { token: key.body.key })).status, 200, 'API keys survive a reset of a verified account');
  });

  test('#12.7 sign out everywhere revokes OAuth grants too', async () => {
    const u = await registerUser(t);
    const { access } = await oauthTokens(u);
    assert.equal((await call(t, 'POST', '/api/auth/sign-out-everywhere', { token: u.token })).status, 200);
    assert.equal(await mcpStatus(access), 401);
  });
});
