import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import pkg from '../../package.json' with { type: 'json' };
import { decodeJob, encodeResult, InferRequest, modelMetadata, type OipError } from '../engine/remote/oip.ts';
import { EngineError, type Engine, type EngineErrorKind } from '../engine/types.ts';
import { instrumentEngine } from '../metrics/instrument.ts';
import { createMetrics } from '../metrics/metrics.ts';
import { hashSecret, secretMatches } from '../shared/secrets.ts';

/**
 * ROLE=inference: the engine's models over the Open Inference Protocol v2 (REST), the protocol
 * Triton and KServe speak, so a gateway (or any OIP client) can run them on another machine.
 * No accounts, credits or database: the gateway meters; this node only computes. With
 * INFERENCE_TOKEN set, model routes need `Authorization: Bearer <token>` (health stays open for
 * probes). Model names may contain '/', sent literally or as %2F.
 */
export interface InferenceNodeOptions {
  engine: Engine;
  token: string | null;
  bodyLimitBytes: number;
  logLevel: string | false;
}

const STATUS: Record<EngineErrorKind, number> = {
  bad_input: 400,
  unknown_model: 404,
  unavailable: 503,
  busy: 503,
  // Not produced here (inference nodes serve no tenants), listed for the type.
  share_exceeded: 503,
  timeout: 504,
  failed: 500,
};

export async function buildInferenceNode(opts: InferenceNodeOptions): Promise<FastifyInstance> {
  const metrics = createMetrics({ defaultMetrics: opts.logLevel !== false });
  const engine = instrumentEngine(opts.engine, metrics);
  const tokenHash = opts.token === null ? null : hashSecret(opts.token);
  const app = Fastify({
    logger: opts.logLevel === false ? false : { level: opts.logLevel, redact: ['req.headers.authorization'] },
    bodyLimit: opts.bodyLimitBytes,
    routerOptions: { ignoreTrailingSlash: true },
  });

  const fail = (reply: FastifyReply, status: number, body: OipError, headers: Record<string, string> = {}) => reply.code(status).headers(headers).send(body);

  app.setErrorHandler((err: Error & { statusCode?: number }, _req, reply) => {
    // Fastify's own refusals (malformed JSON 400, 413, 415) keep their status; anything else is ours.
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    return fail(reply, status, { error: status === 500 ? 'internal error' : err.message });
  });
  app.setNotFoundHandler((req, reply) => fail(reply, 404, { error: `no route for ${req.method} ${req.url.split('?')[0]}` }));

  const authorised = (req: FastifyRequest): boolean => {
    if (tokenHash === null) return true;
    const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
    return Boolean(m?.[1] && secretMatches(m[1], tokenHash));
  };

  app.get('/v2/health/live', async () => ({ live: true }));
  app.get('/v2/health/ready', async () => ({ ready: true }));
  app.get('/v2', async () => ({ name: 'tsfm-inference', version: pkg.version, extensions: [] }));
  app.get('/metrics', async (req, reply) => {
    if (!authorised(req)) return fail(reply, 401, { error: 'needs Authorization: Bearer <INFERENCE_TOKEN>' });
    void reply.type(metrics.registry.contentType);
    return metrics.registry.metrics();
  });

  /** `/v2/models/<name>[/ready|/infer]`, where <name> may itself contain slashes. */
  const parse = (req: FastifyRequest): { name: string; action: 'metadata' | 'ready' | 'infer' } => {
    const rest = decodeURIComponent((req.params as { '*': string })['*'] ?? '');
    for (const action of ['ready', 'infer'] as const) {
      if (rest.endsWith(`/${action}`)) return { name: rest.slice(0, -action.length - 1), action };
    }
    return { name: rest, action: 'metadata' };
  };
  const find = (name: string) => engine.models().find((m) => m.id === name);

  app.get('/v2/models/*', async (req, reply) => {
    if (!authorised(req)) return fail(reply, 401, { error: 'needs Authorization: Bearer <INFERENCE_TOKEN>' });
    const { name, action } = parse(req);
    if (action === 'infer') return fail(reply, 405, { error: 'inference is a POST' }, { allow: 'POST' });
    const info = find(name);
    if (!info) return fail(reply, 404, { error: `unknown model '${name}'`, kind: 'unknown_model' });
    if (action === 'ready') return { name, ready: info.available };
    return modelMetadata(info);
  });

  app.post('/v2/models/*', async (req, reply) => {
    if (!authorised(req)) return fail(reply, 401, { error: 'needs Authorization: Bearer <INFERENCE_TOKEN>' });
    const { name, action } = parse(req);
    if (action !== 'infer') return fail(reply, 405, { error: 'only /infer takes a POST' }, { allow: 'GET' });
    const parsed = InferRequest.safeParse(req.body);
    if (!parsed.success) {
      const first = parsed.error.issues[0];
      return fail(reply, 400, {
        error: `malformed inference request: ${first ? `${first.path.join('.') || 'body'}: ${first.message}` : 'invalid'}`,
        kind: 'bad_input',
      });
    }
    try {
      const job = decodeJob(name, parsed.data);
      const forecasts = await engine.forecast(job);
      return encodeResult(name, job, forecasts, parsed.data.id);
    } catch (err) {
      if (!(err instanceof EngineError)) throw err;
      // A node serves no tenants, so no share: the wire's kinds stay those of OIP (oip.ts).
      const body: OipError = { error: err.message, kind: err.kind === 'share_exceeded' ? 'busy' : err.kind };
      if (err.seriesIndex !== undefined) body.series_index = err.seriesIndex;
      if (err.field !== undefined) body.field = err.field;
      return fail(reply, STATUS[err.kind], body, err.kind === 'busy' ? { 'retry-after': '1' } : {});
    }
  });

  app.addHook('onClose', async () => engine.close());
  return app;
}
