import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * Idle collection of the main thread's heap (issue #11). A large request (a 5.7 MB body, a 30 MB
 * answer, a 180,000-row paste) makes V8 grow the heap with garbage it collects only when it next
 * needs to, which an idle server never does: the process stayed 100–250 MB above its idle level for
 * as long as it was quiet. Once no request has been in flight for `idleMs`, and the committed heap
 * plus external memory (ArrayBuffers: request bodies, the encoded answers a worker hands over,
 * freed only when the objects holding them are collected) has grown at least `growthBytes` since
 * the last collection (or the start), this runs one full collection (V8's regular major GC: it
 * frees the garbage and the empty pages). It pauses the thread (45–90 ms measured by bench:abuse
 * on a busy 2-core machine; the "last resort" flavour used before, seven collections in a row, was
 * 58 ms to 1.5 s and gave back little more), so it only runs when nothing is in flight; a request
 * arriving during that pause waits for it. On by default since ADR 0010's sixth pass
 * (MEMORY_IDLE_COMPACT_MB=64; 0 turns it off).
 */
export interface IdleCompactor {
  /** A request began (the compaction waits until every begun request has ended). */
  begin(): void;
  /** A request ended. */
  end(): void;
  stats(): { inFlight: number; compactions: number; lastPauseMs: number; lastFreedBytes: number };
  close(): void;
}

export interface IdleCompactorOptions {
  /** Quiet time before a compaction (0: never compact). */
  idleMs: number;
  /** Growth of the committed heap since the last compaction that makes one worth its pause. */
  growthBytes: number;
  /** For tests: the committed heap plus external memory, and the collection itself. */
  heapBytes?: () => number;
  collect?: () => void;
  onCompact?: (pauseMs: number, freedBytes: number) => void;
}

let exposedGc: ((options?: object) => void) | undefined;
/** V8's gc(), exposed at run time (the flag takes effect for contexts created after it is set). */
function memoryReducingGc(): void {
  if (!exposedGc) {
    setFlagsFromString('--expose-gc');
    exposedGc = runInNewContext('gc') as (options?: object) => void;
  }
  exposedGc({ type: 'major', execution: 'sync', flavor: 'regular' });
}

export function createIdleCompactor(options: IdleCompactorOptions): IdleCompactor {
  const heapBytes =
    options.heapBytes ??
    (() => {
      const m = process.memoryUsage();
      return m.heapTotal + m.external;
    });
  const collect = options.collect ?? memoryReducingGc;
  let inFlight = 0;
  let compactions = 0;
  let lastPauseMs = 0;
  let lastFreedBytes = 0;
  let baseline = heapBytes();
  let timer: NodeJS.Timeout | undefined;
  const fire = () => {
    timer = undefined;
    if (inFlight > 0) return;
    const before = heapBytes();
    if (before - baseline < options.growthBytes) {
      // A quiet heap that shrank on its own is the new level to compare with.
      baseline = Math.min(baseline, before);
      return;
    }
    const t = performance.now();
    collect();
    lastPauseMs = performance.now() - t;
    baseline = heapBytes();
    lastFreedBytes = before - baseline;
    compactions++;
    options.onCompact?.(lastPauseMs, lastFreedBytes);
  };
  return {
    begin() {
      inFlight++;
      clearTimeout(timer);
      timer = undefined;
    },
    end() {
      inFlight = Math.max(0, inFlight - 1);
      if (inFlight === 0 && options.idleMs > 0 && !timer) {
        timer = setTimeout(fire, options.idleMs);
        timer.unref();
      }
    },
    stats: () => ({ inFlight, compactions, lastPauseMs, lastFreedBytes }),
    close() {
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
