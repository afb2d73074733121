import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import Stripe from 'stripe';
import { reportPendingUsage } from '../../src/billing/service.ts';
import { call, createTestApp, DB_KIND, registerUser, type TestApp } from '../helpers/app.ts';
import { forecast } from './helpers.ts';

const WEBHOOK_SECRET = 'whsec_test_secret_for_signatures';

/** A loopback stand-in of the few Stripe API calls the provider makes; records what it was sent. */
function stubStripeApi(): Promise<{ server: Server; base: string; requests: { path: string; body: URLSearchParams }[] }> {
  const requests: { path: string; body: URLSearchParams }[] = [];
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0] ?? '';
      requests.push({ path, body: new URLSearchParams(raw) });
      const reply: Record<string, unknown> =
        path === '/v1/customers'
          ? { id: 'cus_stub1', object: 'customer' }
          : path === '/v1/checkout/sessions'
            ? { id: 'cs_stub1', object: 'checkout.session', url: 'https://checkout.stripe.test/c/cs_stub1' }
            : path === '/v1/billing_portal/sessions'
              ? { id: 'bps_stub1', object: 'billing_portal.session', url: 'https://billing.stripe.test/p/bps_stub1' }
              : path === '/v1/billing/meter_events'
                ? { object: 'billing.meter_event', identifier: new URLSearchParams(raw).get('identifier') }
                : { error: { message: `unexpected ${path}` } };
      res.writeHead(reply.error ? 404 : 200, { 'content-type': 'application/json', 'request-id': 'req_stub' });
      res.end(JSON.stringify(reply));
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests })),
  );
}

