import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { createEngine } from '../../src/engine/engine.ts';
import { DB_KIND, uniqueEmail, verifyEmail } from '../helpers/app.ts';
import { createListeningApp, type ListeningApp } from '../helpers/listen.ts';

/**
 * The web app in a real browser: Debian's Chromium driven by playwright-core (no browser download).
 * Skipped, with a message, where Chromium is not installed. SCREENSHOTS=1 refreshes the PNGs under
 * docs/screenshots/ (otherwise they go to a temporary folder).
 */
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const skip = existsSync(CHROMIUM) ? false : `Chromium not found at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH): browser tests skipped`;
if (skip) console.log(`# ${skip}`);

const SHOTS = process.env.SCREENSHOTS === '1' ? join(import.meta.dirname, '..', '..', 'docs', 'screenshots') : mkdtempSync(join(tmpdir(), 'tsfm-shots-'));
const ADMIN = uniqueEmail('web-admin');
const PASSWORD = 'correct horse battery';

describe(`web app in Chromium (${DB_KIND})`, { skip }, () => {
  let t: ListeningApp;
  let browser: Browser;

  before(async () => {
    mkdirSync(SHOTS, { recursive: true });
    const engine = createEngine({ poolSize: 1, timeoutMs: 60_000, maxQueue: 64, modelsDir: '/nonexistent', threads: 1 });
    t = await createListeningApp({ env: { ADMIN_EMAILS: ADMIN, AUTH_RATE_LIMIT_PER_MINUTE: '100000' }, overrides: { engine } });
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  /** A fresh browser profile (own cookies) with a page that fails the test on any script error. */
  async function newPage(): Promise<{ ctx: BrowserContext; page: Page; errors: string[] }> {
    const ctx = await browser.newContext({ baseURL: t.baseUrl, viewport: { width: 1100, height: 760 } });
    const page = await ctx.newPage();
    page.setDefaultTimeout(60_000);
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      // Error answers of the API (a visitor's 400 from /api/account/me, a 422 the page explains)
      // are logged by the browser as failed loads; anything else is a fault of the page.
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(m.text());
    });
    page.on('dialog', (d) => void d.accept());
    return { ctx, page, errors };
  }

  const shot = (page: Page, name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`) });

  async function register(page: Page, email: string) {
    await page.goto('/register');
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel(/^Password/).fill(PASSWORD);
    await page.getByLabel(/^Password/).press('Enter');
    await page.waitForURL('**/playground');
    // Free credits (and the administrator role of ADMIN_EMAILS) wait for the mailed confirmation link.
    await page.getByRole('region', { name: 'E-mail confirmation' }).waitFor();
    await verifyEmail(t, email);
    await page.reload();
    await page.getByRole('button', { name: 'Forecast' }).waitFor();
    assert.equal(await page.getByRole('region', { name: 'E-mail confirmation' }).count(), 0);
  }

  test('home and sign-in pages render; a wrong password shows the API error', async () => {
    const { ctx, page, errors } = await newPage();
    await page.goto('/');
    await page.getByRole('heading', { level: 1 }).waitFor();
    assert.match(await page.getByRole('heading', { level: 1 }).innerText(), /Forecasts/);
    await shot(page, 'home');
    await page.goto('/login');
    await page.getByLabel('E-mail').fill('nobody@example.com');
    await page.getByLabel('Password').fill('wrong password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    assert.match(await alert.innerText(), /invalid_credentials/);
    await shot(page, 'login');

    // Keyboard: the first Tab reaches the skip link, which moves focus to the content.
    await page.goto('/');
    await page.getByRole('heading', { level: 1 }).waitFor();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate<string | null>('document.activeElement?.textContent ?? null'), 'Skip to content');
    await page.keyboard.press('Enter');
    assert.equal(await page.evaluate<string | null>('document.activeElement?.id ?? null'), 'main');

    // Narrow screens: no page is wider than the viewport (wide tables scroll inside their box).
    await page.setViewportSize({ width: 380, height: 800 });
    for (const path of ['/', '/login', '/register', '/models', '/playground']) {
      await page.goto(path);
      await page.getByRole('heading', { level: 1 }).waitFor();
      await page.waitForLoadState('networkidle');
      const [scroll, inner] = await page.evaluate<[number, number]>('[document.documentElement.scrollWidth, window.innerWidth]');
      assert.ok(scroll <= inner, `${path} is ${scroll}px wide in a ${inner}px viewport`);
    }
    // Each playground mode's form fits too (a visitor sees the sign-in card; a signed-in user the form).
    await register(page, uniqueEmail('web-narrow'));
    for (const mode of ['Detect anomalies', 'Fill gaps (impute)', 'Cross-validate (backtest)', 'Forecast']) {
      await page.getByRole('radio', { name: mode }).check();
      const [scroll, inner] = await page.evaluate<[number, number]>('[document.documentElement.scrollWidth, window.innerWidth]');
      assert.ok(scroll <= inner, `the ${mode} form is ${scroll}px wide in a ${inner}px viewport`);
    }
    assert.deepEqual(errors, []);
    await ctx.close();
  });

  test('a visitor loads pages without a failed request in the console; the account page asks to sign in', async () => {
    const { ctx, page, errors } = await newPage();
    const failed: string[] = [];
    const asked: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') failed.push(`${page.url()}: ${m.text()}`);
    });
    page.on('request', (r) => {
      if (new URL(r.url()).pathname === '/api/account/me') asked.push(page.url());
    });
    for (const path of ['/', '/models', '/playground', '/account/keys', '/verify-email']) {
      await page.goto(path);
      await page.getByRole('heading', { level: 1 }).waitFor();
      await page.waitForLoadState('networkidle');
    }
    assert.deepEqual(asked, [], 'no session cookie: the app does not ask who is signed in');
    assert.deepEqual(failed, []);
    await page.goto('/account/keys');
    const card = page.locator('main section.card');
    assert.match(await card.innerText(), /^Sign in to see your API keys, usage and billing\./);
    assert.doesNotMatch(await page.locator('main').innerText(), /needs an account/);
    assert.deepEqual(errors, []);
    await ctx.close();
  });

  test('narrow screens: the keys table and the docs tables scroll inside their box, not the page', async () => {
    const { ctx, page, errors } = await newPage();
    await register(page, uniqueEmail('web-narrow-keys'));
    await page.goto('/account/keys');
    await page.getByLabel('Label of a new key').fill('a key with a rather long label for a phone');
    await page.getByRole('button', { name: 'Create a key' }).click();
    await page.getByTestId('secret').waitFor();
    await page.setViewportSize({ width: 375, height: 800 });
    for (const path of ['/account/keys', '/account/usage', '/docs/errors', '/docs/models']) {
      await page.goto(path);
      await page.locator('table').first().waitFor();
      await page.waitForLoadState('networkidle');
      const [scroll, inner] = await page.evaluate<[number, number]>('[document.documentElement.scrollWidth, window.innerWidth]');
      assert.ok(scroll <= inner, `${path} is ${scroll}px wide in a ${inner}px viewport`);
    }
    assert.deepEqual(errors, []);
    await ctx.close();
  });

  test('playground errors: one alert for a reason every model shares, the field named, nothing left from before', async () => {
    const { ctx, page, errors } = await newPage();
    await register(page, uniqueEmail('web-pg-errors'));
    await page.getByLabel('Model', { exact: true }).selectOption('auto-ets');
    await page.getByRole('button', { name: 'Forecast' }).click();
    await page.locator('section.result .uplot[data-drawn="true"]').waitFor();

    // A bad quantile level: the message names the field, and the earlier result is gone.
    await page.getByLabel('Quantile levels').fill('0.1, abc');
    await page.getByRole('button', { name: 'Forecast' }).click();
    await page.getByRole('alert').waitFor();
    assert.equal(await page.getByRole('alert').innerText(), 'Quantile levels, value 2: "abc" is not a number');
    assert.equal(await page.locator('section.result').count(), 0, 'no result of an earlier submit beside the error');

    // Both models refuse the same frequency: said once, not once per model.
    await page.getByLabel('Quantile levels').fill('0.1, 0.9');
    await page.getByLabel('Compare with (optional)').selectOption('theta');
    await page.getByLabel('Frequency').fill('XYZ');
    await page.getByRole('button', { name: 'Forecast' }).click();
    await page.getByRole('alert').filter({ hasText: 'XYZ' }).waitFor();
    assert.equal(await page.getByRole('alert').count(), 1);
    assert.equal(await page.locator('section.result').count(), 0);

    // The next submit's own error replaces it.
    await page.getByLabel(/^Values/).fill('1, 2, x');
    await page.getByRole('button', { name: 'Forecast' }).click();
    await page.getByRole('alert').filter({ hasText: 'Values, value 3' }).waitFor();
    assert.equal(await page.getByRole('alert').count(), 1);
    assert.deepEqual(errors, []);
    await ctx.close();
  });

  test('register → playground forecast with a chart → create key → usage shows the call → revoke', async () => {
    const { ctx, page, errors } = await newPage();
    await register(page, uniqueEmail('web'));

    await page.getByLabel('Model', { exact: true }).selectOption('auto-ets');
    await page.getByLabel('Compare with (optional)').selectOption('theta');
    await page.getByRole('button', { name: 'Forecast' }).click();
    const results = page.locator('section.result');
    await page.locator('section.result .uplot[data-drawn="true"]').nth(1).waitFor();
    assert.equal(await results.count(), 2);
    assert.match(await results.nth(0).innerText(), /auto-ets/);
    assert.match(await results.nth(1).innerText(), /theta/);
    const credits = await results.nth(0).getByTestId('credits').innerText();
    assert.match(credits, /^[1-9]\d* credits?$/);
    const canvas = results.nth(0).locator('canvas');
    const box = await canvas.boundingBox();
    assert.ok(box && box.width > 200 && box.height > 100, 'the chart has a size');
    await results.nth(0).evaluate((el) => el.scrollIntoView({ block: 'start' }));
    await shot(page, 'playground');

    // The ensemble shows its weights.
    await page.getByRole('button', { name: 'Run an ensemble' }).click();
    const weights = page.getByRole('region', { name: 'Ensemble weights' });
    await weights.waitFor();
    assert.match(await weights.innerText(), /%/);

    await page.goto('/account/keys');
    await page.getByLabel('Label of a new key').fill('laptop');
    await page.getByRole('button', { name: 'Create a key' }).click();
    const secret = await page.getByTestId('secret').innerText();
    assert.match(secret, /^tsfm_/);
    await page.getByRole('cell', { name: 'laptop', exact: true }).waitFor();
    await shot(page, 'keys');

    // A call with the new key from outside the browser, then the usage page lists both sources.
    const r = await fetch(`${t.baseUrl}/v1/forecast`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'naive', inputs: [{ target: [1, 2, 3, 4] }], parameters: { prediction_length: 2 } }),
    });
    assert.equal(r.status, 200);
    await page.goto('/account/usage');
    const bySource = page.getByRole('region', { name: 'By source' });
    await bySource.waitFor();
    const sources = await bySource.innerText();
    assert.match(sources, /playground/);
    assert.match(sources, /\bapi\b/);
    const recent = await page.getByRole('region', { name: 'Recent calls' }).innerText();
    assert.match(recent, /auto-ets\s+playground\s+session/);
    assert.match(recent, /naive\s+api\s+api_key/);
    await page.locator('.uplot[data-drawn="true"]').waitFor();
    await shot(page, 'usage');

    await page.goto('/account/keys');
    await page.getByRole('button', { name: 'Revoke laptop' }).click();
    await page.getByRole('cell', { name: 'laptop', exact: true }).waitFor({ state: 'detached' });
    const after = await fetch(`${t.baseUrl}/v1/validate`, { method: 'POST', headers: { authorization: `Bearer ${secret}` } });
    assert.equal(after.status, 401);

    for (const [path, name] of [
      ['/account/billing', 'billing'],
      ['/account/settings', 'settings'],
      ['/account/mcp', 'mcp'],
      ['/models', 'models'],
    ] as const) {
      await page.goto(path);
      await page
        .getByRole('heading', { level: 2 })
        .or(page.getByRole('region', { name: 'Model catalog' }))
        .first()
        .waitFor();
      await page.waitForLoadState('networkidle');
      await shot(page, name);
    }
    assert.match(await page.getByRole('region', { name: 'Model catalog' }).innerText(), /auto-arima/);
    assert.deepEqual(errors, []);
    await ctx.close();
  });

  test('billing: checkout through the local provider turns metered billing on', async () => {
    const { ctx, page, errors } = await newPage();
    await register(page, uniqueEmail('web-billing'));
    await page.goto('/account/billing');
    await page.getByRole('heading', { name: 'Metered billing: off' }).waitFor();
    await page.getByRole('button', { name: 'Turn billing on' }).click();
    await page.getByRole('button', { name: 'Activate billing' }).click();
    await page.waitForURL('**/account/billing');
    await page.getByRole('heading', { name: 'Metered billing: active' }).waitFor();
    await page.getByRole('button', { name: 'Manage billing' }).waitFor();
    assert.deepEqual(errors, []);
    await ctx.close();
  });

  test('CSV upload in long format forecasts each series', async () => {
    const { ctx, page, errors } = await newPage();
    await register(page, uniqueEmail('web-csv'));
    const rows = ['unique_id,ds,y'];
    for (const [id, base] of [
      ['north', 100],
      ['south', 40],
    ] as const) {
      for (let i = 0; i < 24; i++) rows.push(`${id},${2022 + Math.floor(i / 12)}-${String((i % 12) + 1).padStart(2, '0')}-01T00:00:00Z,${base + (i % 12) * 3}`);
    }
    await page.getByLabel('Or upload a CSV').setInputFiles({ name: 'sales.csv', mimeType: 'text/csv', buffer: Buffer.from(rows.join('\n')) });
    // A table with timestamps is read by POST /v1/series/ingest, which detects the monthly frequency.
    await page.getByText('Loaded 2 series from sales.csv: north (24 points), south (24 points); frequency MS').waitFor();
    await page.getByLabel('Model', { exact: true }).selectOption('seasonal-naive');
    await page.getByRole('button', { name: 'Forecast' }).click();
    await page.locator('section.result .uplot[data-drawn="true"]').waitFor();
    await page.getByLabel('Series shown').selectOption({ label: 'south' });
    await page.getByRole('img', { name: /^south — seasonal-naive/ }).waitFor();
    await page.getByText(/Table of the 12 forecast steps/).click();
    assert.match(await page.getByRole('region', { name: 'Forecast of south by seasonal-naive' }).innerText(), /2024-01-01/);
    await page.locator('section.result').evaluate((el) => el.scrollIntoView({ block: 'start' }));
    await shot(page, 'playground-csv');

    // A bad cell: the ingest's answer names the line and the column.
    await page
      .getByLabel('Or upload a CSV')
      .setInputFiles({ name: 'bad.csv', mimeType: 'text/csv', buffer: Buffer.from('ds,y\n2024-01-01,1\n2024-01-02,x\n') });
    await page.getByRole('alert').waitFor();
    assert.match(await page.getByRole('alert').innerText(), /^bad\.csv: line 3, column 'y': 'x' is not a number/);
    assert.deepEqual(errors, []);
    await ctx.close();
  });

  test('a bad series shows the error: not a number (in the page) and too short (from the API)', async () => {
    const { ctx, page, errors } = await newPage();
    await register(page, uniqueEmail('web-bad'));
    await page.getByLabel(/^Values/).fill('1, 2, x');
    await page.getByRole('button', { name: 'Forecast' }).click();
    assert.match(await page.getByRole('alert').innerText(), /value 3: "x" is not a number/);

    await page.getByLabel(/^Values/).fill('5');
    await page.getByLabel('Model', { exact: true }).selectOption('auto-ets');
    await page.getByRole('button', { name: 'Forecast' }).click();
    const alert = page.getByRole('alert');
    await alert.filter({ hasText: 'min_points' }).waitFor();
    assert.match(await alert.innerText(), /inputs\.0\.target: .*needs at least min_points=4/);
    await shot(page, 'playground-error');
    assert.deepEqual(errors, []);
    await ctx.close();
  });

  test('anomaly detection: the example is flagged (forecast and zscore), a short series is refused', async () => {
    const { ctx, page, errors } = await newPage();
    await register(page, uniqueEmail('web-anomalies'));
    await page.getByRole('radio', { name: 'Detect anomalies' }).check();
    // The untouched example series is swapped for one with a spike (step 31: 320) and a dip (step 41: 90).
    assert.match(await page.getByLabel(/^Values/).inputValue(), /\b320\b/);
    await page.getByLabel('Method', { exact: true }).selectOption('forecast');
    await page.getByLabel('Interval level (%)').fill('99');
    await page.getByRole('group', { name: 'What to do' }).scrollIntoViewIfNeeded();
    await shot(page, 'playground-anomalies-form');
    await page.getByRole('button', { name: 'Detect anomalies' }).click();
    const card = page.getByRole('region', { name: 'Anomalies' });
    await card.locator('.uplot[data-drawn="true"]').waitFor();
    assert.match(await card.getByTestId('anomaly-count').innerText(), /^[1-9]\d* flagged$/);
    assert.match(await card.getByTestId('credits').innerText(), /^[1-9]\d* credits?$/);
    const flagged = page.getByRole('region', { name: 'Flagged points' });
    // The spike is listed with its step and month.
    assert.match(await flagged.innerText(), /^31\s+1951-07-01\s+320\b/m);
    // The chart draws the band and a red marker per flagged point (the legend lists both).
    assert.match(await card.locator('.u-legend').innerText(), /anomaly/);
    await card.evaluate((el) => el.scrollIntoView({ block: 'start' }));
    await shot(page, 'playground-anomalies');

    await page.getByLabel('Method', { exact: true }).selectOption('zscore');
    await page.getByLabel(/^Window/).fill('12');
    await page.getByLabel(/^Sensitivity/).fill('3');
    await page.getByRole('button', { name: 'Detect anomalies' }).click();
    await card.getByRole('heading', { name: /zscore, window 12, sensitivity 3/ }).waitFor();
    assert.match(await flagged.innerText(), /\b320\b/);

    // Online mode: only the last 10 points are scored.
    await page.getByLabel(/^Last N points only/).fill('10');
    await page.getByRole('button', { name: 'Detect anomalies' }).click();
    await card.getByText(/flagged of 10 scored points/).waitFor();

    await page.getByLabel(/^Values/).fill('1 2 3 4 5');
    await page.getByRole('button', { name: 'Detect anomalies' }).click();
    await page.getByRole('alert').waitFor();
    assert.match(await page.getByRole('alert').innerText(), /inputs\.0\.target: inputs\[0\] has 5 observed points; anomaly detection needs at least 8/);
    assert.equal(await card.count(), 0, 'the old result is not shown beside the error');
    assert.deepEqual(errors, []);
    await ctx.close();
  });

  test('imputation: the gaps are filled and marked; a series without values is refused', async () => {
    const { ctx, page, errors } = await newPage();
    await register(page, uniqueEmail('web-impute'));
    await page.getByRole('radio', { name: 'Fill gaps (impute)' }).check();
    const air =
      '112 118 132 129 121 135 148 148 136 119 104 118 115 126 141 135 125 149 170 170 158 133 114 140 145 150 178 163 172 178 199 199 184 162 146 166';
    const holed = air.split(' ').map((v, i) => (i === 5 || (i >= 26 && i < 30) ? 'null' : v));
    await page.getByLabel(/^Values/).fill(holed.join(', '));
    await page.getByLabel('Fill method').selectOption('model');
    await page.getByLabel('Model', { exact: true }).selectOption('auto-ets');
    await page.getByRole('button', { name: 'Fill the gaps' }).click();
    const card = page.getByRole('region', { name: 'Imputation' });
    await card.locator('.uplot[data-drawn="true"]').waitFor();
    assert.equal(await card.getByTestId('filled-count').innerText(), '5 points filled');
    const rows = page.getByRole('region', { name: 'Filled points' }).locator('tbody tr');
    assert.equal(await rows.count(), 5);
    const steps = (await rows.allInnerTexts()).map((r) => Number(r.split(/\s+/)[0]));
    assert.deepEqual(steps, [6, 27, 28, 29, 30]);
    for (const r of await rows.allInnerTexts()) {
      const v = Number(r.split(/\s+/)[1]);
      assert.ok(v > 80 && v < 260, `a plausible fill: ${r}`);
    }
    assert.match(await card.locator('.u-legend').innerText(), /filled/);
    await card.evaluate((el) => el.scrollIntoView({ block: 'start' }));
    await shot(page, 'playground-impute');

    // Linear interpolation runs no model: the run of four lies on the line from 150 (step 26) to 199 (step 31).
    await page.getByLabel('Fill method').selectOption('linear');
    await page.getByRole('button', { name: 'Fill the gaps' }).click();
    await card.getByRole('heading', { name: /linear interpolation/ }).waitFor();
    assert.match((await rows.allInnerTexts())[1] ?? '', /^27\s+159\.8$/);

    await page.getByLabel(/^Values/).fill('null, null, NaN');
    await page.getByRole('button', { name: 'Fill the gaps' }).click();
    await page.getByRole('alert').waitFor();
    assert.match(await page.getByRole('alert').innerText(), /without any observed value/);
    assert.deepEqual(errors, []);
    await ctx.close();
  });

  test('cross-validation: models ranked by their backtest metrics; windows that do not fit are refused', async () => {
    const { ctx, page, errors } = await newPage();
    await register(page, uniqueEmail('web-cv'));
    await page.getByRole('radio', { name: 'Cross-validate (backtest)' }).check();
    // The 48-month example series; auto-ets and seasonal-naive are ticked, add theta.
    assert.equal((await page.getByLabel(/^Values/).inputValue()).split(' ').length, 48);
    assert.ok(await page.getByRole('checkbox', { name: 'auto-ets', exact: true }).isChecked());
    await page.getByRole('checkbox', { name: 'theta', exact: true }).check();
    await page.getByLabel('Steps per window').fill('6');
    await page.getByLabel(/^Windows/).fill('3');
    await page.getByRole('button', { name: 'Run the backtest' }).click();
    const metrics = page.getByRole('region', { name: 'Backtest metrics' });
    await metrics.waitFor();
    const rows = await metrics.locator('tbody tr').allInnerTexts();
    assert.equal(rows.length, 3);
    assert.deepEqual(
      rows.map((r) => r.split(/\s+/)[0]),
      ['1', '2', '3'],
    );
    assert.deepEqual(rows.map((r) => r.split(/\s+/)[1]).sort(), ['auto-ets', 'seasonal-naive', 'theta']);
    // Ranked by sMAPE: non-decreasing down the table.
    const smape = rows.map((r) => Number(r.split(/\s+/)[2]));
    assert.deepEqual(
      [...smape].sort((a, b) => a - b),
      smape,
    );
    assert.match(rows[0] ?? '', /80%: \d+%/);
    const card = page.getByRole('region', { name: 'Cross-validation' });
    assert.match(await card.getByTestId('credits').innerText(), /^[1-9]\d* credits?$/);
    await card.locator('.uplot[data-drawn="true"]').waitFor();
    await card.evaluate((el) => el.scrollIntoView({ block: 'start' }));
    await shot(page, 'playground-cv');

    await page.getByLabel(/^Windows/).fill('9');
    await page.getByRole('button', { name: 'Run the backtest' }).click();
    await page.getByRole('alert').waitFor();
    assert.match(await page.getByRole('alert').innerText(), /inputs\[0\] has 48 steps; 9 windows of 6 steps 6 apart need more than/);

    for (const id of ['auto-ets', 'seasonal-naive', 'theta']) await page.getByRole('checkbox', { name: id, exact: true }).uncheck();
    await page.getByRole('button', { name: 'Run the backtest' }).click();
    await page.getByRole('alert').filter({ hasText: 'Pick at least one model' }).waitFor();

    // The backtest is recorded with the playground's usage source, like its forecasts.
    await page.goto('/account/usage');
    const recent = page.getByRole('region', { name: 'Recent calls' });
    await recent.waitFor();
    assert.match(await recent.innerText(), /cross-validation\s+playground\s+session/);
    assert.deepEqual(errors, []);
    await ctx.close();
  });

  test('an administrator finds an account and grants credits; the audit list shows it', async () => {
    const target = uniqueEmail('web-target');
    {
      const { ctx, page } = await newPage();
      await register(page, target);
      await ctx.close();
    }
    const { ctx, page, errors } = await newPage();
    await register(page, ADMIN);
    await page.getByRole('link', { name: 'Admin' }).click();
    await page.getByLabel('E-mail or account id').fill(target.split('@')[0] ?? target);
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('button', { name: 'Select' }).click();
    await page.getByLabel('Credits (negative to remove)').fill('500');
    await page.getByLabel('Reason', { exact: true }).first().fill('support ticket 42');
    await page.getByRole('button', { name: 'Grant' }).click();
    await page.getByText(/Granted 500 credits: balance/).waitFor();
    await page.getByRole('region', { name: 'Adjustments' }).getByText('support ticket 42').waitFor();
    await shot(page, 'admin');
    assert.deepEqual(errors, []);
    await ctx.close();

    // A non-administrator is told the page is not for them.
    const other = await newPage();
    await register(other.page, uniqueEmail('web-user'));
    await other.page.goto('/admin');
    assert.match(await other.page.getByRole('alert').innerText(), /administrator role/);
    await other.ctx.close();
  });
});
