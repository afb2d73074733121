import { AUTH_ERRORS } from '../shared/schemas.ts';
import { defineOperation } from '../shared/operation.ts';
import { SeriesIngestRequest, SeriesIngestResponse } from './schemas.ts';
import { ingestPoints, ingestSeries } from './service.ts';
import { serialiseJson } from '../shared/json.ts';

const INGEST_EXAMPLE = { text: 'unique_id,ds,y\na,2024-01-01,3\na,2024-01-02,4\nb,2024-01-01,7\nb,2024-01-02,9' };

export const seriesOperations = [
  defineOperation({
    id: 'ingestSeries',
    method: 'POST',
    path: '/v1/series/ingest',
    tags: ['forecasting'],
    summary: 'Turn a table into forecast inputs',
    description:
      'Reads CSV, TSV or JSON (pasted as text, uploaded as text/csv or text/tab-separated-values, or fetched from an https url) ' +
      'and returns the forecast input shape: detected time, value and id columns (long format unique_id, ds, y, or one series per numeric column), ' +
      'the frequency, gaps (filled with null) and duplicates. Errors name the line or record. Free of credits; ' +
      'one rate-limit point per started MiB of text, 5 for a url.',
    input: SeriesIngestRequest,
    output: SeriesIngestResponse,
    auth: ['session', 'api_key', 'oauth'],
    scope: 'forecast',
    errors: [...AUTH_ERRORS, 413, 415, 502, 504],
    points: ingestPoints,
    spendsCredits: false,
    readOnly: true,
    openWorld: true,
    example: { request: INGEST_EXAMPLE },
    mcpExample: JSON.stringify(INGEST_EXAMPLE),
    run: ({ deps, input }) => ingestSeries(deps, input),
    // Up to 2,000,000 numbers: serialised in slices that yield to the event loop, like a forecast.
    runSerialised: async ({ deps, input }) => serialiseJson(await ingestSeries(deps, input)),
    summarize: (r) =>
      `${r.inputs.length} series from ${r.rows} ${r.format.toUpperCase()} rows (time '${r.columns.time}', values ${r.columns.value.join(', ')}` +
      `${r.columns.id ? `, id '${r.columns.id}'` : ''}); frequency ${r.frequency ?? 'irregular'}; ${r.gaps.length} gap(s), ${r.duplicates.length} duplicate(s).`,
  }),
];
