import { AppError } from '../shared/errors.ts';
import type { CallInfo } from './service.ts';
import type { Hold, Usage } from './metering.ts';

/**
 * A job that ran for the engine's whole time limit (INFERENCE_TIMEOUT_MS of running time, counted
 * from the moment a worker picked it up) computing at least what it was estimated at: 504
 * `upstream_timeout`, and charged its price rather than released (ADR 0039). The work was done, a
 * worker was held for it, and the same request would run into the limit again: free, it was 30 s of
 * a worker for nothing, as often as asked. A job starved by the machine's load (`timedOut` in
 * service.ts), or one that timed out waiting for a worker (`busy`, 503), is not this and stays free.
 */
export class RanOutOfTime extends AppError {
  readonly credits: number;
  readonly usage: Usage;
  constructor(credits: number, usage: Usage) {
    super(
      'upstream_timeout',
      `The model did not answer within the engine's time limit (INFERENCE_TIMEOUT_MS of running time). The job ran for the whole limit and is charged ` +
        `its price (${credits} credits), as a finished one would be; the same request is likely to run out of time again: shorten context_length, ` +
        'send fewer inputs per request, or use a cheaper model',
    );
    this.name = 'RanOutOfTime';
    this.credits = credits;
    this.usage = usage;
  }
}

const ZERO: Usage = { input_tokens: 0, output_tokens: 0, total_tokens: 0 };

/**
 * The jobs of one call that ran out of time (`RanOutOfTime`), summed: what a failed call is charged,
 * and what a call that succeeded without them (an ensemble whose candidate timed out) adds.
 */
export class TimeoutCharges {
  credits = 0;
  usage: Usage = ZERO;
  /** Counts `err` when it is a job that ran out of time. */
  note(err: unknown): void {
    if (!(err instanceof RanOutOfTime)) return;
    this.credits += err.credits;
    this.usage = {
      input_tokens: this.usage.input_tokens + err.usage.input_tokens,
      output_tokens: this.usage.output_tokens + err.usage.output_tokens,
      total_tokens: this.usage.total_tokens + err.usage.total_tokens,
    };
  }
  /** `run`'s result, noting its failure (rethrown) when it ran out of time. */
  async watch<T>(run: Promise<T>): Promise<T> {
    try {
      return await run;
    } catch (err) {
      this.note(err);
      throw err;
    }
  }
}

/**
 * Ends the hold of a call that failed with `err`: the jobs that ran out of time are debited (the
 * usage event says `timed_out`; never more than was held), anything else is released. The debit is
 * put on the call's receipt and, for REST, in the error's `x-credits-charged` header.
 */
export async function settleFailed(hold: Hold, charges: TimeoutCharges, err: unknown, call: CallInfo, held: number, latencyMs: number): Promise<void> {
  if (charges.credits <= 0) {
    await hold.release(err instanceof Error ? err.message : 'failed');
    return;
  }
  const credits = Math.min(held, charges.credits);
  let charge: Awaited<ReturnType<Hold['commit']>>;
  try {
    charge = await hold.commit({ latencyMs, credits, usage: charges.usage, status: 'timed_out' });
  } catch (commitErr) {
    // Nothing was debited: the credits go back, as for any other failure.
    await hold.release(commitErr instanceof Error ? commitErr.message : 'failed');
    throw commitErr;
  }
  call.receipt?.add(charge);
  if (err instanceof AppError) err.headers['x-credits-charged'] = String(credits);
}
