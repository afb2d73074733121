import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import { ForecastInput, ForecastRequest, LIMITS } from '../../src/forecasting/schemas.ts';

// The same schemas without the tight-loop fast path: what zod itself says about a value.
const Value = z.number().nullable();
const Step = z.union([z.array(Value).min(1).max(LIMITS.maxVariates), Value]);
const Plain = z.object({
  target: z.array(Step).optional(),
  past_covariates: z.record(z.string().max(128), z.array(Value)).nullish(),
  future_covariates: z.record(z.string().max(128), z.array(z.number())).nullish(),
  static_covariates: z.record(z.string().max(128), z.number()).nullish(),
});

test('a valid target is accepted as sent, without zod copying it element by element (issue #11: a 100,000 × 20 target pinned the event loop)', () => {
  const target = Array.from({ length: 1000 }, (_, t) => [t, null, t / 3]);
  const past = Array.from({ length: 1000 }, (_, t) => (t % 5 === 0 ? null : t));
  const future = [1, 2, 3];
  const r = ForecastRequest.safeParse({ model: 'naive', inputs: [{ target, past_covariates: { p: past }, future_covariates: { f: future } }] });
  assert.ok(r.success);
  const input = r.data.inputs[0];
  assert.equal(input?.target, target, 'the same array: no per-element parse');
  assert.equal(input?.past_covariates?.p, past);
  assert.equal(input?.future_covariates?.f, future);
});

test('a bad target, covariate or step gets exactly the issues zod gives (paths, codes, messages)', () => {
  const bad: unknown[] = [
    { target: [1, 'a', 3] },
    { target: [[1, 2], []] },
    { target: [[1, 2], Array.from({ length: LIMITS.maxVariates + 1 }, () => 1)] },
    { target: [1, Number.NaN, Number.POSITIVE_INFINITY] },
    { target: [[1, '2']] },
    { target: 'not an array' },
    { target: [1, { a: 1 }] },
    { target: [1], past_covariates: { p: [1, 'x'] } },
    { target: [1], future_covariates: { f: [1, null] } },
    { target: [1], future_covariates: { f: 3 } },
    { target: [1], past_covariates: { ['k'.repeat(129)]: [1] } },
    { target: [1], past_covariates: { a: [1], b: null } },
    { target: [1], past_covariates: [[1, 2]] },
    { target: [1], future_covariates: { a: [1], b: [Number.NaN] } },
    { target: [1], static_covariates: { a: 1, b: '2' } },
    { target: [1], static_covariates: { a: Number.POSITIVE_INFINITY } },
    { target: [1], static_covariates: { ['s'.repeat(129)]: 1 } },
    { target: [1], static_covariates: 'x' },
  ];
  for (const value of bad) {
    const fast = ForecastInput.safeParse(value);
    const plain = Plain.safeParse(value);
    assert.equal(fast.success, false, JSON.stringify(value));
    assert.equal(plain.success, false);
    const strip = (issues: z.core.$ZodIssue[]) => issues.map(({ code, path, message }) => ({ code, path, message }));
    assert.deepEqual(strip(fast.error.issues), strip(plain.error.issues), JSON.stringify(value));
  }
});

test('covariate records of up to 100 names are accepted as sent (more: too_big at the record); one with a __proto__ name is what zod makes of it (the name dropped)', () => {
  const names = Array.from({ length: 100 }, (_, i) => `c${i}`);
  const past = Object.fromEntries(names.map((n) => [n, [1, null, 3]]));
  const future = Object.fromEntries(names.map((n) => [n, [1]]));
  const stat = Object.fromEntries(names.map((n) => [n, 2.5]));
  const r = ForecastInput.safeParse({ target: [1, 2, 3], past_covariates: past, future_covariates: future, static_covariates: stat });
  assert.ok(r.success);
  assert.equal(r.data.past_covariates, past, 'the same object: no per-name parse');
  assert.equal(r.data.future_covariates, future);
  assert.equal(r.data.static_covariates, stat);
  const over = ForecastInput.safeParse({ target: [1, 2, 3], static_covariates: { ...stat, c100: 1 } });
  assert.ok(!over.success);
  assert.deepEqual(
    over.error.issues.map((i) => [i.path, i.code]),
    [[['static_covariates'], 'too_big']],
  );
  const withProto = JSON.parse('{"target": [1], "static_covariates": {"a": 1, "__proto__": 2}}');
  const fast = ForecastInput.safeParse(withProto);
  const plain = Plain.safeParse(withProto);
  assert.ok(fast.success && plain.success);
  assert.deepEqual(Object.keys(fast.data.static_covariates ?? {}), Object.keys(plain.data.static_covariates ?? {}));
  assert.equal(Object.hasOwn(fast.data.static_covariates ?? {}, '__proto__'), false);
});
