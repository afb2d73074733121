import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parseFrequency, stepTime } from '../../src/forecasting/frequency.ts';
import { createKey, registerUser } from '../helpers/app.ts';
import { createListeningApp, type ListeningApp } from '../helpers/listen.ts';
import { GRID_CODES, GRID_STARTS } from './grid-cases.ts';

const PY_DIR = join(import.meta.dirname, '..', '..', 'clients', 'python');

/** The interpreters to try: the first python3 on PATH, then Debian's (where python3-pandas installs). */
function interpreters(): { path: string; pandas: boolean }[] {
  const found: { path: string; pandas: boolean; real: string }[] = [];
  for (const candidate of ['python3', '/usr/bin/python3']) {
    const probe = spawnSync(
      candidate,
      ['-c', 'import sys\nprint(sys.executable)\ntry:\n    import pandas\n    print(True)\nexcept Exception:\n    print(False)'],
      { encoding: 'utf8' },
    );
    if (probe.status !== 0) continue;
    const [real = candidate, pandas = 'False'] = probe.stdout.trim().split('\n');
    if (found.some((f) => f.real === real)) continue;
    found.push({ path: candidate, pandas: pandas === 'True', real });
  }
  return found;
}

function unittest(python: string, env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(python, ['-m', 'unittest', 'discover', '-s', 'tests', '-v'], {
      cwd: PY_DIR,
      env: { PATH: process.env.PATH ?? '', PYTHONPATH: PY_DIR, PYTHONDONTWRITEBYTECODE: '1', ...env },
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out }));
  });
}

const found = interpreters();
const skip = found.length === 0 ? 'no python3 on this machine: the Python client tests are skipped' : false;

describe('Python client (clients/python) against the real server', { skip }, () => {
  let t: ListeningApp;
  let env: Record<string, string>;
  before(async () => {
    t = await createListeningApp();
    const user = await registerUser(t);
    env = { TSFM_BASE_URL: t.baseUrl, TSFM_API_KEY: (await createKey(t, user, 'python')).key };
  });
  after(async () => t.close());

  for (const py of found) {
    test(`unittest with ${py.path} (${py.pandas ? 'pandas: DataFrames' : 'no pandas: lists of dicts'})`, async () => {
      const r = await unittest(py.path, env);
      assert.equal(r.code, 0, r.out);
      assert.match(r.out, /^OK/m, r.out);
      // The live tests must really have run (not skipped for want of a server).
      assert.match(r.out, /test_more_than_64_series_are_batched_in_order_with_progress \S+ \.\.\. ok/, r.out);
      assert.match(r.out, /test_missing_dates_are_null_steps_so_the_forecast_follows_the_last_date \S+ \.\.\. ok/, r.out);
      if (py.pandas) assert.match(r.out, /test_dataframe_in_and_out_with_inferred_frequency \S+ \.\.\. ok/, r.out);
      else assert.match(r.out, /test_dataframe_in_and_out_with_inferred_frequency \S+ \.\.\. skipped/, r.out);
    });
  }

  test('tsfm_client.frequency steps every grid as the service does (the forecast continues the filled series)', () => {
    const codes = GRID_CODES;
    const starts = GRID_STARTS;
    const ks = [0, 1, 2, 5, 13, 40];
    const script = [
      'import json, sys',
      'from tsfm_client.frequency import parse_frequency, parse_time, step_time, iso',
      'codes, starts, ks = json.loads(sys.argv[1])',
      'print(json.dumps({c: {s: [iso(step_time(parse_time(s), parse_frequency(c), k)) for k in ks] for s in starts} for c in codes}))',
    ].join('\n');
    const py = found[0]?.path ?? 'python3';
    const r = spawnSync(py, ['-c', script, JSON.stringify([codes, starts, ks])], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '', PYTHONPATH: PY_DIR },
    });
    assert.equal(r.status, 0, r.stderr);
    const got = JSON.parse(r.stdout) as Record<string, Record<string, string[]>>;
    for (const code of codes) {
      const f = parseFrequency(code);
      if (!f) throw new Error(`the service does not read ${code}`);
      for (const start of starts) {
        const t0 = new Date(start.includes('T') ? start : `${start}T00:00:00Z`);
        const expected: string[] = ks.map((k) => stepTime(t0, f, k).toISOString());
        assert.deepEqual(got[code]?.[start], expected, `${code} from ${start}`);
      }
    }
  });

  test('the DataFrame path ran with some interpreter', (ctx) => {
    if (!found.some((p) => p.pandas)) ctx.skip('no python3 here imports pandas (apt-get install python3-pandas): the DataFrame path was not exercised');
  });
});
