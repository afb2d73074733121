import { Readable } from 'node:stream';
import { yieldTurn as nextTurn } from '../shared/turns.ts';
import type { FastifyRequest } from 'fastify';
import type { Deps } from '../deps-types.ts';
import { AppError } from '../shared/errors.ts';
import { jsonBody } from '../shared/json.ts';
import { pointsOf, type Caller, type Operation } from '../shared/operation.ts';
import { CLIENT_HEADER_DOC, usageSourceOf } from '../shared/usage-source.ts';
import { isLargeBody } from './app.ts';
import { credentialFrom } from './auth.ts';
import { clientLeftSignal } from './client-signal.ts';
import { restItemReport } from './errors.ts';
import { ErrorBody, errors, IdempotencyKey, ValidationErrorBody } from '../shared/schemas.ts';
import { Receipt } from '../shared/receipt.ts';
import type { ZApp } from './types.ts';
import { z } from 'zod';

/** Serialised answers up to this size are sent as one string (one write, a content-length); larger ones are streamed. */
const ONE_WRITE_BYTES = 256 * 1024;

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

/** The request header of operations that are idempotent (`idempotent()`, docs/idempotency.md). */
const IdempotencyHeaders = z.looseObject({
  'idempotency-key': IdempotencyKey.optional().describe(
    'Makes a retry safe: a repeat with the same key and body within the key lifetime (24 h by default) returns the stored answer (header idempotent-replayed: true) and charges nothing; ' +
      'the same key with another body is 422 idempotency_mismatch; a repeat while the first is running waits for it (5 s by default), then 409 idempotency_in_progress. ' +
      '1 to 255 printable ASCII characters, e.g. a UUID; scoped to your account.',
  ),
});

/** The response headers of every answer of a credit-spending operation (documented in the OpenAPI, set from the call's receipt). */
export const COST_HEADERS: Record<string, { type: string; description: string }> = {
  'x-credits-charged': { type: 'integer', description: 'Credits this call was charged (0 on an idempotent replay).' },
  'x-credits-remaining': {
    type: 'integer',
    description: 'Prepaid (free) credits left on the account after this call; metered use beyond them is billed and not counted here.',
  },
  'x-request-cost-nano-usd': { type: 'integer', description: 'Price of this call in nano-USD (credits × the credit price; 0 on a replay).' },
};
const REPLAY_HEADER = {
  'idempotent-replayed': { type: 'string', description: 'true when the answer is the stored one of an earlier request with the same Idempotency-Key.' },
};

/** Idempotent operations answer 422 in both shapes: `detail[]` for a bad request, `{error, code: idempotency_mismatch}` for a reused key. */
const Idempotent422 = z.union([ValidationErrorBody, ErrorBody]);

function costHeaders(receipt: Receipt): Record<string, string> {
  const h: Record<string, string> = {
    'x-credits-charged': String(receipt.credits),
    'x-request-cost-nano-usd': String(receipt.costNanoUsd),
  };
  if (receipt.creditsRemaining !== null) h['x-credits-remaining'] = String(receipt.creditsRemaining);
  if (receipt.replayed) h['idempotent-replayed'] = 'true';
  return h;
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
        ...(op.readsCredential ? { optionalCredential: true } : {}),
        // The typed items of a batch are what a client should see, though REST validates them one by one.
        ...(op.mcpInput && part === 'body' ? { openapiBody: op.mcpInput } : {}),
        ...(op.scope ? { scope: op.scope } : {}),
        ...(op.bodyColumns ? { bodyColumns: op.bodyColumns } : {}),
        points: (req: FastifyRequest) => pointsOf(op, inputOf(req, part)),
        // Read by the OpenAPI transform (src/http/app.ts): headers of the 200 answer.
        ...(op.spendsCredits ? { responseHeaders: { ...COST_HEADERS, ...(op.idempotent ? REPLAY_HEADER : {}) } } : {}),
      },
      schema: {
        operationId: op.id,
        tags: op.tags,
        summary: op.summary,
        example: op.example,
        description: op.spendsCredits ? `${op.description} ${CLIENT_HEADER_DOC}` : op.description,
        ...(op.auth === 'public' ? {} : { security: [{ bearer: [] }] }),
        ...inputSchemas(op, part),
        ...(op.idempotent ? { headers: IdempotencyHeaders } : {}),
        response: { 200: op.output, ...errors(...op.errors), ...(op.idempotent ? { 409: ErrorBody, 422: Idempotent422 } : {}) },
      },
      handler: async (req, reply) => {
        const principal = req.principal;
        if (principal && op.auth !== 'public' && !op.auth.includes(principal.kind)) {
          throw new AppError('forbidden', `${op.id} does not accept ${principal.kind} credentials`);
        }
        const receipt = new Receipt();
        const key = req.headers['idempotency-key'];
        const caller: Caller = {
          principal: op.auth === 'public' ? null : principal,
          credential: () => credentialFrom(req),
          requestId: req.id,
          source: op.spendsCredits && principal ? usageSourceOf(req.headers, principal, op.restSource ?? 'api') : (op.restSource ?? 'api'),
          reportError: (err, id) => restItemReport(err, id, req.log),
          idempotencyKey: op.idempotent && typeof key === 'string' ? key : null,
          receipt,
          // A client that leaves before the answer stops the call: its job is dropped or stopped, nothing is charged.
          signal: clientLeftSignal(reply.raw),
        };
        // Schema validation of a large body ran in this turn: the service's own checks get the next one.
        if (isLargeBody(req)) await nextTurn();
        if (op.runSerialised) {
          // Serialised before the debit; a large answer is streamed slice by slice (never joined
          // into one string), a small one goes out in one write.
          const json = await op.runSerialised({ deps, caller, input: inputOf(req, part) });
          if (op.spendsCredits) reply.headers(costHeaders(receipt));
          const body = json.bytes <= ONE_WRITE_BYTES ? jsonBody(json) : Readable.from(json.chunks, { objectMode: false });
          return reply.type('application/json; charset=utf-8').send(body);
        }
        const out = await op.run({ deps, caller, input: inputOf(req, part) });
        if (op.spendsCredits) reply.headers(costHeaders(receipt));
        return out;
      },
    });
  }
}
