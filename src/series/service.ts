import type { Config } from '../config.ts';
import { type Fetcher, OutboundError } from '../outbound/fetcher.ts';
import { AppError, ValidationFailure } from '../shared/errors.ts';
import type { IngestOptionsT, SeriesIngestRequestT, SeriesIngestResponseT } from './schemas.ts';
import { shapeSeries } from './shape.ts';
import { readTable } from './table.ts';

export interface IngestCtx {
  config: Pick<Config, 'ingest'>;
  fetcher: Fetcher;
}

/** Content types a data URL may answer with (an HTML page is refused before its body is read). */
const ACCEPTED = [
  'text/csv',
  'text/plain',
  'text/tab-separated-values',
  'text/comma-separated-values',
  'application/json',
  'application/csv',
  'application/octet-stream',
];

/** Reads text (CSV, TSV, JSON) into forecast inputs; `field` names the input field in errors. */
export async function ingestText(ctx: IngestCtx, text: string, options: IngestOptionsT, field: string): Promise<SeriesIngestResponseT> {
  const { maxBytes, maxRows, maxColumns, maxSeries, maxPoints, gapFillRatio } = ctx.config.ingest;
  const bytes = Buffer.byteLength(text);
  if (bytes > maxBytes) throw new AppError('payload_too_large', `The data is ${bytes} bytes; at most ${maxBytes} are read (INGEST_MAX_BYTES)`);
  const table = await readTable(text, options.format, { maxRows, maxColumns }, field);
  return { object: 'series.ingest', ...(await shapeSeries(table, options, field, { maxSeries, maxPoints, gapFillRatio })) };
}

/** Fetches a source URL through the outbound fetcher (private networks refused), as text. */
export async function fetchSource(ctx: IngestCtx, url: string, field: string): Promise<string> {
  try {
    const res = await ctx.fetcher.fetch(url, { accept: ACCEPTED, maxBytes: ctx.config.ingest.maxBytes });
    if (res.status !== 200) throw new AppError('request_error', `${new URL(res.url).host} answered HTTP ${res.status} for the data URL`);
    return res.body.toString('utf8');
  } catch (err) {
    if (!(err instanceof OutboundError)) throw err;
    if (err.kind === 'refused') throw new ValidationFailure([{ path: [field], msg: `URL refused: ${err.message}`, type: 'value_error' }]);
    if (err.kind === 'too_large') throw new AppError('payload_too_large', `The data URL's answer is too large: ${err.message}`);
    if (err.kind === 'timeout') throw new AppError('upstream_timeout', `The data URL did not answer in time: ${err.message}`);
    throw new AppError('request_error', `The data URL could not be fetched: ${err.message}`);
  }
}

export async function ingestSeries(ctx: IngestCtx, input: SeriesIngestRequestT): Promise<SeriesIngestResponseT> {
  const { text, url, ...options } = input;
  const given = [text != null ? 'text' : null, url != null ? 'url' : null].filter((x) => x !== null);
  if (given.length !== 1) {
    throw new ValidationFailure([
      { path: given.length === 0 ? ['text'] : ['url'], msg: 'Send exactly one of text (the data pasted) or url (where to fetch it)', type: 'value_error' },
    ]);
  }
  if (text != null) return ingestText(ctx, text, options, 'text');
  return ingestText(ctx, await fetchSource(ctx, url as string, 'url'), options, 'url');
}

/** Rate-limit points of an ingest: one per started MiB pasted; a URL fetch counts as 5. */
export function ingestPoints(input: unknown): number {
  const i = input as { text?: unknown; url?: unknown } | null | undefined;
  if (typeof i?.url === 'string') return 5;
  return typeof i?.text === 'string' ? 1 + Math.floor(i.text.length / (1024 * 1024)) : 1;
}
