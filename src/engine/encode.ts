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

/**
 * Text written into one growing byte buffer; each piece is later a view of the final buffer. The
 * texts are ASCII (numbers, brackets, commas, null), so a string's length is its byte length.
 */
class Packer {
  private buf = new Uint8Array(64 * 1024);
  private len = 0;
  private readonly spans: [number, number][] = [];
  /** Writes `text`; answers the index of its piece. */
  add(text: string): number {
    if (this.len + text.length > this.buf.length) {
      const grown = new Uint8Array(Math.max(this.buf.length * 2, this.len + text.length));
      grown.set(this.buf.subarray(0, this.len));
      this.buf = grown;
    }
    const { written } = utf8.encodeInto(text, this.buf.subarray(this.len));
    this.spans.push([this.len, this.len + written]);
    this.len += written;
    return this.spans.length - 1;
  }
  /** The pieces as views of one buffer of exactly the bytes written. */
  finish(): Uint8Array[] {
    const bytes = this.len === this.buf.length ? this.buf : this.buf.slice(0, this.len);
    return this.spans.map(([a, b]) => bytes.subarray(a, b));
  }
}

/**
 * The answer of `job` as JSON text per group (see EncodedForecast), packed into one buffer for the
 * whole job: a view per matrix. One buffer per group and matrix was up to 256,000 small allocations
 * for a batch of 64 × 1,000 series, moved to the main thread and freed there, which left glibc's heap
 * fragmented (the RSS stayed 60–80 MB above idle after it; ADR 0010 sixth pass).
 */
export function encodeForecasts(job: ForecastJob, forecasts: SeriesForecast[]): EncodedForecast {
  const h = job.horizon;
  const packer = new Packer();
  const plan = seriesGroups(job).map((members) => {
    const fc = members.map((i) => forecasts[i] as SeriesForecast);
    const samples: number[] = [];
    for (let s = 0; s < job.numSamples; s++) {
      const text = matrixText(
        fc.map((f) => f.samples?.[s] ?? f.mean),
        h,
      );
      samples.push(packer.add(`${s === 0 ? '[' : ','}${text}${s === job.numSamples - 1 ? ']' : ''}`));
    }
    return {
      mean: packer.add(
        matrixText(
          fc.map((f) => f.mean),
          h,
        ),
      ),
      quantiles: job.quantileLevels.map((_, q) =>
        packer.add(
          matrixText(
            fc.map((f) => f.quantiles[q] ?? []),
            h,
          ),
        ),
      ),
      samples: job.numSamples > 0 ? samples : null,
    };
  });
  const pieces = packer.finish();
  const at = (k: number) => pieces[k] as Uint8Array;
  const groups = plan.map(
    (g): EncodedGroup => ({
      mean: at(g.mean),
      quantiles: g.quantiles.map(at),
      samples: g.samples ? g.samples.map(at) : null,
    }),
  );
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
