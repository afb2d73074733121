/**
 * Preloaded into the server by bench/abuse.ts (`node --import ./bench/lib/loop-probe.ts src/main.ts`,
 * with an IPC channel): measures the server's own event-loop delay (perf_hooks.monitorEventLoopDelay)
 * and its peak RSS, and reports them on request. Not part of the service.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';

if (process.send) {
  const send = process.send.bind(process);
  const loop = monitorEventLoopDelay({ resolution: 5 });
  loop.enable();
  let peakRss = process.memoryUsage.rss();
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
  }, 20);
  sampler.unref();
  process.on('message', (m: { op: 'reset' | 'report' }) => {
    const rss = process.memoryUsage.rss();
    if (m.op === 'reset') {
      loop.reset();
      peakRss = rss;
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
      peakRss: Math.max(peakRss, rss),
      loopDelayMs: { p50: loop.percentile(50) / 1e6, p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 },
    });
  });
  process.channel?.unref();
}
