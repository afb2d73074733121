import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createClient } from '@hey-api/openapi-ts';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { OPENAPI_PATH } from '../../scripts/sdk-generate.ts';

/**
 * Clients that users generate from /openapi.json must work: openapi-typescript (+ openapi-fetch)
 * and @hey-api/openapi-ts generate into a temporary folder, tsc type-checks them together with a
 * file that sends every documented request example through both, and no request body type holds
 * `unknown` or `any` (ADR 0017). sdk/openapi.json is the served document (test/http/openapi-lint.test.ts).
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
type Json = Record<string, any>;

const pascal = (id: string) => id.charAt(0).toUpperCase() + id.slice(1);

test('openapi-typescript and hey-api clients type-check, take every example, and type request bodies without unknown', async () => {
  // Inside node_modules so that the generated code resolves openapi-fetch and TypeScript's lib as a user's project would.
  const dir = mkdtempSync(join(root, 'node_modules', '.tmp-openapi-clients-'));
  try {
    const text = readFileSync(OPENAPI_PATH, 'utf8');
    const doc = JSON.parse(text) as Json;
    mkdirSync(join(dir, 'ot'));
    // As the SDK does (scripts/sdk-generate.ts): a field with a default is optional in a request. openapi-typescript's
    // own default (defaultNonNullable) would make it required, which is right for answers only.
    writeFileSync(join(dir, 'ot', 'schema.ts'), astToString(await openapiTS(text, { defaultNonNullable: false })));
    await createClient({
      input: OPENAPI_PATH,
      output: { path: join(dir, 'hey') },
      plugins: ['@hey-api/client-fetch', '@hey-api/typescript', '@hey-api/sdk'],
      logs: { level: 'silent', file: false },
    });

    const lines = [
      "import createFetchClient from 'openapi-fetch';",
      "import type { paths } from './ot/schema';",
      "import type * as Hey from './hey/types.gen';",
      "import { forecast } from './hey/sdk.gen';",
      "const api = createFetchClient<paths>({ baseUrl: 'http://127.0.0.1:8000' });",
      "export const calls = [api.POST('/v1/forecast', { body: { model: 'auto-ets', inputs: [{ target: [1, 2, 3] }] } }), forecast({ body: { model: 'auto-ets', inputs: [{ target: [1, 2, 3] }] } })];",
    ];
    const probes: { name: string; what: string }[] = [];
    let i = 0;
    for (const [path, item] of Object.entries(doc.paths as Json)) {
      for (const [method, op] of Object.entries(item as Json)) {
        for (const [media, content] of Object.entries((op.requestBody?.content ?? {}) as Json)) {
          const ot = `OT_${i}`;
          const hey = `HEY_${i}`;
          lines.push(
            `export type ${ot} = NonNullable<paths[${JSON.stringify(path)}][${JSON.stringify(method)}]['requestBody']>['content'][${JSON.stringify(media)}];`,
          );
          lines.push(`export type ${hey} = Hey.${pascal(op.operationId)}Data['body'];`);
          if (content.example !== undefined) {
            lines.push(`export const ex_ot_${i}: ${ot} = ${JSON.stringify(content.example)};`);
            lines.push(`export const ex_hey_${i}: ${hey} = ${JSON.stringify(content.example)};`);
          }
          probes.push({ name: ot, what: `openapi-typescript ${method.toUpperCase()} ${path} (${media})` });
          probes.push({ name: hey, what: `hey-api ${op.operationId} body` });
          i++;
        }
      }
    }
    const probeFile = join(dir, 'probe.ts');
    writeFileSync(probeFile, `${lines.join('\n')}\n`);

    const program = ts.createProgram([probeFile], {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.ESNext,
      moduleResolution: ts.ModuleResolutionKind.Bundler,
      lib: ['lib.es2022.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
      skipLibCheck: true,
      types: [],
    });
    const diagnostics = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n').slice(0, 400));
    assert.deepEqual(diagnostics, [], `the generated clients do not type-check:\n${diagnostics.join('\n')}`);

    const checker = program.getTypeChecker();
    const source = program.getSourceFile(probeFile);
    assert.ok(source);
    const aliases = new Map<string, ts.Type>();
    ts.forEachChild(source, (node) => {
      if (ts.isTypeAliasDeclaration(node)) aliases.set(node.name.text, checker.getTypeAtLocation(node.name));
    });
    const found: string[] = [];
    for (const { name, what } of probes) {
      const type = aliases.get(name);
      assert.ok(type, name);
      if (type.flags & ts.TypeFlags.Never) found.push(`${what}: never (no body type)`);
      const where = unknownIn(checker, type, '', new Set());
      if (where !== null) found.push(`${what}: unknown at ${where || '(the body)'}`);
    }
    assert.deepEqual(found, [], `request bodies typed with unknown:\n${found.join('\n')}`);
    assert.ok(probes.length >= 40, `${probes.length} request bodies checked`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** The first place in `type` that is `unknown` or `any` (a path like `.inputs[].metadata{}`), or null. */
function unknownIn(checker: ts.TypeChecker, type: ts.Type, path: string, seen: Set<ts.Type>): string | null {
  if (type.flags & (ts.TypeFlags.Unknown | ts.TypeFlags.Any)) return path;
  if (seen.has(type)) return null;
  seen.add(type);
  if (type.isUnionOrIntersection()) {
    for (const t of type.types) {
      const r = unknownIn(checker, t, path, seen);
      if (r !== null) return r;
    }
    return null;
  }
  if (!(type.flags & ts.TypeFlags.Object)) return null;
  if (checker.isArrayType(type) || checker.isTupleType(type)) {
    for (const t of checker.getTypeArguments(type as ts.TypeReference)) {
      const r = unknownIn(checker, t, `${path}[]`, seen);
      if (r !== null) return r;
    }
    return null;
  }
  for (const info of checker.getIndexInfosOfType(type)) {
    const r = unknownIn(checker, info.type, `${path}{}`, seen);
    if (r !== null) return r;
  }
  for (const prop of checker.getPropertiesOfType(type)) {
    const r = unknownIn(checker, checker.getTypeOfSymbol(prop), `${path}.${prop.name}`, seen);
    if (r !== null) return r;
  }
  return null;
}
