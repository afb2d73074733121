import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import sjson from 'secure-json-parse';
import { ForbiddenPrototype, parseJsonSliced } from '../../src/shared/json-sliced.ts';
import { NumericColumns } from '../../src/shared/numeric-columns.ts';
import { createTestApp, DB_KIND, registerUser, type TestApp } from '../helpers/app.ts';
import { FakeEngine } from '../helpers/fake-engine.ts';

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

test('strings of escaped quotes and backslash runs, long and short, across every slicing boundary', async () => {
  const pieces = ['a"b', 'a\\"b', '\\', '\\\\"', '"', '\\\\\\', 'x'.repeat(40), '"\\"'];
  await fc.assert(
    fc.asyncProperty(fc.array(fc.constantFrom(...pieces), { maxLength: 60 }), fc.integer({ min: 1, max: 64 }), async (parts, small) => {
      const value = { text: parts.join(''), list: parts, nested: [{ s: parts.join('\\') }] };
      const text = JSON.stringify(value);
      assert.deepEqual(await parseJsonSliced(text, { small, batch: small * 2 }), value);
    }),
    { numRuns: 300, seed: 5 },
  );
  const big = { text: `${'ab\\"c'.repeat(300_000)}\\` };
  assert.deepEqual(await parseJsonSliced(JSON.stringify(big)), big);
});