describe(`Stripe provider: webhooks with signature verification, checkout, portal, metered usage (${DB_KIND})`, () => {
  let t: TestApp;
  let stub: Awaited<ReturnType<typeof stubStripeApi>>;
  const signer = new Stripe('sk_test_signer_only');
  before(async () => {
    stub = await stubStripeApi();
    t = await createTestApp({
      env: {
        FREE_CREDITS: '1',
        PAYMENTS_PROVIDER: 'stripe',
        STRIPE_SECRET_KEY: 'sk_test_123',
        STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
        STRIPE_PRICE_ID: 'price_metered_1',
        STRIPE_API_BASE: stub.base,
      },
      overrides: { backgroundJobs: false },
    });
  });
  after(async () => {
    await t.close();
    stub.server.close();
  });

  const deliver = (event: object, opts: { secret?: string; tamper?: boolean; noSignature?: boolean } = {}) => {
    const payload = JSON.stringify(event);
    const header = signer.webhooks.generateTestHeaderString({ payload, secret: opts.secret ?? WEBHOOK_SECRET });
    const body = opts.tamper ? payload.replace('"livemode":false', '"livemode":true') : payload;
    return t.app.inject({
      method: 'POST',
      url: '/api/billing/webhooks/stripe',
      payload: body,
      headers: { 'content-type': 'application/json', ...(opts.noSignature ? {} : { 'stripe-signature': header }) },
    });
  };
  const event = (id: string, type: string, object: Record<string, unknown>, created = 1) => ({
    id,
    object: 'event',
    type,
    livemode: false,
    created,
    api_version: null,
    data: { object },
  });

  test('checkout and portal sessions go through the SDK with the configured price; the customer is created once', async () => {
    const u = await registerUser(t);
    const s = await call(t, 'POST', '/api/account/billing/payments', { token: u.token, body: { action: 'checkout' } });
    assert.equal(s.status, 200, s.text);
    assert.deepEqual(s.body, { provider: 'stripe', action: 'checkout', session_id: 'cs_stub1', url: 'https://checkout.stripe.test/c/cs_stub1' });
    const created = stub.requests.find((r) => r.path === '/v1/checkout/sessions');
    assert.equal(created?.body.get('line_items[0][price]'), 'price_metered_1');
    assert.equal(created?.body.get('client_reference_id'), u.id);
    assert.equal(created?.body.get('customer'), 'cus_stub1');
    assert.equal(created?.body.get('mode'), 'subscription');
    const portal = await call(t, 'POST', '/api/account/billing/payments', { token: u.token, body: { action: 'portal' } });
    assert.equal(portal.status, 200, portal.text);
    assert.equal(portal.body.url, 'https://billing.stripe.test/p/bps_stub1');
    assert.equal(stub.requests.filter((r) => r.path === '/v1/customers').length, 1);
  });

  test('a correctly signed checkout.session.completed turns billing on; redelivery is a no-op; bad signatures are 400', async () => {
    const u = await registerUser(t);
    const ev = event('evt_checkout_1', 'checkout.session.completed', {
      id: 'cs_1',
      object: 'checkout.session',
      mode: 'subscription',
      customer: 'cus_A',
      subscription: 'sub_A',
      client_reference_id: u.id,
      metadata: {},
    });
    for (const bad of [{ secret: 'whsec_wrong' }, { tamper: true }, { noSignature: true }]) {
      const r = await deliver(ev, bad);
      assert.equal(r.statusCode, 400, JSON.stringify(bad));
      assert.equal(JSON.parse(r.body).code, 'invalid_argument');
    }
    assert.equal((await call(t, 'GET', '/api/account/billing', { token: u.token })).body.billing_active, false);

    const ok = await deliver(ev);
    assert.equal(ok.statusCode, 200, ok.body);
    assert.deepEqual(JSON.parse(ok.body), { received: true, outcome: 'applied' });
    const profile = await call(t, 'GET', '/api/account/billing/payments', { token: u.token });
    assert.equal(profile.body.billing_active, true);
    assert.equal(profile.body.customer_id, 'cus_A');
    assert.equal(profile.body.subscription_id, 'sub_A');
    assert.equal(JSON.parse((await deliver(ev)).body).outcome, 'duplicate');

    // Free credit used, then metered usage: the outbox reports it as a meter event.
    assert.equal((await forecast(t, u.token)).status, 200);
    assert.equal((await forecast(t, u.token)).status, 200);
    assert.equal(await reportPendingUsage(t.deps), 1);
    const meter = stub.requests.filter((r) => r.path === '/v1/billing/meter_events');
    assert.equal(meter.length, 1);
    assert.equal(meter[0]?.body.get('event_name'), 'tsfm_credits');
    assert.equal(meter[0]?.body.get('payload[stripe_customer_id]'), 'cus_A');
    assert.equal(meter[0]?.body.get('payload[value]'), '1');
    assert.equal(await reportPendingUsage(t.deps), 0, 'reported once');

    // Subscription cancelled: found by customer id, billing off, 402 again.
    const del = await deliver(
      event('evt_sub_deleted_1', 'customer.subscription.deleted', { id: 'sub_A', object: 'subscription', customer: 'cus_A', status: 'canceled', metadata: {} }),
    );
    assert.equal(JSON.parse(del.body).outcome, 'applied');
    assert.equal((await call(t, 'GET', '/api/account/billing', { token: u.token })).body.billing_active, false);
    assert.equal((await forecast(t, u.token)).status, 402);
  });

  test('events for unknown customers and uninteresting types are acknowledged and change nothing', async () => {
    const r = await deliver(
      event('evt_unknown_cus', 'customer.subscription.updated', {
        id: 'sub_X',
        object: 'subscription',
        customer: 'cus_nobody',
        status: 'active',
        metadata: {},
      }),
    );
    assert.equal(JSON.parse(r.body).outcome, 'unknown_account');
    const i = await deliver(event('evt_invoice', 'invoice.paid', { id: 'in_1', object: 'invoice' }));
    assert.equal(JSON.parse(i.body).outcome, 'ignored');
  });

  test('#12.4 state changes follow event.created, not delivery order: a late older "active" does not undo a cancellation', async () => {
    const u = await registerUser(t);
    const sub = (status: string) => ({ id: 'sub_O', object: 'subscription', customer: 'cus_O', status, metadata: { user_id: u.id } });
    const active = async () => (await call(t, 'GET', '/api/account/billing', { token: u.token })).body.billing_active as boolean;
    assert.equal(JSON.parse((await deliver(event('evt_o_created', 'customer.subscription.created', sub('active'), 100))).body).outcome, 'applied');
    assert.equal(await active(), true);
    assert.equal(JSON.parse((await deliver(event('evt_o_deleted', 'customer.subscription.deleted', sub('canceled'), 300))).body).outcome, 'applied');
    assert.equal(await active(), false);
    const late = await deliver(event('evt_o_updated', 'customer.subscription.updated', sub('active'), 200));
    assert.equal(late.statusCode, 200);
    assert.equal(JSON.parse(late.body).outcome, 'stale');
    assert.equal(await active(), false, 'the older event did not turn billing back on');
    // A genuinely newer event still applies.
    assert.equal(JSON.parse((await deliver(event('evt_o_again', 'customer.subscription.created', sub('active'), 400))).body).outcome, 'applied');
    assert.equal(await active(), true);
  });

  test('#12.3 usage is reported to the provider it was metered under: local rows are closed, not sent to Stripe nor left pending', async () => {
    const u = await registerUser(t);
    const db = t.deps.database.db;
    const row = (id: string, provider: string, customer: string | null) => ({
      id,
      user_id: u.id,
      provider,
      customer_id: customer,
      usage_event_id: `use_${id}`,
      credits: 3,
      created_at: Date.now(),
      reported_at: null,
      attempts: 0,
      last_error: null,
    });
    await db
      .insertInto('metered_usage_outbox')
      .values([row('mub_local_1', 'local', `local_${u.id}`), row('mub_stripe_1', 'stripe', 'cus_L')])
      .execute();
    const before = stub.requests.filter((r) => r.path === '/v1/billing/meter_events').length;
    assert.equal(await reportPendingUsage(t.deps), 2);
    const sent = stub.requests.filter((r) => r.path === '/v1/billing/meter_events').slice(before);
    assert.deepEqual(
      sent.map((r) => r.body.get('identifier')),
      ['mub_stripe_1'],
      'only the Stripe-metered row went to Stripe',
    );
    const pending = await db.selectFrom('metered_usage_outbox').select('id').where('user_id', '=', u.id).where('reported_at', 'is', null).execute();
    assert.deepEqual(pending, []);
  });

  test('PAYMENTS_PROVIDER=stripe without its keys stops start-up naming the variables', async () => {
    const { loadConfig } = await import('../../src/config.ts');
    assert.throws(() => loadConfig({ PAYMENTS_PROVIDER: 'stripe', STRIPE_SECRET_KEY: 'sk' }), /STRIPE_WEBHOOK_SECRET[\s\S]*STRIPE_PRICE_ID/);
  });
});
