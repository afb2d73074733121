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
