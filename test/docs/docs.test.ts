import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { createEngine } from '../../src/engine/engine.ts';
import { ERROR_CODES, ERROR_HELP } from '../../src/shared/errors.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { createListeningApp, type ListeningApp } from '../helpers/listen.ts';

/** /docs (the reference), /docs/errors and /docs/models: served locally, made from the code's own lists. */
describe('documentation pages over HTTP', () => {
  let t: TestApp;
  before(async () => {
    // The real engine's catalog (no model files needed to list them).
    const engine = createEngine({ poolSize: 1, timeoutMs: 60_000, maxQueue: 8, modelsDir: '/nonexistent', threads: 1 });
    t = await createTestApp({ overrides: { engine } });
  });
  after(() => t.close());

  test('/docs is the reference page: scripts and styles from this site only, under a strict policy', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/docs' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /text\/html/);
    const csp = String(res.headers['content-security-policy']);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.match(csp, /connect-src 'self'/);
    for (const m of res.body.matchAll(/(?:src|href)="([^"]+)"/g)) assert.ok(m[1]?.startsWith('/') || m[1] === 'data:,', `${m[1]} is not local`);
    const bundle = await t.app.inject({ method: 'GET', url: '/docs/assets/swagger-ui-bundle.js' });
    assert.equal(bundle.statusCode, 200);
    assert.ok(bundle.body.length > 100_000);
    const init = await t.app.inject({ method: 'GET', url: '/docs/assets/init.js' });
    assert.match(init.body, /validatorUrl: null/);
    // Nothing else of the package is served.
    assert.equal((await t.app.inject({ method: 'GET', url: '/docs/assets/package.json' })).statusCode, 404);
    assert.notEqual((await t.app.inject({ method: 'GET', url: '/docs/assets/..%2F..%2Fpackage.json' })).statusCode, 200);
  });

  test('/docs/errors lists every code of the closed list with its cause and fix', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/docs/errors' });
    assert.equal(res.statusCode, 200);
    for (const code of ERROR_CODES) {
      assert.match(res.body, new RegExp(`<tr id="${code}">`), `${code} missing`);
      assert.ok(ERROR_HELP[code].cause.length > 20 && ERROR_HELP[code].fix.length > 10, `${code} needs a real cause and fix`);
    }
  });

  test('/docs/models shows every catalog model with the recorded accuracy and speed', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/docs/models' });
    assert.equal(res.statusCode, 200);
    for (const m of t.deps.catalog.list()) assert.ok(res.body.includes(`<code>${m.id}</code>`), `${m.id} missing`);
    // auto-ets's row carries its M3 sMAPE from bench/results/m3-accuracy.json (13.07 when recorded).
    assert.match(res.body, /<code>auto-ets<\/code><\/td><td>statistical<\/td><td>.*?<\/td><td class="n">\d+\.\d\d<\/td>/);
  });

  test('the pages are not API operations (not in /openapi.json)', async () => {
    const doc = JSON.parse((await t.app.inject({ method: 'GET', url: '/openapi.json' })).body);
    assert.ok(!Object.keys(doc.paths).some((p) => p.startsWith('/docs')));
  });
});

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const skip = existsSync(CHROMIUM) ? false : `Chromium not found at ${CHROMIUM}: browser tests of /docs skipped`;
if (skip) console.log(`# ${skip}`);

describe('/docs in Chromium', { skip }, () => {
  let t: ListeningApp;
  let browser: Browser;
  before(async () => {
    t = await createListeningApp();
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  });
  after(async () => {
    await browser?.close();
    await t?.close();
  });

  test('the reference renders the operations, with no script error and no request leaving the machine', async () => {
    const ctx = await browser.newContext({ baseURL: t.baseUrl });
    const page = await ctx.newPage();
    page.setDefaultTimeout(60_000);
    const requests: string[] = [];
    const errors: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.goto('/docs');
    await page.locator('.opblock').first().waitFor();
    const count = await page.locator('.opblock').count();
    const doc = JSON.parse(await (await fetch(`${t.baseUrl}/openapi.json`)).text());
    const operations = Object.values(doc.paths as Record<string, object>).reduce((n, item) => n + Object.keys(item).length, 0);
    assert.equal(count, operations, 'every operation of /openapi.json is listed');
    assert.ok(await page.getByText('/v1/forecast', { exact: true }).first().isVisible());
    await page.goto('/docs/errors');
    await page.locator('#rate_limit_exceeded').waitFor();
    await page.goto('/docs/models');
    await page.locator('table').first().waitFor();
    const outside = requests.filter((u) => !u.startsWith(t.baseUrl) && !u.startsWith('data:'));
    assert.deepEqual(outside, [], 'requests left the machine');
    assert.deepEqual(errors, []);
    await ctx.close();
  });
});
