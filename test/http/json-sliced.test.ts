import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import sjson from 'secure-json-parse';
import { ForbiddenPrototype, parseJsonSliced } from '../../src/shared/json-sliced.ts';
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

/** Every object in a parsed JSON value. */
function objectsIn(v: unknown, out: Record<string, unknown>[] = []): Record<string, unknown>[] {
  if (v !== null && typeof v === 'object') {
    if (!Array.isArray(v)) out.push(v as Record<string, unknown>);
    for (const x of Object.values(v)) objectsIn(x, out);
  }
  return out;
}

const SAFE = { protoAction: 'error', constructorAction: 'error' } as const;

test('with forbidPrototype, parseJsonSliced refuses what the safe parser (secure-json-parse) refuses, however the key is escaped', async () => {
  const member = fc.tuple(
    fc.nat(),
    fc.constantFrom('__proto__', 'constructor', 'prototype', 'a'),
    fc.oneof(fc.jsonValue(), fc.constantFrom({ prototype: 1 }, { prototype: { a: [1] } }, { a: { prototype: 2 } }, [{ prototype: 1 }])),
  );
  await fc.assert(
    fc.asyncProperty(fc.jsonValue(), fc.array(member, { maxLength: 3 }), fc.boolean(), tiny, async (base, members, escaped, opts) => {
      const root = { v: base };
      const objects = objectsIn(root);
      for (const [at, key, value] of members) {
        Object.defineProperty(objects[at % objects.length], key, { value, enumerable: true, writable: true, configurable: true });
      }
      let text = JSON.stringify(root);
      if (escaped) text = text.replaceAll('"__proto__":', '"\\u005f_proto__":').replaceAll('"constructor":', '"constr\\u0075ctor":');
      let safe: unknown;
      try {
        safe = sjson.parse(text, SAFE);
      } catch (e) {
        assert.match(String(e), /forbidden prototype/);
        await assert.rejects(parseJsonSliced(text, { ...opts, forbidPrototype: true }), ForbiddenPrototype, text);
        return;
      }
      assert.deepEqual(await parseJsonSliced(text, { ...opts, forbidPrototype: true }), safe);
    }),
    { numRuns: 500, seed: 13 },
  );
});

/** A 100,000 × 20 target (5.7 MB, the largest accepted input) with `extra` members added to the body. */
const hostileBody = (extra: string) =>
  `{"model":"naive","inputs":[{"target":${JSON.stringify(Array.from({ length: 100_000 }, (_, t) => Array.from({ length: 20 }, (_, v) => (t + v) % 97)))}}]${extra}}`;

test('bodies with __proto__, constructor or \\u00 escapes are parsed in slices too (event-loop delay far below one JSON.parse)', async () => {
  const cases = [
    ',"__proto__":{"x":1}',
    ',"\\u005f_proto__":{"x":1}',
    ',"metadata":{"constructor":{"prototype":{"a":1}}}',
    ',"metadata":{"constructor":"fine","note":"\\u0041\\u00e9"}',
  ];
  for (const extra of cases) {
    const text = hostileBody(extra);
    let whole = Number.POSITIVE_INFINITY;
    for (let k = 0; k < 3; k++) {
      const t0 = performance.now();
      try {
        sjson.parse(text, SAFE);
      } catch {}
      whole = Math.min(whole, performance.now() - t0);
    }
    const h = monitorEventLoopDelay({ resolution: 1 });
    let turns = 0;
    const tick = setInterval(() => turns++, 0);
    h.enable();
    let sliced: unknown;
    try {
      sliced = await parseJsonSliced(text, { forbidPrototype: true });
    } catch (e) {
      sliced = e;
    }
    h.disable();
    clearInterval(tick);
    let safe: unknown;
    try {
      safe = sjson.parse(text, SAFE);
    } catch (e) {
      safe = e;
    }
    if (safe instanceof Error) assert.ok(sliced instanceof ForbiddenPrototype, extra);
    else assert.deepEqual(sliced, safe, extra);
    // One blocking parse held the loop for `whole` ms; the slices yield every 4 ms. The median delay
    // (the maximum also counts GC pauses and, on a busy machine, time the thread was not running).
    const typical = h.percentile(50) / 1e6;
    const say = `${extra}: event-loop delay median ${typical.toFixed(1)} ms, max ${(h.max / 1e6).toFixed(1)} ms over ${turns} turns; one parse ${whole.toFixed(1)} ms`;
    assert.ok(turns >= 10 && typical < whole / 4, say);
  }
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
    assert.deepEqual(JSON.parse(bigProto.body).detail, JSON.parse(smallProto.body).detail);
    const bigEscaped = await send(`${text.slice(0, -1)},"\\u005f_proto__":{"x":1}}`);
    assert.deepEqual([bigEscaped.statusCode, JSON.parse(bigEscaped.body).detail], [smallProto.statusCode, JSON.parse(smallProto.body).detail]);
    const smallCtor = await send('{"model": "echo-last", "inputs": [{"target": [1, 2], "metadata": {"constructor": {"prototype": 1}}}]}');
    const bigCtor = await send(
      `{"model":"echo-last","inputs":[{"target":${JSON.stringify(big.inputs[0]?.target)},"metadata":{"constructor":{"prototype":1}}}]}`,
    );
    assert.deepEqual([bigCtor.statusCode, JSON.parse(bigCtor.body).detail], [smallCtor.statusCode, JSON.parse(smallCtor.body).detail]);
    // A harmless "constructor" name and \u escapes are accepted, as in a small body.
    const fine = await send(`${text.slice(0, -1).replace('"inputs":[{', '"inputs":[{"metadata":{"constructor":"x","item_id":"\\u0041\\u00e9"},')}}`);
    assert.equal(fine.statusCode, 200, fine.body.slice(0, 300));
    assert.equal(JSON.parse(fine.body).outputs[0].metadata.item_id, 'Aé');
  });
});
