/**
 * Preloaded into the server by bench/abuse.ts (`node --import ./bench/lib/loop-probe.ts src/main.ts`,
 * with an IPC channel): measures the server's own event-loop delay (perf_hooks.monitorEventLoopDelay)
 * and its peak RSS, and reports them on request. Not part of the service.
 */
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';

/**
 * Where the resident memory sits, from /proc/self/smaps (Linux): the main malloc arena ([heap]),
 * the other glibc arenas (anonymous mappings inside 64 MB-aligned reservations), and the rest of the
 * anonymous memory (V8 heaps of every thread, large ArrayBuffers that malloc mmaps directly). MB each.
 */
function rssBreakdown(): { brk: number; arenas: number; otherAnon: number; files: number } | null {
  let text: string;
  try {
    text = readFileSync('/proc/self/smaps', 'utf8');
  } catch {
    return null;
  }
  const out = { brk: 0, arenas: 0, otherAnon: 0, files: 0 };
  let kind: keyof typeof out = 'files';
  for (const line of text.split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (head) {
      const start = BigInt(`0x${head[1]}`);
      const name = head[3] ?? '';
      if (name === '[heap]') kind = 'brk';
      else if (name.startsWith('/')) kind = 'files';
      // glibc's non-main arenas are carved from 64 MB-aligned reservations (HEAP_MAX_SIZE).
      else if (name === '' && start % (64n * 1024n * 1024n) === 0n) kind = 'arenas';
      else kind = name === '' ? 'otherAnon' : 'files';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) out[kind] += Number(rss[1]) / 1024;
  }
  return { brk: Math.round(out.brk), arenas: Math.round(out.arenas), otherAnon: Math.round(out.otherAnon), files: Math.round(out.files) };
}

if (process.send) {
  const send = process.send.bind(process);
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  let peakRss = process.memoryUsage.rss();
  // The longest garbage collection pause of the main thread since the last reset (the idle compaction's among them).
  let maxGcMs = 0;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) maxGcMs = Math.max(maxGcMs, e.duration);
  }).observe({ entryTypes: ['gc'] });
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
  }, 20);
  sampler.unref();
  process.on('message', (m: { op: 'reset' | 'report' | 'gc' }) => {
    if (m.op === 'gc') {
      // Only with --expose-gc in ABUSE_NODE_ARGS (measurement): a full collection, and its pause.
      const gc = (globalThis as { gc?: () => void }).gc;
      const t = performance.now();
      gc?.();
      send({ op: 'gc', ms: gc ? performance.now() - t : -1 });
      return;
    }
    const rss = process.memoryUsage.rss();
    if (m.op === 'reset') {
      loop.reset();
      peakRss = rss;
      maxGcMs = 0;
      send({ op: 'reset', rss });
      return;
    }
    const mem = process.memoryUsage();
    send({
      op: 'report',
      rss,
      // The main thread's own heap (worker threads' heaps count in the RSS only).
      mainHeap: mem.heapTotal,
      mainHeapUsed: mem.heapUsed,
      external: mem.external,
      arrayBuffers: mem.arrayBuffers,
      smaps: rssBreakdown(),
      // The main heap's spaces: committed MB (young generation, old space, large objects, code…).
      spaces: Object.fromEntries(getHeapSpaceStatistics().map((x) => [x.space_name.replace(/_space$/, ''), Math.round(x.space_size / 1048576)])),
      peakRss: Math.max(peakRss, rss),
      maxGcMs,
      loopDelayMs: { p50: loop.percentile(50) / 1e6, p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 },
    });
  });
  process.channel?.unref();
}
