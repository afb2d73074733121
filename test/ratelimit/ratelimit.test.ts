import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createRateLimiter } from '../../src/ratelimit/limiter.ts';
import { call, createTestApp, DB_KIND, registerUser, type TestApp } from '../helpers/app.ts';
import { activateBillingLocally, forecast, ONE_CREDIT } from '../billing/helpers.ts';

/** Redis is used only when TEST_REDIS_URL names one (README, "Tests"): a local Redis is never used silently. */
const REDIS_URL = process.env.TEST_REDIS_URL || null;

function reachable(url: string): Promise<boolean> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const s = new Socket();
    s.setTimeout(500);
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('timeout', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', () => resolve(false));
    s.connect(Number(u.port || 6379), u.hostname);
  });
}

describe(`failed credential checks are limited per address (${DB_KIND})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ env: { AUTH_RATE_LIMIT_PER_MINUTE: '3' } });
  });
  after(() => t.close());

  test('past AUTH_RATE_LIMIT_PER_MINUTE wrong keys a wrong key is 429 with retry-after; a right one still passes; /v1/validate is limited too', async () => {
    const u = await registerUser(t);
    const wrong = `tsfm_${'x'.repeat(43)}`;
    const codes: number[] = [];
    for (let i = 0; i < 5; i++) codes.push((await call(t, 'GET', '/api/account/me', { token: wrong })).status);
    assert.deepEqual(codes, [401, 401, 401, 429, 429]);
    const r = await call(t, 'POST', '/v1/forecast', { token: `tsfs_${'y'.repeat(43)}`, body: {} });
    assert.equal(r.status, 429);
    assert.equal(r.body.code, 'rate_limit_exceeded');
    assert.match(r.body.error, /failed credential checks from this address/);
    assert.ok(Number(r.headers['retry-after']) >= 1);
    assert.equal((await call(t, 'GET', '/api/account/me', { token: u.token })).status, 200, 'the right credential is not locked out');
    const v: number[] = [];
    for (let i = 0; i < 4; i++) v.push((await call(t, 'POST', '/v1/validate', { body: { api_key: wrong } })).status);
    assert.deepEqual(v, [401, 401, 401, 429]);
  });
});

describe(`rate limits (${DB_KIND}, memory)`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ env: { RATE_LIMIT_FREE_PER_MINUTE: '5', RATE_LIMIT_BILLING_PER_MINUTE: '50', AUTH_RATE_LIMIT_PER_MINUTE: '1000' } });
  });
  after(() => t.close());

  test('per account, shared by all its credentials: headers on every limited response, then 429 with retry-after', async () => {
    const u = await registerUser(t);
    const key = await call(t, 'POST', '/api/account/keys', { token: u.token, body: { label: 'k' } }); // 1
    const seen: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await call(t, 'GET', '/api/account/me', { token: i % 2 ? u.token : key.body.key }); // 2..5
      assert.equal(r.status, 200);
      assert.equal(r.headers['x-ratelimit-limit'], '5');
      seen.push(String(r.headers['x-ratelimit-remaining']));
      const reset = Number(r.headers['x-ratelimit-reset']);
      assert.ok(reset > Date.now() / 1000 && reset <= Date.now() / 1000 + 61, `reset ${reset}`);
    }
    assert.deepEqual(seen, ['3', '2', '1', '0']);
    for (const token of [u.token, key.body.key]) {
      const r = await call(t, 'GET', '/api/account/me', { token });
      assert.equal(r.status, 429);
      assert.equal(r.body.code, 'rate_limit_exceeded');
      assert.equal(r.headers['x-ratelimit-remaining'], '0');
      assert.ok(Number(r.headers['retry-after']) >= 1 && Number(r.headers['retry-after']) <= 60);
    }
    // Another account has its own budget.
    const other = await registerUser(t);
    assert.equal((await call(t, 'GET', '/api/account/me', { token: other.token })).status, 200);
  });

  test('a batch counts one request per item; a refused call costs no credits', async () => {
    const u = await registerUser(t);
    const r = await call(t, 'POST', '/v1/forecast/batch', { token: u.token, body: { requests: [ONE_CREDIT, ONE_CREDIT, ONE_CREDIT] } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers['x-ratelimit-remaining'], '2');
    const big = await call(t, 'POST', '/v1/forecast/batch', { token: u.token, body: { requests: [ONE_CREDIT, ONE_CREDIT, ONE_CREDIT] } });
    assert.equal(big.status, 429);
    const events = await t.deps.database.db.selectFrom('usage_events').select('id').where('user_id', '=', u.id).execute();
    assert.equal(events.length, 3);
  });

  test('active billing raises the account limit at once; deps.rateLimiter.consume is the same budget', async () => {
    const u = await registerUser(t);
    await activateBillingLocally(t, u); // 1 request (checkout)
    const r = await forecast(t, u.token);
    assert.equal(r.status, 200);
    assert.equal(r.headers['x-ratelimit-limit'], '50');
    assert.equal(r.headers['x-ratelimit-remaining'], '48');
    const d = await t.deps.rateLimiter.consume(u.id, 10);
    assert.equal(d.allowed, true);
    assert.equal(d.remaining, 38);
    const summary = await call(t, 'GET', '/api/account/billing', { token: u.token });
    assert.equal(summary.body.rate_limit.requests_per_minute, 50);
  });

  test('public routes without a credential are not counted per account', async () => {
    const r = await call(t, 'GET', '/api/models');
    assert.equal(r.headers['x-ratelimit-limit'], undefined);
  });
});

describe(`brute-force limits on login, register, forgot-password (${DB_KIND})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp({ env: { AUTH_RATE_LIMIT_PER_MINUTE: '3' } });
  });
  after(() => t.close());

  test('per client address and route: the 4th attempt in a minute is 429', async () => {
    const u = await registerUser(t); // register #1
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await call(t, 'POST', '/api/auth/login', { body: { email: u.email, password: 'wrong-password' } })).status);
    assert.deepEqual(statuses, [401, 401, 401, 429]);
    const right = await call(t, 'POST', '/api/auth/login', { body: { email: u.email, password: u.password } });
    assert.equal(right.status, 429, 'the right password does not bypass the limit');
    assert.ok(right.headers['retry-after']);
    const fp = await call(t, 'POST', '/api/auth/forgot-password', { body: { email: u.email } });
    assert.equal(fp.status, 200);
    assert.equal(fp.headers['x-ratelimit-limit'], '3');
    assert.equal(fp.headers['x-ratelimit-remaining'], '2');
  });
});

