import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { freePort } from '../helpers/listen.ts';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..', '..');
const MAIN = join(ROOT, 'src', 'main.ts');

/** The README's walk-through, as written: its shell block under "## Walk-through". */
function walkthrough(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Walk-through'));
  const m = /```sh\n([\s\S]*?)```/.exec(section);
  assert.ok(m?.[1], 'README has a ```sh block under ## Walk-through');
  return m[1];
}

/** The JSON object that starts at `marker` in `text` (the curl answers are printed one after another). */
function objectAt(text: string, marker: string): Record<string, any> {
  const start = text.indexOf(marker);
  assert.ok(start >= 0, `no ${marker} in:\n${text.slice(0, 2000)}`);
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return JSON.parse(text.slice(start, i + 1));
  }
  throw new Error(`unterminated JSON after ${marker}`);
}

/**
 * The README walk-through runs as written against `npm start`'s entry point (on a port of its own,
 * the only change), and runs again: the second time it logs in instead of registering.
 */
describe('the README walk-through', { skip: process.platform === 'win32' ? 'needs bash and curl' : false }, () => {
  let dir: string;
  let child: ChildProcess;
  let base: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tsfm-readme-'));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    child = spawn(process.execPath, [MAIN], {
      cwd: dir,
      // A generous inference timeout: this checks the README's commands, not speed on a loaded machine.
      env: { ...process.env, DATA_DIR: join(dir, 'data'), PORT: String(port), LOG_LEVEL: 'silent', METRICS: 'off', INFERENCE_TIMEOUT_MS: '300000' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`npm start did not come up: ${out}`)), 60_000);
      child.stdout?.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes('Next:')) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
  });
  after(async () => {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  });

  const runIt = async () => {
    const script = walkthrough().replace(/^B=\S+/m, `B=${base}`);
    const { stdout, stderr } = await run('bash', ['-c', `set -eu\n${script}`], {
      cwd: dir,
      timeout: 120_000,
      env: { ...process.env, PATH: process.env.PATH ?? '' },
    });
    return { stdout, stderr };
  };

  test('first run: registers, confirms, makes a key and forecasts the whole airline series with a season', async () => {
    const { stdout } = await runIt();
    assert.doesNotMatch(stdout, /undefined/);
    const f = objectAt(stdout, '{"id":"fcst_');
    assert.equal(f.model, 'auto-ets');
    assert.equal(f.input_points, 144);
    const out = f.outputs[0];
    assert.equal(out.mean.length, 12);
    assert.equal(out.timestamps[0], '1961-01-01T00:00:00.000Z');
    assert.equal(out.timestamps[11], '1961-12-01T00:00:00.000Z');
    const mean = out.mean.map((r: number[]) => r[0]);
    // Not a flat line: the July peak stands well above November's trough, as in every year of the data.
    assert.ok(mean[6] > 1.25 * mean[10], `July ${mean[6]} vs November ${mean[10]}`);
    assert.match(stdout, /^auto-ets\tready$/m);
  });

  test('second run: logs in (no TOKEN=undefined), says the address is already confirmed, and forecasts again', async () => {
    const { stdout } = await runIt();
    assert.doesNotMatch(stdout, /undefined/);
    // "Already confirmed: the answer says so" (the used link used to answer 401 "ask for a new one").
    const confirmed = objectAt(stdout, '{"ok":true');
    assert.equal(confirmed.already_verified, true, JSON.stringify(confirmed));
    const f = objectAt(stdout, '{"id":"fcst_');
    assert.equal(f.outputs[0].mean.length, 12);
  });

  test('two runs in the same second each make their own key and forecast (key labels are unique)', async () => {
    // The label was `laptop $(date +%s)`: two runs within one second asked for the same label, the
    // second key creation got 409 and its forecast "The credential is unknown" (seen in CI).
    const both = await Promise.all([runIt(), runIt()]);
    for (const { stdout } of both) {
      assert.doesNotMatch(stdout, /credential is unknown/);
      assert.equal(objectAt(stdout, '{"id":"fcst_').outputs[0].mean.length, 12);
    }
  });
});

describe("the walk-through's json helper", { skip: process.platform === 'win32' ? 'needs bash' : false }, () => {
  // Its definition as the README writes it (the lines from `json() {` to the closing `}`).
  const helper = (): string => {
    const m = /^json\(\) \{[\s\S]*?"; \}$/m.exec(walkthrough());
    assert.ok(m, 'the walk-through defines json()');
    return m[0];
  };
  const json = (body: string, expr: string) =>
    run('bash', ['-c', `${helper()}\nprintf '%s' "$BODY" | json "$EXPR"`], { env: { ...process.env, BODY: body, EXPR: expr } });

  test('prints the field asked for', async () => {
    assert.equal((await json('{"key":"tsfm_abc"}', 'b.key')).stdout.trim(), 'tsfm_abc');
    assert.equal((await json('{"token":null}', 'b.token ?? ""')).stdout.trim(), '');
  });

  test("stops with the API's error when the field is missing (no silent 'undefined' two steps later)", async () => {
    await assert.rejects(
      json('{"error":"An API key with this label already exists","code":"conflict"}', 'b.key'),
      (err: { code?: number; stdout?: string; stderr?: string }) => {
        assert.equal(err.code, 1);
        assert.equal(err.stdout, '');
        assert.match(err.stderr ?? '', /An API key with this label already exists/);
        return true;
      },
    );
  });
});

describe('README links', () => {
  test('every relative link points at a file inside the repository', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const targets = [...readme.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1] as string).filter((u) => !/^(https?:|mailto:|#)/.test(u));
    assert.ok(targets.length > 5);
    for (const target of targets) {
      const path = resolve(ROOT, target.split('#')[0] as string);
      assert.ok(!relative(ROOT, path).startsWith('..'), `${target} leaves the repository`);
      assert.ok(existsSync(path), `${target} does not exist`);
    }
  });
});
