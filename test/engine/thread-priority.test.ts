import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { createEngine } from '../../src/engine/engine.ts';

/** Nice value and name of each thread of this process (Linux /proc). */
function threads(): { tid: number; name: string; nice: number }[] {
  return readdirSync('/proc/self/task').map((t) => {
    const stat = readFileSync(`/proc/self/task/${t}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { tid: Number(t), name: readFileSync(`/proc/self/task/${t}/comm`, 'utf8').trim(), nice: Number(fields[16]) };
  });
}

describe('inference threads yield the cores to the event loop (ADR 0010, fifth addendum)', {
  skip: process.platform !== 'linux' && 'Linux only: nice is per thread there',
}, () => {
  it('worker threads run at workerNice steps below the thread serving HTTP, which keeps its own', async () => {
    const before = threads().find((t) => t.tid === process.pid)!.nice;
    const engine = createEngine({ poolSize: 2, timeoutMs: 30_000, maxQueue: 4, modelsDir: '/nonexistent', threads: 1, workerNice: 7 });
    try {
      // theta is never run inline: the job reaches a worker thread, which has started by then.
      const series = Array.from({ length: 40 }, (_, i) => 10 + Math.sin(i / 3) + i * 0.1);
      await engine.forecast({ model: 'theta', series: [series], horizon: 4, quantileLevels: [0.5], numSamples: 0, seasonLength: null, seed: 1 });
      const all = threads();
      const workers = all.filter((t) => t.name === 'WorkerThread');
      assert.ok(workers.length >= 1, `no worker thread among ${JSON.stringify(all)}`);
      for (const w of workers) assert.equal(w.nice, Math.min(19, before + 7), `worker ${w.tid}`);
      assert.equal(all.find((t) => t.tid === process.pid)!.nice, before, 'the main thread is untouched');
    } finally {
      await engine.close();
    }
  });
});