describe('rate limits shared through Redis', { skip: REDIS_URL ? false : 'TEST_REDIS_URL is not set (e.g. TEST_REDIS_URL=redis://127.0.0.1:6379)' }, () => {
  const url = REDIS_URL as string;
  before(async () => {
    // Asked for explicitly, so an unreachable Redis is a failure, not a skip.
    assert.ok(await reachable(url), `TEST_REDIS_URL=${url} does not answer`);
  });

  test('two processes (two limiters) on one Redis share one account budget', async () => {
    const keyPrefix = `tsfm-test-${randomBytes(4).toString('hex')}`;
    const settings = { freePerMinute: 4, billingPerMinute: 100, authPerMinute: 3, redisUrl: url, keyPrefix };
    const a = createRateLimiter(settings, async () => 4);
    const b = createRateLimiter(settings, async () => 4);
    try {
      assert.equal(a.backend, 'redis');
      assert.equal(await a.ready(), true);
      assert.equal(await b.ready(), true);
      const seq = [await a.consume('acct1'), await b.consume('acct1'), await a.consume('acct1', 2), await b.consume('acct1')];
      assert.deepEqual(
        seq.map((d) => [d.allowed, d.remaining]),
        [
          [true, 3],
          [true, 2],
          [true, 0],
          [false, 0],
        ],
      );
      assert.ok(seq[3]!.retryAfter >= 1);
      assert.equal((await a.consume('acct2')).remaining, 3, 'other accounts are separate');
      const auth = [
        await a.consumeAuth('/api/auth/login', '10.0.0.1'),
        await b.consumeAuth('/api/auth/login', '10.0.0.1'),
        await a.consumeAuth('/api/auth/login', '10.0.0.1'),
        await b.consumeAuth('/api/auth/login', '10.0.0.1'),
      ];
      assert.deepEqual(
        auth.map((d) => d.allowed),
        [true, true, true, false],
      );
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('the app with REDIS_URL limits through Redis', async () => {
    const t = await createTestApp({ env: { REDIS_URL: url, RATE_LIMIT_FREE_PER_MINUTE: '3' } });
    try {
      assert.equal(t.deps.rateLimiter.backend, 'redis');
      assert.equal(await t.deps.rateLimiter.ready(), true);
      const u = await registerUser(t);
      const s = [];
      for (let i = 0; i < 4; i++) s.push((await call(t, 'GET', '/api/account/me', { token: u.token })).status);
      assert.deepEqual(s, [200, 200, 200, 429]);
    } finally {
      await t.close();
    }
  });
});
