import assert from 'node:assert/strict';
import { test } from 'node:test';
import { findJsonProblem, findJsonProblemSliced, jsonText, MAX_JSON_MEMBERS, matrixJson, serialiseJson } from '../../src/shared/json.ts';

test('serialiseJson writes what JSON.stringify writes, in several chunks for large values', async () => {
  const values: unknown[] = [
    null,
    0,
    -1.5e-300,
    'a"b\\c\n\u2028é',
    [],
    {},
    [1, null, undefined, () => 1, Number.NaN, Number.POSITIVE_INFINITY, { a: undefined, b: [true, false] }],
    {
      date: new Date(0),
      nested: {
        x: [
          [1, 2],
          [3, 4],
        ],
        s: 'x',
      },
      skip: undefined,
      n: null,
    },
  ];
  for (const v of values) assert.equal((await serialiseJson(v)).chunks.join(''), JSON.stringify(v));
  const big = { rows: Array.from({ length: 50_000 }, (_, i) => [i / 7, -i]) };
  const out = await serialiseJson(big);
  assert.ok(out.chunks.length > 2, `${out.chunks.length} chunks`);
  const text = out.chunks.join('');
  assert.equal(text, JSON.stringify(big));
  assert.equal(out.bytes, Buffer.byteLength(text));
});

test('findJsonProblem: NUL and lone surrogates in values and keys, nesting, at any depth without recursion', () => {
  assert.equal(findJsonProblem({ a: ['ok', 1, { b: 'fine' }] }), null);
  assert.deepEqual(findJsonProblem({ a: ['ok', 'x\u0000'] })?.path, ['a', 1]);
  assert.deepEqual(findJsonProblem({ a: { 'k\ud800': 1 } })?.path, ['a', 'k\ud800']);
  assert.equal(findJsonProblem('\udc00x')?.type, 'string_unstorable');
  let deep: unknown = 1;
  for (let i = 0; i < 100_000; i++) deep = [deep];
  assert.equal(findJsonProblem(deep)?.type, 'too_deep');
  assert.equal(findJsonProblem({ a: { b: 1 } }, 2), null);
  assert.equal(findJsonProblem({ a: { b: { c: 1 } } }, 2)?.type, 'too_deep');
});

test('findJsonProblem: rows of numbers are skipped quickly, but still count for depth and are still walked when they hold strings', () => {
  assert.equal(findJsonProblem({ target: [[1, 2], [null, 3], []] }), null);
  assert.deepEqual(findJsonProblem([[1, 2]], 1)?.path, [0], 'a row of numbers one level too deep is too deep');
  assert.equal(findJsonProblem([[1, 2]], 1)?.type, 'too_deep');
  assert.deepEqual(
    findJsonProblem({
      target: [
        [1, 2],
        [3, 'x\u0000'],
      ],
    })?.path,
    ['target', 1, 1],
  );
  assert.deepEqual(findJsonProblem({ a: [{ b: [[1], [2, { 'k\u0000': 1 }]] }] })?.path, ['a', 0, 'b', 1, 1, 'k\u0000']);
});

test('findJsonProblem: an object of more than MAX_JSON_MEMBERS members is too_big at its path', () => {
  const names = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`n${i}`, 1]));
  assert.equal(findJsonProblem({ a: [names(MAX_JSON_MEMBERS)] }), null);
  assert.deepEqual(findJsonProblem({ a: [names(MAX_JSON_MEMBERS + 1)] }), {
    path: ['a', 0],
    msg: `Holds more than ${MAX_JSON_MEMBERS} members`,
    type: 'too_big',
    ctx: { maximum: MAX_JSON_MEMBERS },
  });
});

test('findJsonProblemSliced finds what findJsonProblem finds, in several turns of the event loop for a large value', async () => {
  const many = { inputs: Array.from({ length: 100_000 }, (_, i) => ({ item_id: `s${i}`, metadata: { k: 'v' } })) };
  const bad = structuredClone(many);
  (bad.inputs[77_777] as { metadata: Record<string, string> }).metadata.k = 'x\u0000';
  for (const value of [many, bad]) {
    let turns = 0;
    const tick = setInterval(() => turns++, 0);
    const sliced = await findJsonProblemSliced(value, 32, 0);
    clearInterval(tick);
    assert.deepEqual(sliced, findJsonProblem(value));
    assert.ok(turns >= 10, `${turns} turns`);
  }
  assert.deepEqual(findJsonProblem(bad)?.path, ['inputs', 77_777, 'metadata', 'k']);
});

test('matrixJson writes the steps × variates matrix JSON.stringify writes (NaN, ±Infinity as null), in several turns for a large one', async () => {
  const cols = [
    [1, Number.NaN, -0, 1e21, 1 / 3, Number.POSITIVE_INFINITY],
    [true, false, true, false, true, false],
  ];
  for (const [from, to] of [
    [0, 6],
    [2, 5],
    [3, 3],
  ] as const) {
    const expected = JSON.stringify(Array.from({ length: to - from }, (_, k) => cols.map((c) => c[from + k])));
    assert.equal(jsonText(await serialiseJson({ m: await matrixJson(cols, from, to) })), `{"m":${expected}}`);
  }
  const long = [Array.from({ length: 100_000 }, (_, t) => (t % 7 === 0 ? Number.NaN : t / 8))];
  let turns = 0;
  const tick = setInterval(() => turns++, 0);
  const raw = await matrixJson(long, 0, long[0]!.length);
  clearInterval(tick);
  assert.ok(turns >= 3, `${turns} turns`);
  assert.equal(jsonText(await serialiseJson(raw)), JSON.stringify(long[0]!.map((x) => [x])));
});
