import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { parse } from 'csv-parse/sync';
import { registerUser, type TestUser } from '../helpers/app.ts';
import { createListeningApp, type ListeningApp } from '../helpers/listen.ts';

const BIN = join(import.meta.dirname, '..', '..', 'sdk', 'bin', 'tsfm.js');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `tsfm` as a separate process (the same Node 24 as the tests). */
function run(args: string[], env: Record<string, string>, stdin?: string, command: string[] = [process.execPath, BIN]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const [cmd, ...pre] = command;
    const child = spawn(cmd ?? process.execPath, [...pre, ...args], {
      env: { PATH: process.env.PATH ?? '', HOME: env.HOME ?? tmpdir(), ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin ?? '');
  });
}

describe('tsfm CLI as a process against the real server', () => {
  let t: ListeningApp;
  let user: TestUser;
  let dir: string;
  let env: Record<string, string>;
  before(async () => {
    t = await createListeningApp();
    user = await registerUser(t);
    dir = mkdtempSync(join(tmpdir(), 'tsfm-cli-'));
    env = { TSFM_CONFIG: join(dir, 'config.json'), TSFM_BASE_URL: t.baseUrl, HOME: dir };
  });
  after(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('without a key: exit 2 and what to do', async () => {
    const r = await run(['usage'], env);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /no API key: run `tsfm login`/);
  });

  test('a base URL without a scheme is a usage mistake (exit 2) naming where it came from; blanks around one are trimmed', async () => {
    for (const bad of ['127.0.0.1:8105', 'localhost:8105']) {
      const r = await run(['models'], { ...env, TSFM_BASE_URL: bad });
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, new RegExp(`^tsfm: TSFM_BASE_URL: baseUrl "${bad}" must start with http:// or https://, e\\.g\\. http://${bad}\n$`));
    }
    const opt = await run(['--base-url', 'example.com', 'models'], env);
    assert.equal(opt.code, 2);
    assert.match(opt.stderr, /^tsfm: --base-url: baseUrl "example\.com" must start with http/);
    const spaced = await run(['models'], { ...env, TSFM_BASE_URL: ` ${t.baseUrl} ` });
    assert.equal(spaced.code, 0, spaced.stderr);
  });

  test('login with e-mail and password creates a key and saves it (mode 0600); whoami uses it', async () => {
    const bad = await run(['login', '--email', user.email], { ...env, TSFM_PASSWORD: 'wrong password' });
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /HTTP 401, invalid_credentials/);
    assert.match(bad.stderr, /check the e-mail and the password/);
    assert.doesNotMatch(bad.stderr, /run `tsfm login`/);

    const r = await run(['login', '--email', user.email, '--label', 'ci laptop'], { ...env, TSFM_PASSWORD: user.password });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /signed in as .*created key tsfm_/);
    const saved = JSON.parse(readFileSync(env.TSFM_CONFIG ?? '', 'utf8')) as { api_key: string; base_url: string };
    assert.match(saved.api_key, /^tsfm_/);
    assert.equal(saved.base_url, t.baseUrl);
    assert.equal(statSync(env.TSFM_CONFIG ?? '').mode & 0o777, 0o600);

    const who = await run(['whoami'], env);
    assert.equal(who.code, 0, who.stderr);
    assert.match(who.stdout, new RegExp(`${user.id} \\(api_key, key key_`));
    const keys = await run(['keys', 'list'], env);
    assert.match(keys.stdout, /ci laptop/);
  });

  test('login without a password says how to give one (exit 2, nothing sent); a refused key is not told to run tsfm login', async () => {
    const none = await run(['login', '--email', user.email], env);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /^tsfm: no password \(no terminal to ask on\): set TSFM_PASSWORD or pipe it with --password-stdin\n$/);
    const emptyEnv = await run(['login', '--email', user.email], { ...env, TSFM_PASSWORD: '' });
    assert.equal(emptyEnv.code, 2);
    assert.match(emptyEnv.stderr, /no password/);
    const emptyStdin = await run(['login', '--email', user.email, '--password-stdin'], env, '');
    assert.equal(emptyStdin.code, 2);
    assert.match(emptyStdin.stderr, /^tsfm: no password: --password-stdin read nothing from standard input\n$/);
    const noEmail = await run(['login'], { ...env, TSFM_PASSWORD: user.password });
    assert.equal(noEmail.code, 2);
    assert.match(noEmail.stderr, /no e-mail \(no terminal to ask on\): pass --email/);
    const badKey = await run(['login', '--api-key', 'tsfm_not_a_key'], env);
    assert.equal(badKey.code, 1);
    assert.match(badKey.stderr, /HTTP 401, invalid_credential\)/);
    assert.match(badKey.stderr, /the key given with --api-key or TSFM_API_KEY was refused/);
    assert.doesNotMatch(badKey.stderr, /run `tsfm login`/);
  });

  test('login twice on the same machine: each creates its own key (the default label is unique)', async () => {
    const other = { ...env, TSFM_CONFIG: join(dir, 'twice.json'), TSFM_PASSWORD: user.password };
    const first = await run(['login', '--email', user.email], other);
    assert.equal(first.code, 0, first.stderr);
    await new Promise((r) => setTimeout(r, 1100)); // the label carries the time to the second
    const second = await run(['login', '--email', user.email], other);
    assert.equal(second.code, 0, second.stderr);
    const label = (r: Run) => /"(tsfm cli on .+ \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)"\)/.exec(r.stderr)?.[1];
    assert.ok(label(first) && label(second), first.stderr);
    assert.notEqual(label(first), label(second));
    // TSFM_API_KEY set but empty does not hide the saved key.
    const who = await run(['whoami'], { ...other, TSFM_API_KEY: '' });
    assert.equal(who.code, 0, who.stderr);
  });

  test('keys create prints the secret once; revoke makes it invalid', async () => {
    const c = await run(['keys', 'create', 'throwaway'], env);
    assert.equal(c.code, 0, c.stderr);
    const secret = c.stdout.trim();
    assert.match(secret, /^tsfm_/);
    const id = /created (key_\w+)/.exec(c.stderr)?.[1] ?? '';
    assert.ok(id);
    const who = await run(['whoami', '--api-key', secret], env);
    assert.equal(who.code, 0, who.stderr);
    assert.match(who.stdout, new RegExp(`key ${id}\\)`));
    const rv = await run(['keys', 'revoke', id], env);
    assert.equal(rv.code, 0, rv.stderr);
    const after = await run(['--api-key', secret, 'whoami'], env);
    assert.equal(after.code, 1);
    assert.match(after.stderr, /HTTP 401, invalid_credential\)/);
    assert.match(after.stderr, /run `tsfm login`/);
  });

  test('models lists the catalog (table and JSON)', async () => {
    const r = await run(['models'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^id\s+kind/);
    assert.match(r.stdout, /echo-last\s+statistical/);
    const j = await run(['models', '--json'], env);
    assert.ok((JSON.parse(j.stdout) as { id: string }[]).some((m) => m.id === 'echo-last'));
  });

  test('forecast: long-format CSV in, CSV out with unique_id,ds,mean,q10,q50,q90', async () => {
    const file = join(dir, 'long.csv');
    writeFileSync(file, 'unique_id,ds,y\nb,2024-01-02,6\na,2024-01-01,1\na,2024-01-02,2\nb,2024-01-01,5\nb,2024-01-03,\n');
    const r = await run(['forecast', file, '--model', 'echo-last', '--horizon', '2', '--freq', 'D'], env);
    assert.equal(r.code, 0, r.stderr);
    const rows = parse(r.stdout, { columns: true }) as Record<string, string>[];
    assert.deepEqual(Object.keys(rows[0] ?? {}), ['unique_id', 'ds', 'mean', 'q10', 'q50', 'q90']);
    assert.deepEqual(
      rows.map((x) => [x.unique_id, x.ds, x.mean]),
      [
        ['b', '2024-01-04', '6'],
        ['b', '2024-01-05', '6'],
        ['a', '2024-01-03', '2'],
        ['a', '2024-01-04', '2'],
      ],
    );
    assert.equal(rows[0]?.q10, String(6 + (0.1 - 0.5)));
  });

  test('forecast dates: fiscal years, quarters off January and year-ends in June keep their anchor', async () => {
    const cases: [string, string, string[]][] = [
      ['2020-07-01,2021-07-01,2022-07-01,2023-07-01', 'YS-JUL', ['2024-07-01', '2025-07-01']],
      ['2020-02-01,2020-05-01,2020-08-01,2020-11-01', 'QS-FEB', ['2021-02-01', '2021-05-01']],
      ['2021-06-30,2022-06-30,2023-06-30', 'Y-JUN', ['2024-06-30', '2025-06-30']],
      ['2021-02-28,2021-05-31,2021-08-31', 'Q-NOV', ['2021-11-30', '2022-02-28']],
    ];
    for (const [dates, code, expected] of cases) {
      const r = await run(
        ['forecast', '-', '-H', '2', '-m', 'echo-last'],
        env,
        `ds,y\n${dates
          .split(',')
          .map((d, i) => `${d},${i}`)
          .join('\n')}\n`,
      );
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stderr, new RegExp(`frequency inferred from ds: ${code} `));
      assert.deepEqual(
        (parse(r.stdout, { columns: true }) as Record<string, string>[]).map((x) => x.ds),
        expected,
        code,
      );
    }
  });

  test('forecast: a missing date is a null step (said on stderr), so the forecast comes after the last date', async () => {
    const gaps = 'unique_id,ds,y\na,2024-01-01,1\na,2024-01-02,2\na,2024-01-03,3\nb,2024-01-01,1\nb,2024-01-03,3\nb,2024-01-04,4\n';
    const r = await run(['forecast', '-', '-H', '1', '-m', 'echo-last'], env, gaps);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /frequency inferred from ds: D /);
    assert.match(r.stderr, /filled 1 missing date with null: b \(1\)/);
    assert.deepEqual(
      (parse(r.stdout, { columns: true }) as Record<string, string>[]).map((x) => [x.unique_id, x.ds, x.mean]),
      [
        ['a', '2024-01-04', '3'],
        ['b', '2024-01-05', '4'],
      ],
    );
    // The first series decides nothing on its own: its gap is filled on the grid of all of them.
    const first = await run(
      ['forecast', '-', '-H', '1', '-m', 'echo-last', '--format', 'json'],
      env,
      'unique_id,ds,y\nb,2024-01-01,1\nb,2024-01-03,3\nb,2024-01-04,4\n',
    );
    assert.equal((JSON.parse(first.stdout) as { ds: string }[])[0]?.ds, '2024-01-05', first.stderr);
    // With --freq D a series missing 01-04 is forecast for 01-06, not for a date it already has.
    const given = await run(
      ['forecast', '-', '-H', '1', '-m', 'echo-last', '--freq', 'D'],
      env,
      'ds,y\n2024-01-01,1\n2024-01-02,2\n2024-01-03,3\n2024-01-05,5\n',
    );
    assert.equal(given.code, 0, given.stderr);
    assert.equal((parse(given.stdout, { columns: true }) as Record<string, string>[])[0]?.ds, '2024-01-06');
    // A date off the given frequency's grid is refused before the call, naming it.
    const off = await run(['forecast', '-', '-H', '1', '-m', 'echo-last', '--freq', 'MS'], env, 'ds,y\n2024-01-01,1\n2024-01-02,2\n');
    assert.equal(off.code, 1);
    assert.match(off.stderr, /^tsfm: input: series series: ds 2024-01-02 is off the grid that starts at 2024-01-01 \(frequency MS, from --freq/);
  });

  test('forecast: whole-number ds (Nixtla/M4 style) are step numbers, continued in the output', async () => {
    const rows = (n: number, id = 'm1') => Array.from({ length: n }, (_, i) => `${id},${i + 1},${i + 1}`).join('\n');
    for (const n of [12, 20]) {
      const r = await run(['forecast', '-', '-H', '2', '-m', 'echo-last'], env, `unique_id,ds,y\n${rows(n)}\n`);
      assert.equal(r.code, 0, r.stderr);
      assert.doesNotMatch(r.stderr, /frequency inferred/);
      assert.deepEqual(
        (parse(r.stdout, { columns: true }) as Record<string, string>[]).map((x) => [x.ds, x.mean]),
        [
          [String(n + 1), String(n)],
          [String(n + 2), String(n)],
        ],
      );
    }
  });

  test('forecast: a JSON array on stdin, JSON out, custom quantiles', async () => {
    const r = await run(['forecast', '-', '-m', 'echo-last', '-H', '3', '-q', '0.25,0.75', '--format', 'json'], env, '[1, 2, null, 4]');
    assert.equal(r.code, 0, r.stderr);
    const rows = JSON.parse(r.stdout) as Record<string, unknown>[];
    assert.equal(rows.length, 3);
    assert.deepEqual(rows[0], { unique_id: 'series', ds: 1, mean: 4, q25: 3.75, q75: 4.25 });
  });

  test('forecast: 150 series go as three calls with progress on stderr, rows in input order, written to a file', async () => {
    const lines = ['unique_id,ds,y'];
    for (let i = 0; i < 150; i++) for (let d = 1; d <= 3; d++) lines.push(`id${String(i).padStart(3, '0')},2024-01-0${d},${d === 3 ? i : d}`);
    const input = join(dir, 'many.csv');
    const output = join(dir, 'many.json');
    writeFileSync(input, `${lines.join('\n')}\n`);
    const before = (await run(['usage', '--json'], env)).stdout;
    const r = await run(['forecast', input, '-m', 'echo-last', '-H', '1', '-o', output, '--concurrency', '2'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /forecast: 150\/150 series/);
    assert.match(r.stderr, /frequency inferred from ds: D/);
    assert.equal((r.stderr.match(/^forecast: \d+\/150 series$/gm) ?? []).length, 3);
    assert.match(r.stderr, /wrote 150 rows/);
    const rows = JSON.parse(readFileSync(output, 'utf8')) as { unique_id: string; ds: string; mean: number }[];
    for (const [i, row] of rows.entries()) {
      assert.equal(row.unique_id, `id${String(i).padStart(3, '0')}`);
      assert.equal(row.mean, i);
      assert.equal(row.ds, '2024-01-04');
    }
    const requests = (s: string) => (JSON.parse(s) as { totals: { requests: number } }).totals.requests;
    const u = await run(['usage', '--json'], env);
    assert.equal(requests(u.stdout) - requests(before), 3);
    const table = await run(['usage'], env);
    assert.match(table.stdout, /echo-last/);
  });

  test('forecast --ensemble blends the candidate models', async () => {
    const series = Array.from({ length: 24 }, (_, i) => 10 + (i % 4));
    const r = await run(
      ['forecast', '-', '--ensemble', '-m', 'echo-last,echo-short', '-H', '2', '--freq', 'h', '--format', 'json'],
      env,
      JSON.stringify({ target: series, start: '2024-01-01T00:00:00Z', item_id: 'load' }),
    );
    assert.equal(r.code, 0, r.stderr);
    const rows = JSON.parse(r.stdout) as { unique_id: string; ds: string; mean: number }[];
    assert.deepEqual(
      rows.map((x) => [x.unique_id, x.ds]),
      [
        ['load', '2024-01-02T00:00:00.000Z'],
        ['load', '2024-01-02T01:00:00.000Z'],
      ],
    );
    assert.equal(rows[0]?.mean, 13);
  });

  test('forecast errors are clear: unknown model, bad value, bad option, unreadable file', async () => {
    const file = join(dir, 'one.csv');
    writeFileSync(file, 'ds,y\n2024-01-01,1\n2024-01-02,two\n');
    const badValue = await run(['forecast', file, '-H', '2'], env);
    assert.equal(badValue.code, 1);
    assert.match(badValue.stderr, /line 3: y is not a number: "two"/);

    writeFileSync(file, 'ds,y\n2024-01-01,1\n2024-01-02,2\n');
    const unknown = await run(['forecast', file, '-H', '2', '-m', 'autoets'], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /HTTP 404, model_not_found/);
    assert.match(unknown.stderr, /request id: /);

    const badQ = await run(['forecast', file, '-H', '2', '-q', '50'], env);
    assert.equal(badQ.code, 2);
    assert.match(badQ.stderr, /quantiles are levels between 0 and 1/);

    const tooLong = await run(['forecast', file, '-H', '20000', '-m', 'echo-last'], env);
    assert.equal(tooLong.code, 1);
    assert.match(tooLong.stderr, /parameters\.prediction_length/);
    assert.match(tooLong.stderr, /HTTP 422, validation_error/);

    const missing = await run(['forecast', join(dir, 'nope.csv'), '-H', '2'], env);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /cannot read .*nope\.csv/);
  });

  test('anomalies: a --level or --sensitivity that is not a number is a usage mistake (exit 2), not a request', async () => {
    const file = join(dir, 'anom.csv');
    writeFileSync(file, 'ds,y\n2024-01-01,1\n2024-01-02,2\n2024-01-03,3\n');
    for (const args of [
      ['--level', 'abc'],
      ['--level', '100'],
      ['--method', 'zscore', '--sensitivity', 'x'],
    ]) {
      const r = await run(['anomalies', file, ...args], env);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /must be a number/);
    }
  });

  test('forecast -o to a path that cannot be written fails before the call (exit 2, nothing charged)', async () => {
    const file = join(dir, 'small.csv');
    writeFileSync(file, 'ds,y\n2024-01-01,1\n2024-01-02,2\n2024-01-03,3\n');
    const requests = async () => (JSON.parse((await run(['usage', '--json'], env)).stdout) as { totals: { requests: number } }).totals.requests;
    const before = await requests();
    const noDir = await run(['forecast', file, '-H', '1', '-m', 'echo-last', '-o', join(dir, 'no-such-dir', 'out.csv')], env);
    assert.equal(noDir.code, 2, noDir.stderr);
    assert.match(noDir.stderr, /^tsfm: cannot write .*out\.csv: the directory .*no-such-dir does not exist\n$/);
    const isDir = await run(['forecast', file, '-H', '1', '-m', 'echo-last', '-o', dir], env);
    assert.equal(isDir.code, 2, isDir.stderr);
    assert.match(isDir.stderr, /it is a directory/);
    assert.equal(await requests(), before);
  });

  test('logout --revoke revokes the saved key and forgets it', async () => {
    const r = await run(['logout', '--revoke'], env);
    assert.equal(r.code, 0, r.stderr);
    assert.throws(() => statSync(env.TSFM_CONFIG ?? ''));
    assert.equal((await run(['whoami'], env)).code, 2);
  });

  test('npx tsfm runs from the repository', async () => {
    const r = await run(['--version'], {}, undefined, ['npx', '--no-install', 'tsfm']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), '0.1.0');
  });
});