test('with `columns`, a large numeric array under a listed key becomes typed columns; anything else is read as JSON.parse reads it', async () => {
  const columns = { key: 'target', within: 'inputs', maxWidth: 3 };
  // Targets that fit columns (rows of one width, flat numbers, nulls) and targets that do not (ragged, too wide, strings, nested deeper, mixed).
  const cell = fc.oneof(fc.constant(null), fc.integer({ min: -1000, max: 1000 }), fc.double({ noNaN: true, noDefaultInfinity: true }));
  const fits = fc.oneof(
    fc.array(cell, { minLength: 1, maxLength: 40 }),
    fc.integer({ min: 1, max: 3 }).chain((w) => fc.array(fc.array(cell, { minLength: w, maxLength: w }), { minLength: 1, maxLength: 40 })),
  );
  const target = fc.oneof(fits, fc.jsonValue());
  await fc.assert(
    fc.asyncProperty(target, fc.jsonValue(), tiny, async (t, other, opts) => {
      const text = JSON.stringify({ inputs: [{ target: t, other }], target: t });
      const parsed = (await parseJsonSliced(text, { ...opts, columns })) as { inputs: [{ target: unknown }] };
      // The same value as JSON (NumericColumns writes itself back as its rows).
      assert.deepEqual(JSON.parse(JSON.stringify(parsed)), JSON.parse(text));
      const got = parsed.inputs[0].target;
      if (got instanceof NumericColumns) {
        // Only what fits: numbers and nulls, flat or rows of one width within maxWidth.
        const rows = JSON.parse(JSON.stringify(t)) as unknown[];
        const flat = rows.every((x) => !Array.isArray(x));
        assert.equal(got.flat, flat);
        assert.equal(got.length, rows.length);
        assert.ok(got.width >= 1 && got.width <= 3);
        assert.ok(got.columns.every((c) => c.length === rows.length));
      }
    }),
    { numRuns: 400, seed: 13 },
  );
  // With default thresholds, a large one is read into columns; a row that does not fit, anywhere, makes it plain JSON.
  const rows = Array.from({ length: 5000 }, (_, i) => [i, i % 7 === 0 ? null : i / 3]);
  type Body = { inputs: [{ target: unknown; metadata?: { target: unknown } }]; target?: unknown };
  const big = (await parseJsonSliced(JSON.stringify({ inputs: [{ target: rows, metadata: { target: rows } }], target: rows }), { columns })) as Body;
  const cols = big.inputs[0].target as NumericColumns;
  assert.ok(cols instanceof NumericColumns);
  assert.deepEqual(Array.from(cols.columns[0] as Float64Array).slice(0, 3), [0, 1, 2]);
  assert.ok(Number.isNaN((cols.columns[1] as Float64Array)[0] as number));
  // Only inputs[].target: the same array anywhere else stays plain JSON.
  assert.ok(Array.isArray(big.target) && Array.isArray(big.inputs[0].metadata?.target));
  for (const bad of [[1, 2, 3, 4], [1], ['1', 2], [1, [2]], 1]) {
    const text = JSON.stringify({ inputs: [{ target: [...rows.slice(0, 4000), bad, ...rows.slice(4000)] }] });
    assert.deepEqual(await parseJsonSliced(text, { columns }), JSON.parse(text), JSON.stringify(bad));
  }
  // A number JSON.parse reads as Infinity is left to the schema (z.number() refuses it).
  const huge = `{"inputs":[{"target":[${rows.map((r) => JSON.stringify(r)).join(',')},[1e400,1]]}]}`;
  assert.ok(Array.isArray(((await parseJsonSliced(huge, { columns })) as Body).inputs[0].target));
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

/**
 * A 300,000 × 20 target (17 MB, three times the largest accepted input) with `extra` members added to
 * the body: one blocking parse must be long next to a 4 ms slice for the delay comparison to mean
 * anything, and at 5.7 MB a fast machine parses it in 17 ms (median delay 4.5 ms failed `< whole / 4`).
 */
const hostileBody = (extra: string) =>
  `{"model":"naive","inputs":[{"target":${JSON.stringify(Array.from({ length: 300_000 }, (_, t) => Array.from({ length: 20 }, (_, v) => (t + v) % 97)))}}]${extra}}`;

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

describe(`a large target read into typed columns (${DB_KIND})`, () => {
  let t: TestApp;
  const engine = new FakeEngine();
  before(async () => {
    t = await createTestApp({ overrides: { engine } });
  });
  after(() => t.close());

  test('reaches the model as the same series, and a bad one gets the same 422 as in a small body', async () => {
    const u = await registerUser(t);
    const send = (target: unknown) =>
      t.app.inject({
        method: 'POST',
        url: '/v1/forecast',
        payload: JSON.stringify({ model: 'echo-last', inputs: [{ target }], parameters: { prediction_length: 3 } }),
        headers: { 'content-type': 'application/json', authorization: `Bearer ${u.token}` },
      });
    const n = 90_000;
    const rows = Array.from({ length: n }, (_, i) => [i % 13, i % 5 === 0 ? null : 1.5 + i]);
    const ok = await send(rows);
    assert.equal(ok.statusCode, 200, ok.body.slice(0, 300));
    // echo-last looks at the last 1000 steps (its context length). Compared as text: a failed deepEqual of long arrays takes minutes to print.
    const context = rows.slice(-1000);
    const same = (a: unknown, b: unknown) => assert.equal(String(a), String(b));
    const series = engine.jobs.at(-1)?.series as number[][];
    assert.equal(series.length, 2);
    same(
      series[0],
      context.map((r) => r[0]),
    );
    same(
      series[1],
      context.map((r) => r[1] ?? Number.NaN),
    );
    const flat = await send(rows.map((r) => r[1]));
    assert.equal(flat.statusCode, 200, flat.body.slice(0, 300));
    assert.equal(engine.jobs.at(-1)?.series.length, 1);
    same(
      engine.jobs.at(-1)?.series[0],
      context.map((r) => r[1] ?? Number.NaN),
    );
    // The same problem in the last row of a 3-row target and of a 90,000-row one: the same detail, at that row.
    const lastRow = (detail: { loc: unknown[] }[], at: number) => detail.map((d) => ({ ...d, loc: d.loc.map((x) => (x === at ? 'last' : x)) }));
    // 'inf': a number JSON.parse reads as Infinity (1e400 in the text).
    for (const bad of [[1, 2, 3], [1], ['x', 2], [1, [2]], [], 7, 'inf']) {
      const withBad = (r: unknown[]) => `[${[...r.slice(0, -1), bad].map((x) => (x === 'inf' ? '[1,1e400]' : JSON.stringify(x))).join(',')}]`;
      const raw = (target: string) =>
        t.app.inject({
          method: 'POST',
          url: '/v1/forecast',
          payload: `{"model":"echo-last","inputs":[{"target":${target}}],"parameters":{"prediction_length":3}}`,
          headers: { 'content-type': 'application/json', authorization: `Bearer ${u.token}` },
        });
      const small = await raw(withBad(rows.slice(0, 3)));
      const large = await raw(withBad(rows));
      assert.equal(large.statusCode, small.statusCode, `${JSON.stringify(bad)}: ${large.body.slice(0, 300)}`);
      assert.notEqual(small.statusCode, 200, JSON.stringify(bad));
      assert.deepEqual(lastRow(JSON.parse(large.body).detail, n - 1), lastRow(JSON.parse(small.body).detail, 2), JSON.stringify(bad));
    }
  });
});

describe(`the largest input never holds the event loop for long (${DB_KIND})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  test('a 100,000 × 20 forecast body goes from text to the engine in turns far shorter than one blocking parse and copy of it', async (ctx) => {
    const u = await registerUser(t);
    const target = Array.from({ length: 100_000 }, (_, s) => Array.from({ length: 20 }, (_, v) => (s + v) % 97));
    const text = JSON.stringify({ model: 'echo-last', inputs: [{ target }], parameters: { prediction_length: 3 } });
    // What one turn did before (issue #11): parse the body whole, then copy its rows into columns.
    let blocking = Number.POSITIVE_INFINITY;
    for (let k = 0; k < 3; k++) {
      const t0 = performance.now();
      const rows = (JSON.parse(text) as { inputs: [{ target: number[][] }] }).inputs[0].target;
      const cols = Array.from({ length: 20 }, () => new Float64Array(rows.length));
      for (let s = 0; s < rows.length; s++) for (let v = 0; v < 20; v++) (cols[v] as Float64Array)[s] = (rows[s] as number[])[v] as number;
      blocking = Math.min(blocking, performance.now() - t0);
    }
    // The longest turn during the request (a 1 ms timer's longest gap), best of five requests: a
    // GC pause or a busy machine can lengthen any one of them.
    let longest = Number.POSITIVE_INFINITY;
    for (let k = 0; k < 5; k++) {
      let last = performance.now();
      let gap = 0;
      const tick = setInterval(() => {
        const now = performance.now();
        gap = Math.max(gap, now - last);
        last = now;
      }, 1);
      const r = await t.app.inject({
        method: 'POST',
        url: '/v1/forecast',
        payload: text,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${u.token}` },
      });
      clearInterval(tick);
      assert.equal(r.statusCode, 200, r.body.slice(0, 300));
      longest = Math.min(longest, gap);
    }
    ctx.diagnostic(`longest turn ${longest.toFixed(1)} ms; one parse and copy ${blocking.toFixed(1)} ms`);
    // Measured here: 9–12 ms against 44–46 (with the body read into typed columns); 21–25 against 41–52 without
    // (ratio 0.48–0.52, which fails this); in one CI run on a busy machine 20.3 against 60.8 (0.334) with them.
    assert.ok(longest < blocking * 0.4, `longest turn ${longest.toFixed(1)} ms; one parse and copy ${blocking.toFixed(1)} ms`);
  });
});
