import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { contentSecurityPolicy } from '../http/csp.ts';
import { ERROR_HELP, ERROR_STATUS, type ErrorCode } from '../shared/errors.ts';

/** The reference page's policy: scripts and styles from this site only (Swagger UI sets inline style attributes). */
export const DOCS_CSP = contentSecurityPolicy();

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
/** Backticked words as code, the rest escaped. */
const prose = (s: string) => escapeHtml(s).replace(/`([^`]+)`/g, '<code>$1</code>');

const STYLE = `body{font:15px/1.5 system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#1b1f24}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #d0d7de;padding:.4rem .6rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}code{background:#f6f8fa;padding:0 .2rem;border-radius:3px}nav a{margin-right:1rem}td.n{text-align:right;font-variant-numeric:tabular-nums}
.wrap{overflow-x:auto}`;

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} — TSFM forecasting service</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/docs/assets/docs.css">
</head><body><nav><a href="/docs">API reference</a><a href="/docs/errors">Error codes</a><a href="/docs/models">Which model</a><a href="/openapi.json">/openapi.json</a></nav>
<h1>${escapeHtml(title)}</h1>
${body}
</body></html>`;
}

export const DOCS_STYLE = STYLE;

/** The reference: Swagger UI (served from node_modules) rendering /openapi.json. */
export function referencePage(): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>API reference — TSFM forecasting service</title><link rel="icon" href="data:,">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"><link rel="stylesheet" href="/docs/assets/docs.css">
</head><body><nav><a href="/docs">API reference</a><a href="/docs/errors">Error codes</a><a href="/docs/models">Which model</a><a href="/openapi.json">/openapi.json</a></nav>
<div id="reference"><noscript>This page needs JavaScript; the document itself is <a href="/openapi.json">/openapi.json</a>.</noscript></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script><script src="/docs/assets/init.js"></script>
</body></html>`;
}

/** Swagger UI's start-up (a file, so the policy needs no inline script). No validator badge: it would call a third-party site. */
export const REFERENCE_INIT = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#reference',
  validatorUrl: null,
  deepLinking: true,
  tryItOutEnabled: false,
  displayOperationId: true,
  defaultModelsExpandDepth: 0,
});
`;

/** Every error code of the closed list (src/shared/errors.ts), with its status, cause and fix. */
export function errorsPage(): string {
  const rows = (Object.keys(ERROR_STATUS) as ErrorCode[])
    .map(
      (c) =>
        `<tr id="${c}"><td><code>${c}</code></td><td class="n">${ERROR_STATUS[c]}</td><td>${prose(ERROR_HELP[c].cause)}</td><td>${prose(ERROR_HELP[c].fix)}</td></tr>`,
    )
    .join('\n');
  return page(
    'Error codes',
    `<p>Every error answer is <code>{"error": "…", "code": "…", "request_id": "…"}</code>; a 422 is <code>{"detail": [{"loc", "msg", "type"}]}</code> naming each field.
MCP tools report the same code in their error text. Quote the <code>request_id</code> (also the <code>x-request-id</code> header) when you ask for help.</p>
<div class="wrap"><table><thead><tr><th>code</th><th>status</th><th>cause</th><th>fix</th></tr></thead><tbody>
${rows}
</tbody></table></div>`,
  );
}

/** A catalog entry as the models page needs it. */
export interface ModelEntry {
  id: string;
  name: string;
  kind: string;
  description: string;
  available: boolean;
  avg_latency_ms: number;
  latency_samples: number;
}

interface Measured {
  smape?: number;
  mase?: number;
}

/** What the models page shows from bench/results. */
export interface BenchFigures {
  m3: Record<string, Measured>;
  m3At: string | null;
  series: number | null;
  /** Series per second by model (bench/results/speed.json). */
  speed: Record<string, number>;
  speedAt: string | null;
  /** How many M3 monthly series the speed run timed. */
  speedSeries: number | null;
  ett: { model: string; rows: string[] } | null;
}