describe('tsfm login on a terminal', () => {
  const hasScript = (() => {
    try {
      return spawnSync('script', ['--version']).status === 0;
    } catch {
      return false;
    }
  })();

  test('the password typed at the prompt is not echoed', { skip: hasScript ? false : 'util-linux `script` (a pseudo-terminal) is not installed' }, async () => {
    const out = await new Promise<string>((resolve, reject) => {
      // `script` gives the CLI a terminal; the password is typed once the prompt shows.
      const child = spawn('script', ['-qc', `"${process.execPath}" "${BIN}" login --email a@b.c`, '/dev/null'], {
        env: { PATH: process.env.PATH ?? '', HOME: tmpdir(), TSFM_CONFIG: join(tmpdir(), `tsfm-${process.pid}.json`), TSFM_BASE_URL: 'http://127.0.0.1:9' },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let text = '';
      let typed = false;
      const timer = setTimeout(() => child.kill(), 20_000);
      child.stdout.on('data', (c: Buffer) => {
        text += c.toString();
        if (!typed && text.includes('password: ')) {
          typed = true;
          child.stdin.write('hunter2secret\r');
        }
      });
      child.on('error', reject);
      child.on('close', () => {
        clearTimeout(timer);
        child.stdin.destroy();
        resolve(text);
      });
    });
    assert.match(out, /password: /);
    assert.match(out, /cannot reach/, 'the login went on with the typed password');
    assert.doesNotMatch(out, /hunter2secret/);
  });
});
