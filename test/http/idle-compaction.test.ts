import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import { createIdleCompactor } from '../../src/http/idle-compaction.ts';

/** The main thread's idle compaction (issue #11): only when nothing is in flight, only after growth. */
describe('idle compaction', () => {
  const MB = 1024 * 1024;
  let heap: number;
  let collected: number;
  const make = (idleMs = 1000, growthMb = 32) =>
    createIdleCompactor({
      idleMs,
      growthBytes: growthMb * MB,
      heapBytes: () => heap,
      collect: () => {
        collected++;
        heap = 120 * MB;
      },
    });
  beforeEach(() => {
    heap = 120 * MB;
    collected = 0;
    mock.timers.enable({ apis: ['setTimeout'] });
  });
  afterEach(() => mock.timers.reset());

  it('runs once the last request has ended and idleMs passed with none in flight', () => {
    const c = make();
    c.begin();
    heap = 220 * MB;
    c.end();
    mock.timers.tick(999);
    assert.equal(collected, 0, 'not before idleMs');
    mock.timers.tick(1);
    assert.equal(collected, 1);
    assert.equal(c.stats().lastFreedBytes, 100 * MB);
    mock.timers.tick(10_000);
    assert.equal(collected, 1, 'once per quiet period');
  });

  it('never runs while a request is in flight, however long it takes', () => {
    const c = make();
    c.begin();
    c.begin();
    heap = 220 * MB;
    c.end();
    mock.timers.tick(60_000);
    assert.equal(collected, 0);
    c.end();
    mock.timers.tick(1000);
    assert.equal(collected, 1);
  });

  it('a request that begins during the quiet period puts it off', () => {
    const c = make();
    c.begin();
    heap = 220 * MB;
    c.end();
    mock.timers.tick(900);
    c.begin();
    mock.timers.tick(5000);
    assert.equal(collected, 0, 'a request is in flight');
    c.end();
    mock.timers.tick(999);
    assert.equal(collected, 0);
    mock.timers.tick(1);
    assert.equal(collected, 1);
  });

  it('does not pause the thread for a heap that grew less than growthBytes since the last compaction', () => {
    const c = make(1000, 32);
    c.begin();
    heap = 150 * MB;
    c.end();
    mock.timers.tick(2000);
    assert.equal(collected, 0);
    c.begin();
    heap = 160 * MB;
    c.end();
    mock.timers.tick(1000);
    assert.equal(collected, 1, '40 MB over the level it started at');
  });

  it('idleMs 0 turns it off', () => {
    const c = make(0);
    c.begin();
    heap = 900 * MB;
    c.end();
    mock.timers.tick(60_000);
    assert.equal(collected, 0);
  });
});

describe('idle compaction with V8', () => {
  it("the real collection gives a grown heap back (V8's memory-reducing full GC, exposed at run time)", async () => {
    const { getHeapStatistics } = await import('node:v8');
    let freed = -1;
    const c = createIdleCompactor({ idleMs: 1, growthBytes: 1, onCompact: (_ms, bytes) => (freed = bytes) });
    let garbage: unknown[] | null = Array.from({ length: 40 }, () => JSON.parse(JSON.stringify(Array.from({ length: 50_000 }, (_, j) => [j, j + 1]))));
    const grown = getHeapStatistics().total_heap_size;
    garbage = null;
    c.begin();
    c.end();
    for (let i = 0; i < 200 && freed < 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(c.stats().compactions, 1, String(garbage));
    assert.ok(getHeapStatistics().total_heap_size < grown - 50 * 1024 * 1024, `${grown} → ${getHeapStatistics().total_heap_size}`);
  });
});

describe('idle compaction in the HTTP server', () => {
  it('counts requests in flight through the hooks: none runs while a request is open, one runs after it ends', async () => {
    const { createTestApp } = await import('../helpers/app.ts');
    let finish: () => void = () => {};
    const t = await createTestApp({
      env: { MEMORY_IDLE_COMPACT_MS: '50', MEMORY_IDLE_COMPACT_MB: '1' },
      extraRoutes: (app) =>
        app.get('/test/slow', async () => {
          // Garbage grown while the request runs (~50 MB of heap), then the request waits to be let go.
          let grown: unknown = JSON.parse(JSON.stringify(Array.from({ length: 400_000 }, (_, j) => [j, j + 1])));
          await new Promise<void>((r) => (finish = r));
          grown = null;
          return { ok: grown === null };
        }),
    });
    try {
      const compactor = (t.app as unknown as { idleCompactor: { stats(): { inFlight: number; compactions: number } } }).idleCompactor;
      const before = compactor.stats().compactions;
      const pending = t.app.inject({ method: 'GET', url: '/test/slow' });
      await new Promise((r) => setTimeout(r, 400));
      assert.equal(compactor.stats().inFlight, 1);
      assert.equal(compactor.stats().compactions, before, 'nothing runs while a request is in flight');
      finish();
      assert.equal((await pending).statusCode, 200);
      for (let i = 0; i < 100 && compactor.stats().compactions === before; i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(compactor.stats().inFlight, 0);
      assert.equal(compactor.stats().compactions, before + 1);
    } finally {
      await t.close();
    }
  });
});
