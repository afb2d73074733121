import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { call, createTestApp, DB_KIND, expectSchema, registerUser, routeSchema, type TestApp } from '../helpers/app.ts';

describe(`contact form and invitations (${DB_KIND})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  test('contact: stores the message and answers ContactResponse', async () => {
    const r = await call(t, 'POST', '/api/contact', {
      body: { name: 'Ann', email: 'Ann@Example.com', message: 'Hello', company: 'ACME', topic: 'sales', source: 'web' },
    });
    assert.equal(r.status, 200, r.text);
    expectSchema(routeSchema(t, 'POST', '/api/contact'), r.body);
    assert.equal(r.body.status, 'received');
    const row = await t.deps.database.db.selectFrom('contact_messages').selectAll().where('id', '=', r.body.id).executeTakeFirstOrThrow();
    assert.equal(row.email, 'ann@example.com');
    assert.equal(row.company, 'ACME');
  });

  test('contact: the spec field limits', async () => {
    const base = { name: 'Ann', email: 'ann@example.com', message: 'Hi' };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...base, name: '' }, 'name'],
      [{ ...base, name: 'n'.repeat(121) }, 'name'],
      [{ ...base, message: 'm'.repeat(2501) }, 'message'],
      [{ ...base, company: 'c'.repeat(161) }, 'company'],
      [{ ...base, topic: 't'.repeat(161) }, 'topic'],
      [{ ...base, source: 's'.repeat(65) }, 'source'],
      [{ ...base, analytics_distinct_id: 'a'.repeat(201) }, 'analytics_distinct_id'],
      [{ ...base, email: 'not-an-email' }, 'email'],
    ];
    for (const [body, field] of cases) {
      const r = await call(t, 'POST', '/api/contact', { body });
      assert.equal(r.status, 422, field);
      assert.deepEqual(r.body.detail[0].loc, ['body', field]);
    }
    assert.equal((await call(t, 'POST', '/api/contact', { body: { ...base, name: 'n'.repeat(120), message: 'm'.repeat(2500) } })).status, 200);
  });

  test('invites: mails each address a register link carrying a ref; needs a credential', async () => {
    const u = await registerUser(t, { name: 'Inviter' });
    const before = t.mailer.sent.length;
    const r = await call(t, 'POST', '/api/account/invites', { token: u.token, body: { emails: ['a@example.com', 'B@example.com', 'a@example.com'] } });
    assert.equal(r.status, 200, r.text);
    expectSchema(routeSchema(t, 'POST', '/api/account/invites'), r.body);
    assert.equal(r.body.invites.length, 2);
    const mails = t.mailer.sent.slice(before);
    assert.deepEqual(mails.map((m) => m.to).sort(), ['a@example.com', 'b@example.com']);
    for (const inv of r.body.invites) {
      const mail = mails.find((m) => m.to === inv.email);
      assert.ok(mail?.text.includes(`/register?ref=${inv.ref}`));
    }
    assert.equal((await call(t, 'POST', '/api/account/invites', { body: { emails: ['x@example.com'] } })).status, 400);
    const bad = await call(t, 'POST', '/api/account/invites', { token: u.token, body: { emails: ['nope'] } });
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.body.detail[0].loc, ['body', 'emails', 0]);
    assert.equal((await call(t, 'POST', '/api/account/invites', { token: u.token, body: { emails: [] } })).status, 422);
  });
});
