import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Catalog } from '../../src/catalog/catalog.ts';
import { createEngine } from '../../src/engine/engine.ts';
import type { Engine, ModelInfo } from '../../src/engine/types.ts';
import { AppError } from '../../src/shared/errors.ts';
import { FakeEngine } from '../helpers/fake-engine.ts';

describe('catalog lookup', () => {
  test('get is a lookup by id: it never lists the whole catalog when the engine can answer for one model', () => {
    const fake = new FakeEngine();
    const byId = new Map(fake.models().map((m) => [m.id, m]));
    let asked: string[] = [];
    let listed = 0;
    const engine: Engine = {
      models: () => {
        listed++;
        return fake.models();
      },
      model: (id: string): ModelInfo | undefined => {
        asked.push(id);
        return byId.get(id);
      },
      forecast: (job) => fake.forecast(job),
      close: async () => {},
    };
    const catalog = new Catalog(engine);
    assert.equal(catalog.get('echo-short').max_horizon, 5);
    assert.deepEqual(asked, ['echo-short']);
    assert.equal(listed, 0, 'get must not list every model');
    asked = [];
    // Only an unknown id lists the catalog, to name the close ids in its 404.
    assert.throws(
      () => catalog.get('echo_shrt'),
      (err: unknown) => err instanceof AppError && err.code === 'model_not_found' && /did you mean 'echo-short'/.test(err.message),
    );
    assert.deepEqual(asked, ['echo_shrt']);
  });

  test('an engine without model(id) still works (the list is searched)', () => {
    const catalog = new Catalog(new FakeEngine());
    assert.equal(catalog.get('echo-last').id, 'echo-last');
  });

  test('the real engine answers one model exactly as its list does', async () => {
    const engine = createEngine({ poolSize: 1, timeoutMs: 10_000, maxQueue: 1, modelsDir: '/nonexistent', threads: 1 });
    try {
      for (const m of engine.models()) assert.deepEqual(engine.model?.(m.id), m, m.id);
      assert.equal(engine.model?.('nope'), undefined);
    } finally {
      await engine.close();
    }
  });
});
