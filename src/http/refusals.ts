import type { FastifyBaseLogger, FastifyInstance } from 'fastify';

/** The most of a refusal's message that is logged (messages may quote a field's value). */
const MAX_MESSAGE = 300;

/**
 * Every 4xx answer is logged once at debug level with its reason: the status, the error code, the
 * message and, for a 422, each problem's place and message (never the offending values, the
 * request body or a credential). One hook on the way out covers every route, whichever part of
 * the app refused the request (error mapper, 404/405 handler, hooks, OAuth, /mcp).
 */
export function registerRefusalLog(app: FastifyInstance): void {
  app.addHook('onSend', async (req, reply, payload) => {
    const status = reply.statusCode;
    // A silenced logger (tests: logger false) has no isLevelEnabled.
    const log = req.log as FastifyBaseLogger & { isLevelEnabled?: (level: string) => boolean };
    if (status < 400 || status >= 500 || !log.isLevelEnabled?.('debug')) return payload;
    log.debug({ status, ...reasonOf(payload, String(reply.getHeader('content-type') ?? '')) }, 'request refused');
    return payload;
  });
}

const clip = (s: unknown): string | undefined => (typeof s === 'string' ? (s.length > MAX_MESSAGE ? `${s.slice(0, MAX_MESSAGE)}…` : s) : undefined);

/** The reason of a refusal from its body: `{error, code}`, 422 `{detail}`, OAuth's `{error, error_description}`, JSON-RPC's `{error: {message}}`. */
export function reasonOf(payload: unknown, contentType: string): Record<string, unknown> {
  if (typeof payload !== 'string' || !contentType.includes('json')) return { reason: contentType.split(';')[0] || 'no body' };
  let body: unknown;
  try {
    body = JSON.parse(payload);
  } catch {
    return { reason: 'unreadable body' };
  }
  if (!body || typeof body !== 'object') return { reason: 'no reason in body' };
  const b = body as Record<string, unknown>;
  if (Array.isArray(b.detail)) {
    const problems = (b.detail as Record<string, unknown>[]).slice(0, 10).map((d) => ({
      loc: Array.isArray(d.loc) ? (d.loc as unknown[]).join('.') : undefined,
      msg: clip(d.msg),
      type: d.type,
    }));
    return { reason: 'validation_error', problems };
  }
  if (typeof b.code === 'string') return { reason: b.code, message: clip(b.error) };
  if (typeof b.error === 'string') return { reason: b.error, message: clip(b.error_description) };
  const rpc = b.error as { message?: unknown } | undefined;
  if (rpc && typeof rpc === 'object') return { reason: 'jsonrpc_error', message: clip(rpc.message) };
  return { reason: 'no reason in body' };
}
