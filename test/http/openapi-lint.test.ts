import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { generate, OPENAPI_PATH } from '../../scripts/sdk-generate.ts';

/**
 * The served OpenAPI document passes Redocly's recommended rules and Spectral's `spectral:oas`
 * with 0 errors and 0 warnings (redocly.yaml, .spectral.yaml; ADR 0017). It lints
 * sdk/openapi.json, after checking that it is exactly what the app serves, so the one
 * exception file (.redocly.lint-ignore.yaml) can name its operations by that path.
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const run = promisify(execFile);

async function cli(script: string, args: string[]): Promise<string> {
  // Both exit non-zero when they find problems; their JSON report is what matters.
  const r = await run(process.execPath, [join(root, 'node_modules', script), ...args], { cwd: root, maxBuffer: 64 << 20 }).catch(
    (err: { stdout?: string; stderr?: string }) => ({ stdout: err.stdout ?? '', stderr: err.stderr ?? '' }),
  );
  return r.stdout;
}

test('sdk/openapi.json is the document the app serves (else: npm run sdk:generate)', async () => {
  const { openapi } = await generate();
  assert.equal(readFileSync(OPENAPI_PATH, 'utf8'), openapi, 'sdk/openapi.json is stale: run `npm run sdk:generate` and commit the result');
});

test('Redocly recommended: 0 errors, 0 warnings', async () => {
  const out = await cli('@redocly/cli/bin/cli.js', ['lint', 'sdk/openapi.json', '--config', 'redocly.yaml', '--format', 'json', '--max-problems', '1000']);
  const report = JSON.parse(out) as { problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[] };
  const lines = report.problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? '?'}`);
  assert.deepEqual(lines, [], `Redocly found ${lines.length} problems in the OpenAPI document:\n${lines.join('\n')}`);
});

test('Spectral spectral:oas: 0 errors, 0 warnings', async () => {
  const out = await cli('@stoplight/spectral-cli/dist/index.js', ['lint', 'sdk/openapi.json', '--ruleset', '.spectral.yaml', '--format', 'json', '--quiet']);
  const problems = JSON.parse(out || '[]') as { code: string; message: string; path: (string | number)[] }[];
  const lines = problems.map((p) => `${p.code}: ${p.message} at ${p.path.join('.')}`);
  assert.deepEqual(lines, [], `Spectral found ${lines.length} problems in the OpenAPI document:\n${lines.join('\n')}`);
});
