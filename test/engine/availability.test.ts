import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, openSync, rmSync, writeSync, closeSync, existsSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { createEngine } from '../../src/engine/engine.ts';

const SHARED = process.env.SHARED_DIR ?? resolve(import.meta.dirname, '..', '..', '..', 'shared');
const REPO = 'ibm-granite/granite-timeseries-ttm-r2';
const ID = 'ibm-granite/granite-timeseries-ttm-r2';
const source = join(SHARED, 'models', REPO);

describe('model availability: present AND verified against the pinned sha256', { skip: existsSync(source) ? false : `no ${source} (set SHARED_DIR)` }, () => {
  test('missing → not downloaded; present and intact → available; corrupted → unavailable, with the pull command', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tsfm-avail-'));
    const engine = createEngine({ poolSize: 1, timeoutMs: 10_000, maxQueue: 4, modelsDir: dir, threads: 1 });
    try {
      const ttm = () => engine.models().find((m) => m.id === ID);
      assert.equal(ttm()?.available, false);
      assert.match(ttm()?.unavailableReason ?? '', /not downloaded: run npm run models -- pull/);

      cpSync(source, join(dir, REPO), { recursive: true });
      await engine.refresh?.();
      assert.equal(ttm()?.available, true, ttm()?.unavailableReason);

      // Flip one byte in the weights: the fingerprint changes, so the files are verified again.
      const file = join(dir, REPO, 'model.safetensors');
      const fd = openSync(file, 'r+');
      writeSync(fd, Buffer.from([0x42]), 0, 1, 4096);
      closeSync(fd);
      utimesSync(file, new Date(), new Date(Date.now() + 5000));
      const during = ttm();
      assert.equal(during?.available, false);
      await engine.refresh?.();
      assert.equal(ttm()?.available, false);
      assert.match(ttm()?.unavailableReason ?? '', /does not match its pinned sha256/);
      assert.match(ttm()?.unavailableReason ?? '', /npm run models -- pull/);
    } finally {
      await engine.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("files present at start are verified from the engine's creation, not from the first listing", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tsfm-avail-'));
    cpSync(source, join(dir, REPO), { recursive: true });
    const engine = createEngine({ poolSize: 1, timeoutMs: 10_000, maxQueue: 4, modelsDir: dir, threads: 1 });
    try {
      // Hashing a few MB takes milliseconds; nothing asks the engine about its models meanwhile.
      // Before, the first listing started the check and answered "verifying", so a cold start's
      // first ensemble ran without the model.
      await new Promise((r) => setTimeout(r, 3000));
      const ttm = engine.models().find((m) => m.id === ID);
      assert.equal(ttm?.available, true, ttm?.unavailableReason);
    } finally {
      await engine.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
