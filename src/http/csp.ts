/**
 * The Content-Security-Policy of the web app and of /docs: scripts, styles, images and connections from this site
 * only. Inline style attributes are allowed (Swagger UI and uPlot set them); inline scripts only by the hashes a page
 * passes. (The OAuth consent and error pages keep their stricter policy in src/oauth/page.ts.)
 */
export function contentSecurityPolicy(opts: { scriptHashes?: readonly string[] } = {}): string {
  const scripts = ["'self'", ...(opts.scriptHashes ?? []).map((h) => `'sha256-${h}'`)].join(' ');
  return [
    "default-src 'self'",
    `script-src ${scripts}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}
