import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..');

/**
 * npm commands in this repository print no warning about the project's configuration, and npm ci
 * still runs no install script that downloads binaries (onnxruntime-node's fetches the CUDA
 * provider off the npm registry): npm's allowScripts policy in package.json denies it.
 */
describe('npm configuration of the project', () => {
  test('no project .npmrc; onnxruntime-node’s install script is denied by allowScripts, the needed ones allowed', () => {
    assert.equal(existsSync(join(ROOT, '.npmrc')), false, 'a project .npmrc with keys npm does not know makes every npm command warn');
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { allowScripts: Record<string, boolean> };
    assert.equal(pkg.allowScripts['onnxruntime-node'], false);
    assert.equal(pkg.allowScripts.argon2, true);
    assert.equal(pkg.allowScripts.node, true);
  });

  test('an npm command run here warns about nothing of the project’s', async (ctx) => {
    let stderr: string;
    try {
      // As a user runs it: not with the npm_config_* variables of the npm that runs this test.
      const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_config_/i.test(k)));
      stderr = (await run('npm', ['pkg', 'get', 'name'], { cwd: ROOT, env, timeout: 60_000 })).stderr;
    } catch (err) {
      if ((err as { code?: string }).code === 'ENOENT') return ctx.skip('no npm on PATH');
      throw err;
    }
    // A user's own ~/.npmrc may warn ("Unknown user config"): that is theirs, not the project's.
    const ours = stderr.split('\n').filter((l) => /warn/i.test(l) && !/user config/i.test(l));
    assert.deepEqual(ours, []);
  });
});
