import { Readable } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import type { Deps } from '../deps-types.ts';
import { AppError } from '../shared/errors.ts';
import { pointsOf, type Caller, type Operation } from '../shared/operation.ts';
import { CLIENT_HEADER_DOC, usageSourceOf } from '../shared/usage-source.ts';
import { credentialFrom } from './auth.ts';
import { restItemReport } from './errors.ts';
import { errors } from '../shared/schemas.ts';
import type { ZApp } from './types.ts';
import type { z } from 'zod';

type InputPart = 'body' | 'querystring' | 'params' | 'params+body';

/**
 * Where a REST call carries an operation's input: POST/PATCH → body (plus the path parameters when
 * the path has some); GET/DELETE → path parameters if any, else query.
 */
export function inputPartOf(op: Pick<Operation, 'method' | 'path'>): InputPart {
  const params = op.path.includes('/:');
  if (op.method === 'POST' || op.method === 'PATCH') return params ? 'params+body' : 'body';
  return params ? 'params' : 'querystring';
}

function inputOf(req: FastifyRequest, part: InputPart): unknown {
  if (part === 'body') return req.body ?? {};
  if (part === 'params+body') return { ...((req.body as object | null | undefined) ?? {}), ...(req.params as object) };
  return part === 'params' ? req.params : req.query;
}

/** The REST schemas of an operation's input: one part, or its path parameters and the rest as the body. */
function inputSchemas(op: Operation, part: InputPart): Record<string, z.ZodType> {
  if (Object.keys(op.input.shape).length === 0) return {};
  if (part !== 'params+body') return { [part]: part === 'body' && op.optionalBody ? op.input.nullish() : op.input };
  const names = [...op.path.matchAll(/:(\w+)/g)].map((m) => m[1] as string);
  const mask = Object.fromEntries(names.map((n) => [n, true as const])) as Record<string, true> & Record<number, never>;
  const params = op.input.pick(mask);
  const body = op.input.omit(mask);
  const hasBody = Object.keys(body.shape).length > 0;
  return { params, ...(hasBody ? { body: op.optionalBody ? body.nullish() : body } : {}) };
}

/** The REST adapter: every declared operation becomes one route with its schemas, auth and points. */
export function registerOperations(app: ZApp, deps: Deps, ops: readonly Operation[]): void {
  for (const op of ops) {
    const part = inputPartOf(op);
    app.route({
      method: op.method,
      url: op.path,
      config: {
        auth: op.auth === 'public' ? 'public' : 'user',
        ...(op.scope ? { scope: op.scope } : {}),
        points: (req: FastifyRequest) => pointsOf(op, inputOf(req, part)),
      },
      schema: {
        operationId: op.id,
        tags: op.tags,
        summary: op.summary,
        description: op.spendsCredits ? `${op.description} ${CLIENT_HEADER_DOC}` : op.description,
        ...(op.auth === 'public' ? {} : { security: [{ bearer: [] }] }),
        ...inputSchemas(op, part),
        response: { 200: op.output, ...errors(...op.errors) },
      },
      handler: async (req, reply) => {
        const principal = req.principal;
        if (principal && op.auth !== 'public' && !op.auth.includes(principal.kind)) {
          throw new AppError('forbidden', `${op.id} does not accept ${principal.kind} credentials`);
        }
        const caller: Caller = {
          principal: op.auth === 'public' ? null : principal,
          credential: () => credentialFrom(req),
          requestId: req.id,
          source: op.spendsCredits && principal ? usageSourceOf(req.headers, principal, op.restSource ?? 'api') : (op.restSource ?? 'api'),
          reportError: (err, id) => restItemReport(err, id, req.log),
        };
        if (op.runSerialised) {
          // Serialised before the debit, streamed slice by slice (never joined into one string).
          const json = await op.runSerialised({ deps, caller, input: inputOf(req, part) });
          return reply.type('application/json; charset=utf-8').send(Readable.from(json.chunks, { objectMode: false }));
        }
        return op.run({ deps, caller, input: inputOf(req, part) });
      },
    });
  }
}
