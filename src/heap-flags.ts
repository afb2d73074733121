import { setFlagsFromString } from 'node:v8';

/**
 * The young generation's cap, per thread (issue #11, ADR 0010 "Memory, second pass"). V8 lets the
 * young generation of a thread grow to 2 × 64 MB semi-spaces while a large request allocates, and
 * gives it back only at a later collection, which an idle server never makes: after a 5.7 MB body
 * the main thread kept 128 MB of young generation committed (of a 207 MB heap), and the scavenges
 * of that large young generation paused the thread up to 100 ms. Capped at 16 MB semi-spaces, the
 * heap stays near its idle size and the scavenges short; survivors are promoted sooner, and the old
 * generation is collected by V8's concurrent marking.
 */
export const SEMI_SPACE_MB = 16;
export const SEMI_SPACE_FLAG = `--max-semi-space-size=${SEMI_SPACE_MB}`;

/**
 * Applies the cap to the threads started from now on (the inference workers) unless the operator
 * set one (`node --max-semi-space-size=… src/main.ts` or NODE_OPTIONS). The main thread's heap is
 * sized when the process starts, so the start command passes the flag too (package.json `start`,
 * the Dockerfile); returns whether the main thread has it.
 */
export function capYoungGeneration(): { mainThread: boolean } {
  const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].some((a) => /^--max[-_]semi[-_]space[-_]size/.test(a));
  if (!given) setFlagsFromString(SEMI_SPACE_FLAG);
  return { mainThread: given };
}
