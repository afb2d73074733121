import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { SEMI_SPACE_FLAG, SEMI_SPACE_MB } from '../../src/heap-flags.ts';

const root = new URL('../../', import.meta.url);

/** A worker thread that keeps many young objects alive (as a job on a large answer does); prints its young generation's committed MB. */
const PROBE = [
  "const { Worker } = process.getBuiltinModule('node:worker_threads');",
  'const code = "const keep = []; for (let i = 0; i < 4e6; i++) { keep.push({ i }); if (keep.length > 2e6) keep.length = 0; }" +',
  "  \"process.getBuiltinModule('node:worker_threads').parentPort.postMessage(process.getBuiltinModule('node:v8').getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size / 1048576);\";",
  'const w = new Worker(code, { eval: true });',
  'w.once("message", (mb) => { console.log(mb); void w.terminate(); });',
].join(' ');
const heapFlags = new URL('src/heap-flags.ts', root).pathname;
const youngMb = (prefix: string) => Number(execFileSync(process.execPath, ['--input-type=module', '-e', `${prefix} ${PROBE}`], { encoding: 'utf8' }).trim());

test('capYoungGeneration caps the young generation of the worker threads started after it (128 MB without)', () => {
  const plain = youngMb('');
  const capped = youngMb(`import { capYoungGeneration } from '${heapFlags}'; capYoungGeneration();`);
  assert.ok(plain > 2 * SEMI_SPACE_MB, `without the cap a worker's young generation grew to ${plain} MB`);
  assert.ok(capped <= 2 * SEMI_SPACE_MB, `capped: ${capped} MB`);
});

test('the start commands give the main thread the same cap (package.json start, the image)', () => {
  const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { scripts: Record<string, string> };
  assert.match(pkg.scripts.start as string, new RegExp(`node ${SEMI_SPACE_FLAG} src/main.ts`));
  assert.ok(readFileSync(new URL('Dockerfile', root), 'utf8').includes(`CMD ["node", "${SEMI_SPACE_FLAG}", "src/main.ts"]`));
});
