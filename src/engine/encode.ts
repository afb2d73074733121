import type { ForecastJob, SeriesForecast } from './types.ts';

/**
 * A job's answer as JSON text, written where the model ran (a worker thread), so that the thread
 * serving HTTP receives a few byte buffers (moved, not copied) instead of millions of numbers to
 * clone, shape and serialise (issue #11: a 2-million-number answer pinned the event loop for
 * hundreds of milliseconds). The matrices are laid out as the API sends them: steps × variates,
 * one matrix per group of series (the variates of one input, `job.groupIds`).
 */
export interface EncodedGroup {
  /** `[[v, …], …]`: the mean, one row per step. */
  mean: Uint8Array;
  /** One matrix per quantile level, in the job's order. */
  quantiles: Uint8Array[];
  /**
   * `[matrix, …]`: the sample paths (a series without samples repeats its mean), or null with
   * numSamples 0; in pieces, one per sample, written one after the other (the worker never holds
   * the whole text at once).
   */
  samples: Uint8Array[] | null;
}

export interface EncodedForecast {
  encoded: true;
  groups: EncodedGroup[];
  /** Per series, what the model decided (SeriesForecast.info). */
  info: (Record<string, unknown> | undefined)[];
}

export const isEncoded = (x: SeriesForecast[] | EncodedForecast): x is EncodedForecast => !Array.isArray(x) && x.encoded === true;

/** The groups of a job: runs of consecutive series sharing a group id (each series alone without ids). */
export function seriesGroups(job: Pick<ForecastJob, 'series' | 'groupIds'>): number[][] {
  const groups: number[][] = [];
  job.series.forEach((_, i) => {
    const last = groups[groups.length - 1];
    if (last && job.groupIds && job.groupIds[i] === job.groupIds[last[0] as number]) last.push(i);
    else groups.push([i]);
  });
  return groups;
}

const utf8 = new TextEncoder();

/** JSON.stringify's text of a number inside an array: non-finite and missing values are null. */
const num = (x: number | undefined): string => (x !== undefined && Number.isFinite(x) ? String(x) : 'null');

/** `[[c0[0], c1[0], …], [c0[1], …], …]` over `h` steps, as JSON.stringify writes it. */
function matrixText(cols: number[][], h: number): string {
  const rows = new Array<string>(h);
  for (let t = 0; t < h; t++) {
    let row = '[';
    for (let v = 0; v < cols.length; v++) row += (v > 0 ? ',' : '') + num((cols[v] as number[])[t]);
    rows[t] = `${row}]`;
  }
  return `[${rows.join(',')}]`;
}

/** The answer of `job` as JSON text per group (see EncodedForecast). */
export function encodeForecasts(job: ForecastJob, forecasts: SeriesForecast[]): EncodedForecast {
  const h = job.horizon;
  const matrix = (cols: number[][]) => utf8.encode(matrixText(cols, h));
  const groups = seriesGroups(job).map((members): EncodedGroup => {
    const fc = members.map((i) => forecasts[i] as SeriesForecast);
    const samples: Uint8Array[] = [];
    for (let s = 0; s < job.numSamples; s++) {
      const text = matrixText(
        fc.map((f) => f.samples?.[s] ?? f.mean),
        h,
      );
      samples.push(utf8.encode(`${s === 0 ? '[' : ','}${text}${s === job.numSamples - 1 ? ']' : ''}`));
    }
    return {
      mean: matrix(fc.map((f) => f.mean)),
      quantiles: job.quantileLevels.map((_, q) => matrix(fc.map((f) => f.quantiles[q] ?? []))),
      samples: job.numSamples > 0 ? samples : null,
    };
  });
  return { encoded: true, groups, info: forecasts.map((f) => f.info) };
}

/** The buffers of an encoded answer, to move to the receiving thread instead of copying them. */
export function encodedBuffers(e: EncodedForecast): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>();
  for (const g of e.groups) {
    for (const b of [g.mean, ...g.quantiles, ...(g.samples ?? [])]) out.add(b.buffer as ArrayBuffer);
  }
  return [...out];
}
