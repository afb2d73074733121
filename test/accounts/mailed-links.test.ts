import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call, createTestApp, DB_KIND, registerUser, type TestApp } from '../helpers/app.ts';

/**
 * Every link the service mails (e-mail confirmation, password reset, invitation) opens a page that
 * exists: followed as its recipient would (a browser GET, no credential), it answers 200 HTML.
 */
describe(`every mailed link opens a page (${DB_KIND})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  test('confirmation, password reset and invitation mails: each link is 200 text/html', async () => {
    const from = t.mailer.sent.length;
    // Confirmation (register), reset (forgot-password), invitation (invites): one mail of each kind.
    const u = await registerUser(t); // its confirmation mail stays in the outbox; invitations need a confirmed address
    assert.equal((await call(t, 'POST', '/api/auth/forgot-password', { body: { email: u.email } })).status, 200);
    assert.equal((await call(t, 'POST', '/api/account/invites', { token: u.token, body: { emails: ['friend@example.com'] } })).status, 200);
    const mails = t.mailer.sent.slice(from);
    const base = t.deps.config.publicBaseUrl;
    const links = mails.flatMap((m) => [...m.text.matchAll(/https?:\/\/\S+/g)].map((x) => ({ subject: m.subject, url: x[0].replace(/[.,)>]+$/, '') })));
    const kinds = ['/verify-email?', '/reset-password?', '/register?ref='];
    for (const kind of kinds)
      assert.ok(
        links.some((l) => l.url.includes(kind)),
        `a mailed link to ${kind} (got ${links.map((l) => l.url).join(', ')})`,
      );
    for (const { subject, url } of links) {
      assert.ok(url.startsWith(base), `${subject}: ${url} points at this service (${base})`);
      const r = await t.app.inject({ method: 'GET', url: url.slice(base.length), headers: { accept: 'text/html' } });
      assert.equal(r.statusCode, 200, `${subject}: GET ${url} → ${r.statusCode}`);
      assert.match(String(r.headers['content-type']), /^text\/html/, `${subject}: ${url}`);
    }
  });
});
