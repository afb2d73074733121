import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { z } from 'zod';
import { createTestApp, type TestApp } from '../helpers/app.ts';

/**
 * What a good client generator and a reader need from every operation, whoever adds it:
 * a summary, a description and a worked example that the route's own schemas accept; security
 * stated; responses described. The generator (src/http/openapi*.ts) supplies what it can by
 * construction; this says clearly what a new route still has to add.
 */
type Json = Record<string, any>;
let t: TestApp;
let doc: Json;
before(async () => {
  t = await createTestApp();
  doc = JSON.parse((await t.app.inject({ method: 'GET', url: '/openapi.json' })).body);
});
after(() => t.close());

function operations(): { method: string; path: string; op: Json }[] {
  return Object.entries(doc.paths as Json).flatMap(([path, item]) =>
    Object.entries(item as Json).map(([method, op]) => ({ method: method.toUpperCase(), path, op })),
  );
}

const hasExample = (op: Json) =>
  Object.values(op.requestBody?.content ?? {}).some((m: any) => m.example !== undefined) ||
  (op.parameters ?? []).some((p: Json) => p.example !== undefined) ||
  Object.values(op.responses ?? {}).some((r: any) => Object.values(r.content ?? {}).some((m: any) => m.example !== undefined));

test('every operation has a summary, a description and an example', () => {
  const missing: string[] = [];
  for (const { method, path, op } of operations()) {
    const lacks = [!op.summary && 'summary', !op.description && 'description', !hasExample(op) && 'example'].filter(Boolean);
    if (lacks.length > 0)
      missing.push(`${method} ${path} (${op.operationId}): add ${lacks.join(', ')} to its route schema (example: {request, response}) or declaration`);
  }
  assert.deepEqual(missing, [], `Operations missing documentation:\n${missing.join('\n')}`);
});

test('every example is accepted by the route’s own schemas', () => {
  const bad: string[] = [];
  for (const [key, schema] of t.app.routeSchemas) {
    const s = schema as Json | undefined;
    if (!s?.example || s.hide) continue;
    const { request, response } = s.example as { request?: unknown; response?: unknown };
    if (request !== undefined) {
      const parts = ['body', 'querystring', 'params'].map((p) => s[p] as z.ZodObject | undefined).filter((p): p is z.ZodObject => p !== undefined);
      // No input schema: a body documented only (config.openapiBody, e.g. /mcp's JSON-RPC), which the route parses itself.
      for (const part of parts) {
        // One example for the whole call: path/query parameters by name, the body the rest.
        const params = (s.params ?? s.querystring) as z.ZodObject | undefined;
        const input =
          s.body === part
            ? Object.fromEntries(Object.entries(request as Json).filter(([k]) => !(params && k in params.shape)))
            : Object.fromEntries(Object.entries(request as Json).filter(([k]) => k in part.shape));
        const r = part.safeParse(input);
        if (!r.success) bad.push(`${key}: request example: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
      }
    }
    if (response !== undefined) {
      const out = (s.response?.[200] ?? s.response?.[201]) as z.ZodType | undefined;
      const r = out?.safeParse(response);
      if (!r?.success)
        bad.push(`${key}: response example: ${r ? r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') : 'no 200/201 schema'}`);
    }
  }
  assert.deepEqual(bad, [], bad.join('\n'));
});

test('security is stated on every operation: none on public ones, bearer on the others', () => {
  const wrong: string[] = [];
  for (const { method, path, op } of operations()) {
    if (!Array.isArray(op.security)) wrong.push(`${method} ${path}: no security`);
  }
  assert.deepEqual(wrong, []);
  const byId = new Map(operations().map((o) => [o.op.operationId, o.op]));
  assert.deepEqual(byId.get('getHealth')?.security, []);
  assert.deepEqual(byId.get('listModels')?.security, []);
  assert.deepEqual(byId.get('forecast')?.security, [{ bearer: [] }]);
  // validateCredential checks the credential it is called with: a client must be able to send it.
  assert.deepEqual(byId.get('validateCredential')?.security, [{ bearer: [] }, {}]);
});

test('responses are described: no "Default Response", errors list their codes, limits and ids in headers', () => {
  const text = JSON.stringify(doc);
  assert.ok(!text.includes('Default Response'), 'a response is still described as "Default Response"');
  const e429 = doc.components.responses.Error429;
  assert.match(e429.description, /rate_limit_exceeded/);
  assert.ok(e429.headers['retry-after'] && e429.headers['x-ratelimit-reset']);
  assert.match(doc.components.responses.Error500.description, /internal_error/);
  const forecast = doc.paths['/v1/forecast'].post;
  for (const s of ['402', '415', '422', '429', '500']) assert.ok(forecast.responses[s], `forecast documents ${s}`);
  assert.ok(forecast.responses['200'].headers['x-ratelimit-remaining'], 'rate-limit headers on a limited operation');
  assert.ok(forecast.responses['200'].headers['x-request-id']);
});

test('every operation may answer 422: the unstorable-string check covers any query (so documenting it is true)', async () => {
  const res = await t.app.inject({ method: 'GET', url: '/healthz?x=%00' });
  assert.equal(res.statusCode, 422);
  assert.ok(doc.paths['/healthz'].get.responses['422']);
});

test('one schema per concept: no unreachable components, no ±2^53 bounds, e-mail formats kept', () => {
  const text = JSON.stringify(doc);
  assert.ok(!text.includes('9007199254740991'), 'zod safe-integer bounds leaked into the document');
  const names = Object.keys(doc.components.schemas);
  const twins = names.filter((n) => n.endsWith('Input') && names.includes(n.slice(0, -5)));
  for (const n of twins) assert.notDeepEqual(doc.components.schemas[n], doc.components.schemas[n.slice(0, -5)], `${n} duplicates ${n.slice(0, -5)}`);
  const body = doc.components.schemas.RegisterRequest;
  assert.equal(body.properties.email.format, 'email');
});

test('form and HTML routes say so; batch items are typed', () => {
  assert.ok(doc.paths['/oauth/token'].post.requestBody.content['application/x-www-form-urlencoded']);
  assert.ok(doc.paths['/verify-email'].get.responses['200'].content['text/html']);
  assert.ok(doc.paths['/api/auth/oauth/start'].get.responses['302'].headers.location);
  const batch = doc.paths['/v1/forecast/batch'].post.requestBody.content['application/json'].schema;
  assert.equal(batch.properties.requests.items.$ref, '#/components/schemas/ForecastRequest', 'batch items documented as forecast requests, not unknown[]');
});
