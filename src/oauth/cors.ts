import type { ZApp } from '../http/types.ts';

const ALLOW_HEADERS = 'authorization, content-type, mcp-protocol-version, mcp-session-id, last-event-id, x-request-id';
const EXPOSE_HEADERS = 'www-authenticate, mcp-session-id, mcp-protocol-version, x-request-id';

/**
 * Browser-based MCP clients (e.g. MCP Inspector) call discovery, registration, token and /mcp
 * from another origin. These endpoints authenticate with headers or form fields, never cookies,
 * so any origin may call them; credentials (cookies) are never allowed cross-origin.
 */
export function allowCrossOrigin(app: ZApp, paths: string[]): void {
  const set = new Set(paths);
  app.addHook('onRequest', async (req, reply) => {
    const path = req.url.split('?')[0] ?? '';
    if (!set.has(path) || req.headers.origin === undefined) return;
    reply.header('access-control-allow-origin', '*').header('access-control-expose-headers', EXPOSE_HEADERS);
  });
  for (const path of paths) {
    app.options(path, { schema: { hide: true } }, async (_req, reply) =>
      reply
        .code(204)
        .header('access-control-allow-origin', '*')
        .header('access-control-allow-methods', 'GET, POST, DELETE, OPTIONS')
        .header('access-control-allow-headers', ALLOW_HEADERS)
        .header('access-control-max-age', '600')
        .send(),
    );
  }
}
