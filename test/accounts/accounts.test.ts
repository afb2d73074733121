import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call, createTestApp, DB_KIND, expectSchema, registerUser, verifyEmail, routeSchema, uniqueEmail, type TestApp } from '../helpers/app.ts';

describe(`accounts (${DB_KIND})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ env: { ADMIN_EMAILS: 'boss@example.com' } });
  });
  after(() => t.close());

  test('register returns a session token, the user, and an HttpOnly cookie; e-mail is normalised', async () => {
    const email = uniqueEmail('Mixed');
    const r = await call(t, 'POST', '/api/auth/register', {
      body: {
        email: `  ${email.toUpperCase()} `,
        password: 'longenough',
        name: 'Ann',
        ref: 'inv_x',
        accepted_free_tier_data_terms: true,
        analytics_distinct_id: 'a1',
      },
    });
    assert.equal(r.status, 200, r.text);
    expectSchema(routeSchema(t, 'POST', '/api/auth/register'), r.body);
    assert.match(r.body.token, /^tsfs_/);
    assert.equal(r.body.user.email, email.toLowerCase());
    assert.equal(r.body.user.role, 'user');
    assert.equal(r.body.user.name, 'Ann');
    assert.ok(!('password_hash' in r.body.user));
    const cookie = String(r.headers['set-cookie']);
    assert.match(cookie, /tsfm_session=tsfs_/);
    assert.match(cookie, /HttpOnly/);
    const row = await t.deps.database.db.selectFrom('users').selectAll().where('id', '=', r.body.user.id).executeTakeFirstOrThrow();
    assert.equal(row.ref, 'inv_x');
    assert.equal(row.accepted_free_tier_data_terms, 1);
    assert.equal(row.analytics_distinct_id, 'a1');
    assert.match(row.password_hash ?? '', /^\$argon2id\$/);
  });

  test('register validation: bad e-mail, short password, missing fields → 422 with loc', async () => {
    const r = await call(t, 'POST', '/api/auth/register', { body: { email: 'nope', password: 'short' } });
    assert.equal(r.status, 422);
    const locs = r.body.detail.map((d: { loc: unknown[] }) => d.loc.join('.'));
    assert.deepEqual(locs.sort(), ['body.email', 'body.password']);
    const missing = await call(t, 'POST', '/api/auth/register', { body: {} });
    assert.equal(missing.status, 422);
    assert.ok(missing.body.detail.every((d: { type: string }) => d.type === 'missing'));
  });

  test('register refuses an e-mail longer than 254 characters or with more than 64 before @ (422); sign-in only looks it up', async () => {
    const cases: [string, RegExp][] = [
      [`${'a'.repeat(300)}@example.com`, /at most 254 characters/],
      [`${'a'.repeat(65)}@example.com`, /before @ has at most 64 characters/],
      [`a@${'b'.repeat(60)}.${'c'.repeat(60)}.${'d'.repeat(60)}.${'e'.repeat(70)}.com`, /at most 254 characters/],
    ];
    for (const [email, msg] of cases) {
      const r = await call(t, 'POST', '/api/auth/register', { body: { email, password: 'long enough password' } });
      assert.equal(r.status, 422, `${email.length}: ${r.text}`);
      expectSchema(routeSchema(t, 'POST', '/api/auth/register', 422), r.body);
      assert.deepEqual(r.body.detail[0].loc, ['body', 'email']);
      assert.match(r.body.detail[0].msg, msg);
    }
    const longest = `${'a'.repeat(64)}@example.com`;
    assert.equal((await call(t, 'POST', '/api/auth/register', { body: { email: longest, password: 'long enough password' } })).status, 200);
    // Sign-in and forgot-password look addresses up (accounts made before the limit keep working).
    const login = await call(t, 'POST', '/api/auth/login', { body: { email: `${'a'.repeat(65)}@example.com`, password: 'long enough password' } });
    assert.equal(login.status, 401, login.text);
  });

  test('a second registration of the same e-mail is 409 conflict', async () => {
    const u = await registerUser(t);
    const r = await call(t, 'POST', '/api/auth/register', { body: { email: u.email.toUpperCase(), password: 'whatever123' } });
    assert.equal(r.status, 409);
    assert.deepEqual(Object.keys(r.body).sort(), ['code', 'error', 'request_id']);
    assert.equal(r.body.code, 'conflict');
  });

  test('two simultaneous registrations of one e-mail give one account and one 409', async () => {
    const email = uniqueEmail('race');
    const [a, b] = await Promise.all([
      call(t, 'POST', '/api/auth/register', { body: { email, password: 'password-a' } }),
      call(t, 'POST', '/api/auth/register', { body: { email, password: 'password-b' } }),
    ]);
    assert.deepEqual([a.status, b.status].sort(), [200, 409]);
    const rows = await t.deps.database.db.selectFrom('users').select('id').where('email', '=', email).execute();
    assert.equal(rows.length, 1);
  });

  test('login: right password gives a new token; wrong password and unknown e-mail both give 401 invalid_credentials', async () => {
    const u = await registerUser(t);
    const ok = await call(t, 'POST', '/api/auth/login', { body: { email: ` ${u.email.toUpperCase()}`, password: u.password } });
    assert.equal(ok.status, 200);
    expectSchema(routeSchema(t, 'POST', '/api/auth/login'), ok.body);
    assert.notEqual(ok.body.token, u.token);
    const wrong = await call(t, 'POST', '/api/auth/login', { body: { email: u.email, password: 'wrong-password' } });
    const unknown = await call(t, 'POST', '/api/auth/login', { body: { email: uniqueEmail('ghost'), password: 'wrong-password' } });
    for (const r of [wrong, unknown]) {
      assert.equal(r.status, 401);
      assert.equal(r.body.code, 'invalid_credentials');
    }
    assert.equal(wrong.body.error, unknown.body.error);
  });

  test('ADMIN_EMAILS accounts get the administrator role once the e-mail is verified', async () => {
    const r = await call(t, 'POST', '/api/auth/register', { body: { email: 'Boss@Example.com', password: 'bosspassword' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.user.role, 'user');
    assert.equal(r.body.user.email_verified, false);
    await verifyEmail(t, 'boss@example.com');
    const me = await call(t, 'GET', '/api/account/me', { token: r.body.token });
    assert.equal(me.body.role, 'admin');
    assert.equal(me.body.email_verified, true);
  });

  test('me: needs a credential; works with a session token and with the cookie', async () => {
    const u = await registerUser(t);
    const none = await call(t, 'GET', '/api/account/me');
    assert.equal(none.status, 400);
    assert.equal(none.body.code, 'missing_credential');
    const bad = await call(t, 'GET', '/api/account/me', { token: 'tsfs_nonsense' });
    assert.equal(bad.status, 401);
    assert.equal(bad.body.code, 'invalid_credential');
    const malformed = await call(t, 'GET', '/api/account/me', { headers: { authorization: 'Basic abc' } });
    assert.equal(malformed.status, 401);
    const me = await call(t, 'GET', '/api/account/me', { token: u.token });
    assert.equal(me.status, 200);
    expectSchema(routeSchema(t, 'GET', '/api/account/me'), me.body);
    assert.equal(me.body.id, u.id);
    const viaCookie = await call(t, 'GET', '/api/account/me', { headers: { cookie: `tsfm_session=${u.token}` } });
    assert.equal(viaCookie.status, 200);
    assert.equal(viaCookie.body.id, u.id);
  });

  test('logout revokes the session token', async () => {
    const u = await registerUser(t);
    const r = await call(t, 'POST', '/api/auth/logout', { token: u.token });
    assert.equal(r.status, 200);
    const after = await call(t, 'GET', '/api/account/me', { token: u.token });
    assert.equal(after.status, 401);
    const again = await call(t, 'POST', '/api/auth/logout');
    assert.equal(again.status, 400);
  });

  test('expired sessions are refused', async () => {
    const u = await registerUser(t);
    await t.deps.database.db
      .updateTable('sessions')
      .set({ expires_at: Date.now() - 1 })
      .where('user_id', '=', u.id)
      .execute();
    const r = await call(t, 'GET', '/api/account/me', { token: u.token });
    assert.equal(r.status, 401);
    assert.equal(r.body.code, 'invalid_credential');
  });

  test('forgot-password always answers 200; the mailed link resets once, expires, and signs out every session', async () => {
    const ghost = await call(t, 'POST', '/api/auth/forgot-password', { body: { email: uniqueEmail('ghost') } });
    assert.equal(ghost.status, 200);
    const u = await registerUser(t);
    const before = t.mailer.sent.length;
    const r = await call(t, 'POST', '/api/auth/forgot-password', { body: { email: u.email } });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, ghost.body);
    const mail = t.mailer.sent.at(-1);
    assert.equal(t.mailer.sent.length, before + 1);
    assert.equal(mail?.to, u.email);
    const token = decodeURIComponent(/token=([^\s]+)/.exec(mail?.text ?? '')?.[1] ?? '');
    assert.match(token, /^tsfr_/);
    const short = await call(t, 'POST', '/api/auth/reset-password', { body: { token, password: 'short' } });
    assert.equal(short.status, 422);
    const reset = await call(t, 'POST', '/api/auth/reset-password', { body: { token, password: 'brand-new-password' } });
    assert.equal(reset.status, 200, reset.text);
    assert.equal((await call(t, 'GET', '/api/account/me', { token: u.token })).status, 401);
    const reuse = await call(t, 'POST', '/api/auth/reset-password', { body: { token, password: 'another-password' } });
    assert.equal(reuse.status, 401);
    assert.equal((await call(t, 'POST', '/api/auth/login', { body: { email: u.email, password: u.password } })).status, 401);
    assert.equal((await call(t, 'POST', '/api/auth/login', { body: { email: u.email, password: 'brand-new-password' } })).status, 200);

    await call(t, 'POST', '/api/auth/forgot-password', { body: { email: u.email } });
    const token2 = decodeURIComponent(/token=([^\s]+)/.exec(t.mailer.sent.at(-1)?.text ?? '')?.[1] ?? '');
    await t.deps.database.db
      .updateTable('password_resets')
      .set({ expires_at: Date.now() - 1 })
      .where('user_id', '=', u.id)
      .execute();
    const expired = await call(t, 'POST', '/api/auth/reset-password', { body: { token: token2, password: 'yet-another-one' } });
    assert.equal(expired.status, 401);
  });

  test('a successful reset ends every other outstanding reset link of the account', async () => {
    const u = await registerUser(t);
    const other = await registerUser(t);
    const tokenOf = (email: string) => decodeURIComponent(/token=([^\s]+)/.exec(t.mailer.sent.filter((m) => m.to === email).at(-1)?.text ?? '')?.[1] ?? '');
    await call(t, 'POST', '/api/auth/forgot-password', { body: { email: u.email } });
    const r1 = tokenOf(u.email);
    await call(t, 'POST', '/api/auth/forgot-password', { body: { email: u.email } });
    const r2 = tokenOf(u.email);
    await call(t, 'POST', '/api/auth/forgot-password', { body: { email: other.email } });
    const theirs = tokenOf(other.email);
    assert.notEqual(r1, r2);
    assert.equal((await call(t, 'POST', '/api/auth/reset-password', { body: { token: r1, password: 'first-new-password' } })).status, 200);
    const second = await call(t, 'POST', '/api/auth/reset-password', { body: { token: r2, password: 'second-new-password' } });
    assert.equal(second.status, 401, second.text);
    assert.equal(second.body.code, 'invalid_credential');
    assert.equal((await call(t, 'POST', '/api/auth/login', { body: { email: u.email, password: 'first-new-password' } })).status, 200);
    // Another account's link is untouched.
    assert.equal((await call(t, 'POST', '/api/auth/reset-password', { body: { token: theirs, password: 'their-new-password' } })).status, 200);
  });

  test('forgot-password mails an account at most PASSWORD_RESET_MAILS_PER_HOUR links an hour, answering the same either way', async () => {
    const limited = await createTestApp({ env: { PASSWORD_RESET_MAILS_PER_HOUR: '3' } });
    try {
      const u = await registerUser(limited);
      const sentTo = () => limited.mailer.sent.filter((m) => m.to === u.email && /reset-password\?token=/.test(m.text)).length;
      const ghost = await call(limited, 'POST', '/api/auth/forgot-password', { body: { email: uniqueEmail('ghost') } });
      for (let i = 0; i < 6; i++) {
        const r = await call(limited, 'POST', '/api/auth/forgot-password', { body: { email: u.email } });
        assert.equal(r.status, 200, r.text);
        assert.deepEqual(r.body, ghost.body, 'over the limit the answer is the same as for any address');
      }
      assert.equal(sentTo(), 3);
      const links = await limited.deps.database.db.selectFrom('password_resets').select('id').where('user_id', '=', u.id).execute();
      assert.equal(links.length, 3, 'no link is stored beyond the limit either');
      // An hour later the account may ask again.
      await limited.deps.database.db
        .updateTable('password_resets')
        .set({ created_at: Date.now() - 3600_001 })
        .where('user_id', '=', u.id)
        .execute();
      await call(limited, 'POST', '/api/auth/forgot-password', { body: { email: u.email } });
      assert.equal(sentTo(), 4);
    } finally {
      await limited.close();
    }
  });

  test('privacy settings: default false, PATCH and POST set it, validation', async () => {
    const u = await registerUser(t);
    const g = await call(t, 'GET', '/api/account/privacy', { token: u.token });
    assert.deepEqual(g.body, { service_improvement_opt_in: false });
    const p = await call(t, 'PATCH', '/api/account/privacy', { token: u.token, body: { service_improvement_opt_in: true } });
    assert.deepEqual(p.body, { service_improvement_opt_in: true });
    assert.deepEqual((await call(t, 'GET', '/api/account/privacy', { token: u.token })).body, { service_improvement_opt_in: true });
    const po = await call(t, 'POST', '/api/account/privacy', { token: u.token, body: { service_improvement_opt_in: false } });
    assert.deepEqual(po.body, { service_improvement_opt_in: false });
    const bad = await call(t, 'PATCH', '/api/account/privacy', { token: u.token, body: { service_improvement_opt_in: 'yes' } });
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.body.detail[0].loc, ['body', 'service_improvement_opt_in']);
    assert.equal((await call(t, 'GET', '/api/account/privacy')).status, 400);
  });

  test('DELETE /api/account/me removes the account and its data; its credentials stop working at once', async () => {
    const u = await registerUser(t);
    const key = await call(t, 'POST', '/api/account/keys', { token: u.token, body: { label: 'k' } });
    const del = await call(t, 'DELETE', '/api/account/me', { token: u.token });
    assert.equal(del.status, 200);
    assert.equal((await call(t, 'GET', '/api/account/me', { token: u.token })).status, 401);
    assert.equal((await call(t, 'POST', '/v1/validate', { body: { api_key: key.body.key } })).status, 401);
    const db = t.deps.database.db;
    for (const table of ['sessions', 'api_keys', 'password_resets'] as const) {
      const rows = await db.selectFrom(table).select('id').where('user_id', '=', u.id).execute();
      assert.equal(rows.length, 0, table);
    }
    assert.equal((await db.selectFrom('users').select('id').where('id', '=', u.id).execute()).length, 0);
  });
});
