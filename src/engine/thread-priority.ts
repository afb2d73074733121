import { getPriority, setPriority } from 'node:os';

/**
 * Lowers the CPU priority of the calling thread by `by` nice steps (issue #11, ADR 0010 fifth
 * addendum). Inference worker threads call it as they start, so that when the cores are busy the
 * thread serving HTTP (the event loop: health checks, small forecasts, answers being written) is
 * scheduled before long model runs, instead of waiting its turn behind them; on an idle machine
 * nice changes nothing. Linux only: there `setpriority(PRIO_PROCESS, 0, …)` applies to the calling
 * thread alone (other systems would lower the whole process). Nice is only raised, never lowered
 * (which would need privileges), and at most to 19. Returns the thread's nice value after, or null
 * when nothing was changed.
 */
export function lowerThreadPriority(by: number): number | null {
  if (process.platform !== 'linux' || !(by > 0)) return null;
  try {
    const target = Math.min(19, getPriority(0) + Math.round(by));
    setPriority(0, target);
    return getPriority(0);
  } catch {
    return null;
  }
}
