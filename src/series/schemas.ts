import { z } from 'zod';
import { ForecastInput } from '../forecasting/schemas.ts';

const Column = z.string().min(1).max(200);

/** How a table becomes series: shared by ingest and schedules (a schedule's source is read the same way). */
export const IngestOptions = z
  .object({
    format: z.enum(['auto', 'csv', 'tsv', 'json']).default('auto').describe('Format of the data; auto looks at the first characters and the delimiter.'),
    time_column: Column.nullish().describe('Column holding the timestamps; detected when absent (ds, date, time, timestamp, … or the first column of dates).'),
    value_column: Column.nullish().describe('Column holding the values; detected when absent (y, value, target, … or the only numeric column).'),
    id_column: Column.nullish().describe('Column naming the series in long format (unique_id, id, series, …); absent: one series, or one per numeric column.'),
    frequency: z.string().max(32).nullish().describe('Pandas frequency code (D, h, MS, …); detected from the timestamps when absent.'),
    duplicates: z
      .enum(['error', 'first', 'last', 'mean'])
      .default('error')
      .describe('What to do with two rows for the same series and time: error (422 naming the rows), keep the first or last, or average them.'),
    gaps: z.enum(['null', 'error']).default('null').describe('Missing steps: filled with null (models accept missing values) or refused with 422.'),
  })
  .strict();

export const SeriesIngestRequest = IngestOptions.extend({
  text: z.string().nullish().describe('The data pasted as text: CSV, TSV or JSON (an array of records, or an object of columns).'),
  url: z.string().max(2048).nullish().describe('An https URL to fetch the data from (private and loopback addresses are refused).'),
})
  .strict()
  .meta({ id: 'SeriesIngestRequest' });
export type SeriesIngestRequestT = z.output<typeof SeriesIngestRequest>;
export type IngestOptionsT = z.output<typeof IngestOptions>;

const SeriesReport = z.object({
  unique_id: z.string(),
  start: z.string(),
  end: z.string(),
  length: z.number().int().describe('Steps, gaps included.'),
  observed: z.number().int().describe('Steps with a value.'),
  missing: z.number().int().describe('Steps added as null for gaps, plus empty values.'),
});

export const SeriesIngestResponse = z
  .object({
    object: z.literal('series.ingest'),
    format: z.enum(['csv', 'tsv', 'json']),
    rows: z.number().int().describe('Data rows read.'),
    columns: z.object({
      time: z.string(),
      value: z.array(z.string()).describe('One entry in long format; several in wide format (one series per column).'),
      id: z.string().nullable(),
      ignored: z.array(z.string()),
    }),
    frequency: z.string().nullable().describe('Detected (or given) pandas frequency code; null when the timestamps are irregular.'),
    inputs: z.array(ForecastInput).describe('The forecast input shape: pass as `inputs` of POST /v1/forecast.'),
    series: z.array(SeriesReport),
    gaps: z.array(z.object({ unique_id: z.string(), after: z.string(), missing: z.number().int() })).describe('At most 100 listed.'),
    duplicates: z.array(z.object({ unique_id: z.string(), time: z.string(), rows: z.array(z.number().int()) })).describe('At most 100 listed.'),
    warnings: z.array(z.string()),
  })
  .meta({ id: 'SeriesIngestResponse' });
export type SeriesIngestResponseT = z.input<typeof SeriesIngestResponse>;