/** The recorded benchmark figures (bench/results/*.json, written by `npm run bench:m3` and `bench:ttm`); absent files mean "not measured". */
export function readBenchFigures(root: string): BenchFigures {
  const read = (name: string): unknown => {
    try {
      return JSON.parse(readFileSync(join(root, 'bench', 'results', name), 'utf8'));
    } catch {
      return null;
    }
  };
  const m3 = read('m3-accuracy.json') as { generatedAt?: string; series?: number; models?: Record<string, Measured> } | null;
  const speed = read('speed.json') as { generatedAt?: string; rows?: { model: string; series?: number; seriesPerSecond: number }[] } | null;
  const ett = read('ttm-ett.json') as { model?: string; evals?: { dataset: string; mse: number; mae: number; windows: number; seconds: number }[] } | null;
  return {
    m3: m3?.models ?? {},
    m3At: m3?.generatedAt ?? null,
    series: m3?.series ?? null,
    speed: Object.fromEntries((speed?.rows ?? []).map((r) => [r.model, r.seriesPerSecond])),
    speedAt: speed?.generatedAt ?? null,
    speedSeries: speed?.rows?.[0]?.series ?? null,
    ett:
      ett?.model && Array.isArray(ett.evals)
        ? {
            model: ett.model,
            rows: ett.evals.map(
              (e) =>
                `<tr><td>${escapeHtml(e.dataset)}</td><td class="n">${e.mse.toFixed(4)}</td><td class="n">${e.mae.toFixed(4)}</td><td class="n">${Math.round((e.windows * 1) / e.seconds)}</td></tr>`,
            ),
          }
        : null,
  };
}

const fmt = (v: number | undefined, digits: number) => (typeof v === 'number' && Number.isFinite(v) ? v.toFixed(digits) : '—');

/** "Which model": the catalog with the measured accuracy and speed of each. */
export function modelsPage(models: readonly ModelEntry[], bench: BenchFigures): string {
  const rows = [...models]
    .sort((a, b) => (bench.m3[a.id]?.smape ?? Number.POSITIVE_INFINITY) - (bench.m3[b.id]?.smape ?? Number.POSITIVE_INFINITY))
    .map((m) => {
      const b = bench.m3[m.id];
      return `<tr><td><code>${escapeHtml(m.id)}</code></td><td>${escapeHtml(m.kind)}</td><td>${prose(m.description)}</td><td class="n">${fmt(b?.smape, 2)}</td><td class="n">${fmt(b?.mase, 3)}</td><td class="n">${fmt(bench.speed[m.id], 0)}</td><td class="n">${m.latency_samples > 0 ? m.avg_latency_ms.toFixed(0) : '—'}</td><td>${m.available ? 'yes' : 'no'}</td></tr>`;
    })
    .join('\n');
  const ett = bench.ett
    ? `<h2>${escapeHtml(bench.ett.model)} on ETT (long-horizon benchmark)</h2>
<p>Mean squared and absolute error on the standard ETT test windows (lower is better), measured by <code>npm run bench:ttm</code>; windows per second on this machine's pool.</p>
<div class="wrap"><table><thead><tr><th>dataset</th><th>MSE</th><th>MAE</th><th>windows/s</th></tr></thead><tbody>${bench.ett.rows.join('')}</tbody></table></div>`
    : '';
  return page(
    'Which model',
    `<p>As recorded on the M3 competition's ${bench.series ?? ''} series: <code>combo</code> is the most accurate statistical model but among the slowest;
<code>theta</code> is nearly as accurate and far faster, a good default; <code>auto-ets</code> and <code>auto-arima</code> come next.
<code>seasonal-naive</code> is the yardstick: a model that does worse on your data is not worth its price. When unsure, POST /v1/forecast/ensemble ranks candidates on your own series by backtest.</p>
<p>Accuracy: sMAPE (%) and MASE on M3 (lower is better), from <code>npm run bench:m3</code>${bench.m3At ? ` (recorded ${escapeHtml(bench.m3At.slice(0, 10))})` : ''};
speed: series per second on ${bench.speedSeries ?? 'the'} M3 monthly series, 2 workers, from <code>npm run bench:speed</code>${bench.speedAt ? ` (recorded ${escapeHtml(bench.speedAt.slice(0, 10))})` : ''}.
Latency: this server's measured average per call, once it has served some. A dash means not measured.</p>
<div class="wrap"><table><thead><tr><th>model</th><th>kind</th><th>description</th><th>sMAPE</th><th>MASE</th><th>series/s</th><th>latency ms</th><th>available</th></tr></thead><tbody>
${rows}
</tbody></table></div>
${ett}`,
  );
}
