import { EngineError, type EngineJob } from './types.ts';

/** Checks the parts of a job the contract promises, so no model ever sees a malformed one. */
export function validateJob(job: EngineJob): void {
  if (!Number.isInteger(job.horizon) || job.horizon < 1) throw new EngineError('bad_input', `horizon must be an integer >= 1, got ${job.horizon}`);
  if (!Number.isInteger(job.numSamples) || job.numSamples < 0) throw new EngineError('bad_input', `numSamples must be an integer >= 0`);
  if (job.seasonLength !== null && (!Number.isInteger(job.seasonLength) || job.seasonLength < 1)) {
    throw new EngineError('bad_input', `seasonLength must be null or an integer >= 1, got ${job.seasonLength}`);
  }
  let previous = 0;
  for (const level of job.quantileLevels) {
    if (!(level > 0 && level < 1)) throw new EngineError('bad_input', `quantile level ${level} is not strictly inside (0, 1)`);
    if (level <= previous) throw new EngineError('bad_input', 'quantile levels must be ascending without duplicates');
    previous = level;
  }
  if (!Array.isArray(job.series) || job.series.length === 0) throw new EngineError('bad_input', 'a job needs at least one series');
  job.series.forEach((s, i) => {
    // A Float64Array holds numbers only (NaN = missing): nothing to check in it.
    if (s instanceof Float64Array) return;
    if (!Array.isArray(s) || s.some((v) => typeof v !== 'number')) throw new EngineError('bad_input', `series ${i} must be an array of numbers`, i);
  });
}
