import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Principal } from '../../src/accounts/credentials.ts';
import { runBatch } from '../../src/forecasting/batch.ts';
import { LIMITS } from '../../src/forecasting/schemas.ts';
import type { ForecastCtx } from '../../src/forecasting/service.ts';
import { AppError, reportError } from '../../src/shared/errors.ts';

describe('runBatch', () => {
  test('the batch limit lives in the service: over LIMITS.maxBatch is request_too_large before anything runs', async () => {
    let touched = false;
    const ctx = new Proxy({} as ForecastCtx, {
      get() {
        touched = true;
        throw new Error('nothing may run');
      },
    });
    const requests = Array.from({ length: LIMITS.maxBatch + 1 }, () => ({}));
    await assert.rejects(
      runBatch(ctx, {} as Principal, requests, { requestId: 'r', source: 'batch' }, (err) => reportError(err, []) ?? assert.fail(String(err))),
      (err: unknown) => err instanceof AppError && err.code === 'request_too_large' && err.status === 413,
    );
    assert.equal(touched, false);
  });

  test('an invalid item fails alone, mapped by the caller’s error mapper', async () => {
    const ctx = {} as ForecastCtx;
    const r = await runBatch(ctx, {} as Principal, [{ model: 'x' }], { requestId: 'r', source: 'batch' }, (err, id) => ({
      ...(reportError(err, ['at', id]) ?? assert.fail(String(err))),
    }));
    assert.equal(r.data[0]?.ok, false);
    assert.deepEqual(r.data[0]?.error?.detail?.[0]?.loc, ['at', 'r:0', 'inputs']);
  });

  test('an item that is not an object: the message names no empty path', async () => {
    const r = await runBatch({} as ForecastCtx, {} as Principal, [5, { model: 'x' }], { requestId: 'r', source: 'batch' }, (err) => ({
      ...(reportError(err, ['body']) ?? assert.fail(String(err))),
    }));
    assert.equal(r.data[0]?.ok, false);
    assert.equal(r.data[0]?.error?.error, 'Invalid input: expected object, received number');
    assert.deepEqual(r.data[0]?.error?.detail?.[0]?.loc, ['body']);
    // An issue with a path still names it.
    assert.match(String(r.data[1]?.error?.error), /^inputs: /);
  });
});
