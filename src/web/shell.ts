import { createHash } from 'node:crypto';
import { contentSecurityPolicy } from '../http/csp.ts';

/** What the browser app needs to know before its first API call (no secrets). */
export interface WebConfig {
  publicBaseUrl: string;
  identityProviders: { name: string; label: string }[];
  paymentsProvider: 'none' | 'local' | 'stripe';
  /**
   * The request carried a session cookie (HttpOnly, so the page cannot see it): without one the
   * app knows the visitor is signed out and does not ask /api/account/me (a 400 in the console).
   */
  session?: boolean;
}

/**
 * The bare module names the browser code imports, mapped to the files the server hands out from
 * node_modules (see routes.ts). No CDN: the pages work offline.
 */
export const IMPORT_MAP = JSON.stringify({
  imports: {
    preact: '/vendor/preact/preact.mjs',
    'preact/hooks': '/vendor/preact-hooks/hooks.mjs',
    htm: '/vendor/htm/htm.module.js',
    uplot: '/vendor/uplot/uPlot.esm.js',
    'd3-dsv': '/vendor/d3-dsv/d3-dsv.mjs',
  },
});

const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('base64');

/** The one inline script is the import map; the policy allows exactly it by its hash. */
export const CONTENT_SECURITY_POLICY = contentSecurityPolicy({ scriptHashes: [sha256(IMPORT_MAP)] });

/** JSON inside a <script type="application/json"> element: `<` is escaped so no tag can close it. */
const jsonForHtml = (v: unknown) => JSON.stringify(v).replace(/</g, '\\u003c');

/** The same HTML for every page: the app reads location.pathname and renders the page. */
export function shellHtml(cfg: WebConfig): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>TSFM — forecasting service</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/vendor/uplot/uPlot.min.css">
<link rel="stylesheet" href="/static/app.css">
<script type="importmap">${IMPORT_MAP}</script>
<script type="application/json" id="tsfm-config">${jsonForHtml(cfg)}</script>
<script type="module" src="/static/main.js"></script>
</head>
<body>
<div id="app"><noscript><p>This page needs JavaScript. The API itself works without it: see <a href="/openapi.json">/openapi.json</a>.</p></noscript></div>
</body>
</html>
`;
}
