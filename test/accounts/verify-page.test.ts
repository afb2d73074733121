import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { call, DB_KIND, registerUser, verificationTokenFor } from '../helpers/app.ts';
import { createListeningApp, type ListeningApp } from '../helpers/listen.ts';

/**
 * The confirmation page posts its form to this site, so its referrer policy must let the browser
 * send a real Origin: under `no-referrer` browsers send `Origin: null`, which the cross-site hook
 * refuses (ADR 0011). The token in its URL must still not reach other sites in a Referer.
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const skipBrowser = existsSync(CHROMIUM) ? false : `Chromium not found at ${CHROMIUM}: the browser test of the confirmation page is skipped`;
if (skipBrowser) console.log(`# ${skipBrowser}`);

describe(`e-mail confirmation page (${DB_KIND})`, () => {
  let t: ListeningApp;
  before(async () => {
    t = await createListeningApp();
  });
  after(() => t.close());

  test('its referrer policy keeps the token to this site without making the form post Origin: null', async () => {
    const r = await call(t, 'GET', '/verify-email?token=tsfv_example');
    assert.equal(r.status, 200);
    assert.match(r.text, /<form method="post"/);
    const header = String(r.headers['referrer-policy']);
    assert.equal(header, 'strict-origin');
    // A <meta name="referrer"> would override the header for the form: none may say no-referrer.
    for (const m of r.text.matchAll(/<meta name="referrer" content="([^"]*)"/g)) assert.notEqual(m[1], 'no-referrer');
    assert.doesNotMatch(r.text, /no-referrer/);
  });

  test('in Chromium, pressing the button confirms the address', { skip: skipBrowser }, async () => {
    const u = await registerUser(t, { verified: false });
    const token = verificationTokenFor(t, u.email);
    const { chromium } = await import('playwright-core');
    const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
    try {
      const page = await browser.newPage();
      const origins: (string | undefined)[] = [];
      page.on('request', (req) => {
        if (req.method() === 'POST') origins.push(req.headers().origin);
      });
      await page.goto(`${t.baseUrl}/verify-email?token=${encodeURIComponent(token)}`);
      const [answer] = await Promise.all([
        page.waitForResponse((res) => res.request().method() === 'POST'),
        page.getByRole('button', { name: 'Confirm my e-mail address' }).click(),
      ]);
      assert.equal(answer.status(), 200, `the form's POST: ${answer.status()} ${await answer.text()}`);
      assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'E-mail address confirmed', await page.content());
      assert.deepEqual(origins, [t.baseUrl], 'the form posted with this site as its Origin');
    } finally {
      await browser.close();
    }
    const me = await call(t, 'GET', '/api/account/me', { token: u.token });
    assert.equal(me.body.email_verified, true);
  });
});
