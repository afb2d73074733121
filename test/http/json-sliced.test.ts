import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { parseJsonSliced } from '../../src/shared/json-sliced.ts';
import { createTestApp, DB_KIND, registerUser, type TestApp } from '../helpers/app.ts';

// Tiny thresholds force every path: large containers walked, runs of items, members one by one.
const tiny = fc.record({ small: fc.integer({ min: 1, max: 24 }), batch: fc.integer({ min: 1, max: 48 }), budgetMs: fc.constant(0) });

test('parseJsonSliced gives what JSON.parse gives, for any JSON text and any slicing', async () => {
  await fc.assert(
    fc.asyncProperty(fc.jsonValue(), fc.integer({ min: 0, max: 2 }), tiny, async (v, indent, opts) => {
      const text = JSON.stringify(v, null, indent);
      assert.deepEqual(await parseJsonSliced(text, opts), JSON.parse(text));
    }),
    { numRuns: 400, seed: 11 },
  );
});

test('parseJsonSliced refuses what JSON.parse refuses (a text with one character dropped or added)', async () => {
  await fc.assert(
    fc.asyncProperty(fc.jsonValue(), fc.nat(), fc.constantFrom('', ',', ']', '}', '[', '{', '"', ':', 'x', ' '), tiny, async (v, at, insert, opts) => {
      const text = JSON.stringify(v);
      const k = at % (text.length + 1);
      const broken = text.slice(0, k) + insert + text.slice(k + (insert === '' ? 1 : 0));
      let native: unknown;
      try {
        native = JSON.parse(broken);
      } catch {
        await assert.rejects(parseJsonSliced(broken, opts), Error, broken);
        return;
      }
      assert.deepEqual(await parseJsonSliced(broken, opts), native);
    }),
    { numRuns: 600, seed: 12 },
  );
});

test('deep nesting of large containers is handed to the native parser instead of being rescanned level by level', async () => {
  const depth = 200_000;
  const text = `${'['.repeat(depth)}1${']'.repeat(depth)}`;
  const t0 = performance.now();
  await assert.rejects(parseJsonSliced(text), /too deep/);
  assert.ok(performance.now() - t0 < 2000, 'not quadratic');
  const wide = `[${Array.from({ length: 20 }, () => `${'['.repeat(12)}${'7,'.repeat(3000)}7${']'.repeat(12)}`).join(',')}]`;
  assert.deepEqual(await parseJsonSliced(wide, { small: 1024, batch: 4096 }), JSON.parse(wide));
});

test('a large body is parsed in several turns of the event loop', async () => {
  const body = JSON.stringify({ model: 'naive', inputs: [{ target: Array.from({ length: 20_000 }, (_, t) => [t, t / 3, null]) }] });
  let turns = 0;
  const tick = setInterval(() => turns++, 0);
  const v = await parseJsonSliced(body, { budgetMs: 0 });
  clearInterval(tick);
  assert.deepEqual(v, JSON.parse(body));
  assert.ok(turns > 3, `${turns} turns`);
});

describe(`large request bodies over HTTP (${DB_KIND})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  test('a large body (sliced parser) answers as a small one: valid, malformed, with a __proto__ key', async () => {
    const u = await registerUser(t);
    const big = {
      model: 'echo-last',
      inputs: [{ target: Array.from({ length: 90_000 }, (_, i) => [i % 13, i % 5 === 0 ? null : 1.5]) }],
      parameters: { prediction_length: 3 },
    };
    const text = JSON.stringify(big);
    assert.ok(text.length > 512 * 1024);
    const send = (payload: string) =>
      t.app.inject({ method: 'POST', url: '/v1/forecast', payload, headers: { 'content-type': 'application/json', authorization: `Bearer ${u.token}` } });
    const ok = await send(text);
    assert.equal(ok.statusCode, 200, ok.body.slice(0, 300));
    assert.equal(JSON.parse(ok.body).input_points, 1800);
    const smallBroken = await send('{"model": "echo-last", "inputs": [}');
    const bigBroken = await send(`${text.slice(0, -1)},}`);
    assert.equal(bigBroken.statusCode, smallBroken.statusCode);
    assert.equal(JSON.parse(bigBroken.body).detail[0].type, JSON.parse(smallBroken.body).detail[0].type);
    const smallProto = await send('{"model": "echo-last", "inputs": [{"target": [1, 2]}], "__proto__": {"x": 1}}');
    const bigProto = await send(`${text.slice(0, -1)},"__proto__":{"x":1}}`);
    assert.equal(bigProto.statusCode, smallProto.statusCode);
    assert.notEqual(bigProto.statusCode, 500);
  });
});
