import { createReadStream } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyReply } from 'fastify';
import type { Deps } from '../deps-types.ts';
import type { ZApp } from '../http/types.ts';
import { DOCS_CSP, DOCS_STYLE, errorsPage, modelsPage, readBenchFigures, referencePage, REFERENCE_INIT } from './pages.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Swagger UI's prebuilt files, served as they are from node_modules (no CDN, no build step). */
const SWAGGER_UI_DIR = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const SWAGGER_UI_FILES = [
  ['swagger-ui-bundle.js', 'text/javascript; charset=utf-8'],
  ['swagger-ui.css', 'text/css; charset=utf-8'],
] as const;

/**
 * The human-readable documentation (HTML pages, so routes rather than declarations; ADR 0017):
 * /docs the API reference rendered from /openapi.json, /docs/errors every error code with its
 * cause and fix (from src/shared/errors.ts), /docs/models which model to use, with the measured
 * accuracy and speed (bench/results, read once at start).
 */
export async function registerDocsRoutes(app: ZApp, deps: Deps): Promise<void> {
  const headers = { 'content-security-policy': DOCS_CSP, 'x-content-type-options': 'nosniff', 'referrer-policy': 'same-origin', 'cache-control': 'no-cache' };
  const html = (reply: FastifyReply, body: string) => reply.type('text/html; charset=utf-8').headers(headers).send(body);
  const reference = referencePage();
  const errors = errorsPage();
  const bench = readBenchFigures(ROOT);

  app.get('/docs', { schema: { hide: true } }, async (_req, reply) => html(reply, reference));
  app.get('/docs/errors', { schema: { hide: true } }, async (_req, reply) => html(reply, errors));
  // The catalog's availability and measured latency change while the server runs: rendered per request (a small table).
  app.get('/docs/models', { schema: { hide: true } }, async (_req, reply) => html(reply, modelsPage(deps.catalog.list(), bench)));
  app.get('/docs/assets/init.js', { schema: { hide: true } }, async (_req, reply) =>
    reply.type('text/javascript; charset=utf-8').header('x-content-type-options', 'nosniff').send(REFERENCE_INIT),
  );
  app.get('/docs/assets/docs.css', { schema: { hide: true } }, async (_req, reply) =>
    reply.type('text/css; charset=utf-8').header('x-content-type-options', 'nosniff').send(DOCS_STYLE),
  );
  // Only the two files the page loads: nothing else of the package is reachable.
  for (const [file, type] of SWAGGER_UI_FILES) {
    app.get(`/docs/assets/${file}`, { schema: { hide: true } }, async (_req, reply) =>
      reply
        .type(type)
        .headers({ 'x-content-type-options': 'nosniff', 'cache-control': 'public, max-age=3600' })
        .send(createReadStream(join(SWAGGER_UI_DIR, file))),
    );
  }
}
