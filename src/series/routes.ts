import type { Deps } from '../deps-types.ts';
import { AppError } from '../shared/errors.ts';
import type { ZApp } from '../http/types.ts';

const INGEST_PATH = '/v1/series/ingest';

/**
 * Raw uploads to POST /v1/series/ingest: a text/csv or text/tab-separated-values body is read as
 * `{text, format}` and goes through the declared operation like a pasted table (detection only:
 * options need the JSON body). Any other route refuses these types with 415.
 */
export function registerSeriesRoutes(app: ZApp, deps: Deps): void {
  const types = { 'text/csv': 'csv', 'text/tab-separated-values': 'tsv' } as const;
  app.addContentTypeParser(Object.keys(types), { parseAs: 'string', bodyLimit: deps.config.ingest.maxBytes }, (req, body, done) => {
    if ((req.url.split('?')[0] ?? '').replace(/\/+$/, '') !== INGEST_PATH) {
      return done(
        new AppError(
          'unsupported_media_type',
          `Unsupported content type '${req.headers['content-type']}' here (only POST ${INGEST_PATH} takes CSV/TSV uploads): send the body as JSON with the header Content-Type: application/json`,
        ),
        undefined,
      );
    }
    const type = String(req.headers['content-type']).split(';')[0]?.trim().toLowerCase() as keyof typeof types;
    done(null, { text: typeof body === 'string' ? body : body.toString('utf8'), format: types[type] ?? 'csv' });
  });
}
