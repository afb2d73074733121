/**
 * `tsfm`: the command line over the public HTTP API (through the SDK).
 *   tsfm login | logout | whoami | keys list|create|revoke | models | forecast | anomalies | usage
 * Credentials: --api-key, else TSFM_API_KEY, else the file written by `tsfm login`
 * (TSFM_CONFIG, default $XDG_CONFIG_HOME/tsfm/config.json or ~/.config/tsfm/config.json, mode 0600).
 * Address: --base-url, else TSFM_BASE_URL, else the saved one, else http://127.0.0.1:8000.
 */
import { accessSync, constants, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir, hostname } from 'node:os';
import { dirname, extname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline/promises';
import { Writable } from 'node:stream';
import { SingleBar } from 'cli-progress';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { DEFAULT_BASE_URL, MAX_PER_CALL, normalizeBaseUrl, TsfmClient, type ForecastParameters } from './client.ts';
import { AuthenticationError, TsfmError } from './errors.ts';
import { alignSeries, anomalyRows, anomalyRowsToCsv, forecastRows, InputError, parseSeries, rowsToCsv, type SeriesSet } from './tabular.ts';

const VERSION = '0.1.0';

/** A mistake in how the command was called (exit status 2). */
class UsageError extends Error {}

interface Saved {
  base_url?: string;
  api_key?: string;
}

interface GlobalOpts {
  baseUrl?: string;
  apiKey?: string;
  timeout?: number;
}

interface Io {
  env: NodeJS.ProcessEnv;
  out: (s: string) => void;
  err: (s: string) => void;
}

function configPath(env: NodeJS.ProcessEnv): string {
  if (env.TSFM_CONFIG) return env.TSFM_CONFIG;
  const base = env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(base, 'tsfm', 'config.json');
}

function readSaved(env: NodeJS.ProcessEnv): Saved {
  try {
    const v: unknown = JSON.parse(readFileSync(configPath(env), 'utf8'));
    return typeof v === 'object' && v !== null ? (v as Saved) : {};
  } catch {
    return {};
  }
}

function writeSaved(env: NodeJS.ProcessEnv, saved: Saved): string {
  const p = configPath(env);
  mkdirSync(dirname(p), { recursive: true, mode: 0o700 });
  writeFileSync(p, `${JSON.stringify(saved, null, 2)}\n`, { mode: 0o600 });
  return p;
}

/** A service address made canonical (trimmed, no trailing slash), or a usage mistake naming its source. */
function checkedUrl(raw: string, from: string): string {
  try {
    return normalizeBaseUrl(raw);
  } catch (err) {
    throw new UsageError(`${from}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** The first value that is set and not blank (an empty TSFM_API_KEY= does not hide the saved key), with where it came from. */
function firstGiven(candidates: [string | undefined, string][]): [string, string] | null {
  for (const [value, from] of candidates) if (value !== undefined && value.trim() !== '') return [value.trim(), from];
  return null;
}

const positiveInt = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`${name} must be a positive integer, got ${v}`);
  return n;
};

function quantileList(v: string): number[] {
  const levels = v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map(Number);
  if (levels.length === 0 || levels.some((q) => !(q > 0 && q < 1)))
    throw new InvalidArgumentError(`quantiles are levels between 0 and 1, comma-separated (e.g. 0.1,0.5,0.9), got ${v}`);
  return levels;
}

async function readText(path: string | undefined): Promise<string> {
  if (path === undefined || path === '-') {
    if (process.stdin.isTTY) throw new UsageError('give an input file (CSV or JSON), or pipe the data into tsfm forecast -');
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/**
 * Asks on the terminal; `instead` says how to give the value when there is none (a pipe, a script).
 * A `secret` answer is not echoed: the question is written, then what is typed is not.
 */
async function prompt(question: string, instead: string, secret = false): Promise<string> {
  const what = question.replace(/: $/, '');
  if (!process.stdin.isTTY) throw new UsageError(`no ${what} (no terminal to ask on): ${instead}`);
  let muted = false;
  const output = new Writable({
    write(chunk, _encoding, done) {
      if (!muted) process.stderr.write(chunk);
      done();
    },
  });
  const rl = createInterface({ input: process.stdin, output, terminal: true });
  try {
    const asked = rl.question(question);
    muted = secret;
    const answer = (await asked).trim();
    if (secret) process.stderr.write('\n');
    if (answer === '') throw new UsageError(`no ${what} given: ${instead}`);
    return answer;
  } finally {
    rl.close();
  }
}

/** Fails before any call (so before anything is charged) when `path` cannot be written. */
function checkWritable(path: string): void {
  const fail = (why: string) => new UsageError(`cannot write ${path}: ${why}`);
  let st: ReturnType<typeof statSync> | undefined;
  try {
    st = statSync(path);
  } catch {
    st = undefined;
  }
  if (st?.isDirectory()) throw fail('it is a directory');
  const target = st ? path : dirname(resolve(path));
  if (!st) {
    let dir: ReturnType<typeof statSync> | undefined;
    try {
      dir = statSync(target);
    } catch {
      throw fail(`the directory ${target} does not exist`);
    }
    if (!dir.isDirectory()) throw fail(`${target} is not a directory`);
  }
  try {
    accessSync(target, constants.W_OK);
  } catch {
    throw fail(st ? 'permission denied' : `the directory ${target} is not writable`);
  }
}

/** A finite number, for options such as --level and --sensitivity (a typo is a usage mistake, not a request). */
const finiteNumber =
  (name: string, check?: (n: number) => boolean, range = '') =>
  (v: string): number => {
    const n = v.trim() === '' ? Number.NaN : Number(v);
    if (!Number.isFinite(n) || (check && !check(n))) throw new InvalidArgumentError(`${name} must be a number${range}, got ${v}`);
    return n;
  };

function table(rows: Record<string, unknown>[], columns: string[]): string {
  const cell = (v: unknown) => (v === null || v === undefined ? '-' : String(v));
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return `${[line(columns), ...rows.map((r) => line(columns.map((c) => cell(r[c]))))].join('\n')}\n`;
}

/** Reports progress on stderr: a bar on a terminal, a line per call otherwise. */
function progressReporter(total: number, io: Io): ((done: number, all: number) => void) | undefined {
  if (total <= MAX_PER_CALL) return undefined;
  if (process.stderr.isTTY) {
    const bar = new SingleBar({
      format: 'forecast [{bar}] {value}/{total} series | {eta_formatted} left',
      hideCursor: true,
      clearOnComplete: true,
      stream: process.stderr,
    });
    bar.start(total, 0);
    return (done, all) => {
      bar.update(done);
      if (done >= all) bar.stop();
    };
  }
  return (done, all) => {
    if (done > 0) io.err(`forecast: ${done}/${all} series\n`);
  };
}

/**
 * The series on their grid (a missing date is a null value, not a dropped step) and the frequency
 * to send; says on stderr what was inferred or filled.
 */
function aligned(parsed: SeriesSet, given: string | undefined, io: Io): { set: SeriesSet; freq: string | undefined } {
  const a = alignSeries(parsed, given?.trim() || undefined);
  if (a.inferred) io.err(`frequency inferred from ds: ${a.frequency} (--freq to override)\n`);
  if (a.irregular) io.err('the ds steps are irregular: pass --freq for forecast timestamps (rows get step numbers)\n');
  if (a.filled.length > 0) {
    const count = a.filled.reduce((n, f) => n + f.count, 0);
    const which = a.filled.slice(0, 5).map((f) => `${f.id} (${f.count})`);
    const more = a.filled.length > 5 ? ` and ${a.filled.length - 5} more series` : '';
    const what = a.set.index ? 'step number' : 'date';
    io.err(`filled ${count} missing ${what}${count === 1 ? '' : 's'} with null: ${which.join(', ')}${more}\n`);
    for (const f of a.filled.filter((x) => x.count > x.total - x.count).slice(0, 5)) {
      io.err(`  series ${f.id}: ${f.count} of its ${f.total} steps are empty: do its ds follow another frequency? (forecast it apart, or pass --freq)\n`);
    }
  }
  return { set: a.set, freq: a.frequency ?? undefined };
}

function buildProgram(io: Io): Command {
  const program = new Command();
  program
    .name('tsfm')
    .description('Forecasts from the TSFM service on the command line.')
    .version(VERSION)
    .option('--base-url <url>', `service address (env TSFM_BASE_URL; default ${DEFAULT_BASE_URL})`)
    .option('--api-key <key>', 'API key (env TSFM_API_KEY; default: the key saved by tsfm login)')
    .option('--timeout <ms>', 'per-request timeout in milliseconds', positiveInt('--timeout'), 120_000)
    .showHelpAfterError('(tsfm --help, or tsfm <command> --help, for usage)')
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .exitOverride();

  const globals = () => program.opts<GlobalOpts>();
  /** The service address, checked: a bad one is a usage mistake naming where it came from. */
  const baseUrl = () => {
    const [raw, from] = firstGiven([
      [globals().baseUrl, '--base-url'],
      [io.env.TSFM_BASE_URL, 'TSFM_BASE_URL'],
      [readSaved(io.env).base_url, `the saved address (${configPath(io.env)})`],
    ]) ?? [DEFAULT_BASE_URL, 'the default'];
    return checkedUrl(raw, from);
  };
  /** --api-key, else TSFM_API_KEY, each only when not blank. */
  const givenKey = () =>
    firstGiven([
      [globals().apiKey, '--api-key'],
      [io.env.TSFM_API_KEY, 'TSFM_API_KEY'],
    ])?.[0];
  const client = (needKey = true) => {
    const apiKey = givenKey() ?? firstGiven([[readSaved(io.env).api_key, 'saved']])?.[0];
    if (needKey && !apiKey) throw new UsageError('no API key: run `tsfm login`, pass --api-key or set TSFM_API_KEY');
    return new TsfmClient({ baseUrl: baseUrl(), ...(apiKey ? { apiKey } : {}), timeoutMs: globals().timeout ?? 120_000 });
  };

  program
    .command('login')
    .description('sign in, create an API key for this machine and save it (or save a key you pass with --api-key)')
    .option('--email <email>', 'account e-mail (asked when omitted)')
    .option('--password-stdin', 'read the password from standard input (else TSFM_PASSWORD, else asked)')
    .option('--label <label>', 'label of the key to create (default: tsfm cli on <host> <date-time>, unique per login)')
    .action(async (o: { email?: string; passwordStdin?: boolean; label?: string }) => {
      const given = givenKey();
      let apiKey: string;
      if (given) {
        const who = await new TsfmClient({ baseUrl: baseUrl(), apiKey: given }).whoami();
        apiKey = given;
        io.err(`key accepted (${who.auth_type} of ${who.user})\n`);
      } else {
        const url = baseUrl();
        const email = o.email?.trim() || (await prompt('e-mail: ', 'pass --email'));
        let password: string;
        if (o.passwordStdin) {
          password = (await readText('-')).replace(/\r?\n$/, '');
          if (password === '') throw new UsageError('no password: --password-stdin read nothing from standard input');
        } else {
          password = io.env.TSFM_PASSWORD || (await prompt('password: ', 'set TSFM_PASSWORD or pipe it with --password-stdin', true));
        }
        const session = await TsfmClient.login(email, password, { baseUrl: url });
        // Each login creates its own key (labels are unique per account): the date-time tells them apart.
        const label = o.label?.trim() || `tsfm cli on ${hostname().slice(0, 60)} ${new Date().toISOString().slice(0, 19)}Z`;
        // The CLI manages keys too (keys create/revoke, logout --revoke): its key gets keys:write.
        const created = await new TsfmClient({ baseUrl: url, apiKey: session.token }).keys.create(label, {
          scopes: ['forecast', 'usage:read', 'billing:read', 'keys:write'],
        });
        apiKey = created.key;
        io.err(`signed in as ${session.user.email}; created key ${created.prefix}… (${created.id}, "${created.label}")\n`);
      }
      const path = writeSaved(io.env, { base_url: baseUrl(), api_key: apiKey });
      io.out(`saved to ${path}\n`);
    });

  program
    .command('logout')
    .description('forget the saved key (--revoke also revokes it on the server)')
    .option('--revoke', 'revoke the saved key on the server first')
    .action(async (o: { revoke?: boolean }) => {
      const saved = readSaved(io.env);
      if (o.revoke && saved.api_key) {
        const url = saved.base_url ? checkedUrl(saved.base_url, `the saved address (${configPath(io.env)})`) : baseUrl();
        const c = new TsfmClient({ baseUrl: url, apiKey: saved.api_key });
        const me = await c.whoami();
        if (me.key) await c.keys.revoke(me.key);
        io.err('key revoked\n');
      }
      rmSync(configPath(io.env), { force: true });
      io.out('logged out\n');
    });

  program
    .command('whoami')
    .description('show which account the credential belongs to')
    .action(async () => {
      const me = await client().whoami();
      io.out(`${me.user} (${me.auth_type}${me.key ? `, key ${me.key}` : ''}) at ${baseUrl()}\n`);
    });

  const keys = program.command('keys').description('manage API keys');
  keys
    .command('list')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }) => {
      const list = await client().keys.list();
      io.out(o.json ? `${JSON.stringify(list, null, 2)}\n` : table(list, ['id', 'label', 'prefix', 'created_at', 'last_used_at']));
    });
  keys
    .command('create <label>')
    .description('create a key; its secret is printed this once')
    .action(async (label: string) => {
      const k = await client().keys.create(label);
      io.err(`created ${k.id} ("${k.label}"); the secret below is shown once:\n`);
      io.out(`${k.key}\n`);
    });
  keys.command('revoke <key-id>').action(async (id: string) => {
    await client().keys.revoke(id);
    io.out(`revoked ${id}\n`);
  });

  program
    .command('models')
    .description('list the models of the catalog')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }) => {
      const models = await client(false).models();
      if (o.json) return io.out(`${JSON.stringify(models, null, 2)}\n`);
      io.out(
        table(
          models.map((m) => ({ ...m, available: m.available ? 'yes' : `no: ${m.unavailable_reason ?? ''}` })),
          ['id', 'kind', 'min_points', 'max_horizon', 'access', 'available'],
        ),
      );
    });

  program
    .command('forecast [file]')
    .description('forecast the series of a CSV or JSON file (- or nothing: standard input)')
    .addHelpText(
      'after',
      `
Input: one series (a column of numbers, ds,y, or a JSON array) or long format unique_id,ds,y
(CSV, or JSON records). Output: unique_id,ds,mean and one column per quantile (q10,q50,q90).
Example: tsfm forecast sales.csv --model auto-ets --horizon 12 --freq MS > forecast.csv`,
    )
    .option('-m, --model <id>', 'model id (with --ensemble: comma-separated candidates)', 'auto-ets')
    .requiredOption('-H, --horizon <n>', 'steps to forecast', positiveInt('--horizon'))
    .option('-f, --freq <code>', 'frequency, pandas style (D, h, W, MS, QS, ...); inferred from regular ds when omitted')
    .option('-q, --quantiles <levels>', 'quantile levels, comma-separated', quantileList, [0.1, 0.5, 0.9])
    .option('--ensemble', 'blend the best models by a hold-out backtest (/v1/forecast/ensemble)')
    .addOption(new Option('--input-format <format>', 'input format (default: from the file name, else from the content)').choices(['csv', 'json']))
    .addOption(new Option('--format <format>', 'output format (default: from the -o file name, else csv)').choices(['csv', 'json']))
    .option('-o, --output <file>', 'write to a file instead of standard output')
    .option('--concurrency <n>', 'calls in flight for more than 64 series', positiveInt('--concurrency'), 4)
    .action(
      async (
        file: string | undefined,
        o: {
          model: string;
          horizon: number;
          freq?: string;
          quantiles: number[];
          ensemble?: boolean;
          inputFormat?: 'csv' | 'json';
          format?: 'csv' | 'json';
          output?: string;
          concurrency: number;
        },
      ) => {
        const c = client();
        // Before the call: a result that cannot be written would have been charged for nothing.
        if (o.output) checkWritable(o.output);
        const ext = (p: string | undefined) => (p ? extname(p).slice(1).toLowerCase() : '');
        const inFormat = o.inputFormat ?? (ext(file) === 'json' ? 'json' : ext(file) === 'csv' ? 'csv' : 'auto');
        const { set, freq } = aligned(parseSeries(await readText(file), inFormat), o.freq, io);
        const parameters: ForecastParameters = { prediction_length: o.horizon, quantile_levels: o.quantiles, ...(freq ? { frequency: freq } : {}) };
        const onProgress = progressReporter(set.inputs.length, io);
        const chunking = { concurrency: o.concurrency, ...(onProgress ? { onProgress } : {}) };
        const response = o.ensemble
          ? (
              await c.ensembleMany(
                { inputs: set.inputs, parameters, ...(o.model !== 'auto-ets' ? { models: o.model.split(',').map((s) => s.trim()) } : {}) },
                chunking,
              )
            ).result
          : await c.forecastMany({ model: o.model, inputs: set.inputs, parameters }, chunking);
        const rows = forecastRows(set.ids, response, set.dateOnly, set.index);
        const outFormat = o.format ?? (ext(o.output) === 'json' ? 'json' : 'csv');
        const text = outFormat === 'json' ? `${JSON.stringify(rows, null, 2)}\n` : rowsToCsv(rows, response.quantile_levels);
        if (o.output) {
          try {
            writeFileSync(o.output, text);
          } catch (err) {
            io.out(text);
            throw new UsageError(
              `cannot write ${o.output}: ${err instanceof Error ? err.message : String(err)}; the forecast (already made) is on standard output instead`,
            );
          }
          io.err(`wrote ${rows.length} rows (${set.ids.length} series × ${o.horizon} steps) to ${o.output}\n`);
        } else io.out(text);
      },
    );

  program
    .command('anomalies [file]')
    .description('flag anomalies in the series of a CSV or JSON file (- or nothing: standard input)')
    .addHelpText(
      'after',
      `
Input: as for forecast. Output: unique_id,ds,value,expected,lower,upper,score,anomaly per scored point.
Example: tsfm anomalies load.csv --level 99 --freq h --only-anomalies`,
    )
    .addOption(new Option('--method <method>', 'forecast: model interval; zscore: rolling mean and sd').choices(['forecast', 'zscore']).default('forecast'))
    .option('-m, --model <id>', 'model with in-sample fitted values (method forecast)', 'auto-ets')
    .option(
      '--level <percent>',
      'interval level in percent (method forecast)',
      finiteNumber('--level', (n) => n > 0 && n < 100, ' between 0 and 100'),
      99,
    )
    .option('--window <n>', 'rolling window, 4-128 (method zscore)', positiveInt('--window'), 24)
    .option('--sensitivity <sd>', 'threshold in standard deviations, 1.5-6 (method zscore)', finiteNumber('--sensitivity'), 3)
    .option('--detection-size <n>', 'score only the last n points of each series', positiveInt('--detection-size'))
    .option('-f, --freq <code>', 'frequency, pandas style; inferred from regular ds when omitted')
    .option('--only-anomalies', 'print only the flagged points')
    .addOption(new Option('--format <format>', 'output format (default csv)').choices(['csv', 'json']))
    .action(
      async (
        file: string | undefined,
        o: {
          method: 'forecast' | 'zscore';
          model: string;
          level: number;
          window: number;
          sensitivity: number;
          detectionSize?: number;
          freq?: string;
          onlyAnomalies?: boolean;
          format?: 'csv' | 'json';
        },
      ) => {
        const { set, freq } = aligned(parseSeries(await readText(file), 'auto'), o.freq, io);
        const response = await client().detectAnomalies({
          // Univariate series here: parseSeries gives one value per step.
          inputs: set.inputs.map((x) => ({ target: (x.target ?? []) as (number | null)[], ...(x.start ? { start: x.start } : {}) })),
          method: o.method,
          model: o.model,
          level: o.level,
          window: o.window,
          sensitivity: o.sensitivity,
          ...(o.detectionSize ? { detection_size: o.detectionSize } : {}),
          ...(freq ? { frequency: freq } : {}),
        });
        const rows = anomalyRows(set.ids, response, set.dateOnly, set.index).filter((r) => !o.onlyAnomalies || r.anomaly);
        io.err(`${response.anomaly_count} anomal${response.anomaly_count === 1 ? 'y' : 'ies'}, ${response.cost_credits} credits\n`);
        io.out(o.format === 'json' ? `${JSON.stringify(rows, null, 2)}\n` : anomalyRowsToCsv(rows));
      },
    );

  program
    .command('usage')
    .description('requests, tokens and credits of the account')
    .option('--start <date>', 'ISO 8601, inclusive (default: 30 days ago)')
    .option('--end <date>', 'ISO 8601, exclusive (default: now)')
    .option('--json', 'print JSON')
    .action(async (o: { start?: string; end?: string; json?: boolean }) => {
      const u = await client().usage({ ...(o.start ? { start: o.start } : {}), ...(o.end ? { end: o.end } : {}) });
      if (o.json) return io.out(`${JSON.stringify(u, null, 2)}\n`);
      const t = u.totals;
      io.out(`${u.start} .. ${u.end}: ${t.requests} requests, ${t.total_tokens} tokens, ${t.credits} credits\n\n`);
      if (u.by_model.length > 0) io.out(table(u.by_model, ['model', 'requests', 'input_tokens', 'output_tokens', 'credits']));
    });

  return program;
}

/** What to do about a refused credential, for the command that was run. */
function credentialHint(err: TsfmError, command: string): string {
  if (err.code === 'invalid_credentials') return 'check the e-mail and the password (tsfm login --email …; TSFM_PASSWORD or --password-stdin)';
  if (command === 'login') return 'the key given with --api-key or TSFM_API_KEY was refused: check it, or leave both out to sign in with e-mail and password';
  return 'run `tsfm login`, pass --api-key or set TSFM_API_KEY';
}

/** Runs the CLI; returns the exit status (0 ok, 1 the service or the input refused, 2 a usage mistake). */
export async function main(
  argv: string[],
  io: Io = { env: process.env, out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s) },
): Promise<number> {
  const program = buildProgram(io);
  let command = '';
  program.hook('preAction', (_root, action) => {
    command = action.name();
  });
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    if (err instanceof UsageError) {
      io.err(`tsfm: ${err.message}\n`);
      return 2;
    }
    if (err instanceof InputError) {
      io.err(`tsfm: input: ${err.message}\n`);
      return 1;
    }
    if (err instanceof TsfmError) {
      const where = err.status ? `HTTP ${err.status}, ` : '';
      io.err(`tsfm: ${err.message} (${where}${err.code})\n`);
      for (const d of err.detail.slice(1, 10)) io.err(`  ${d.loc.join('.')}: ${d.msg}\n`);
      if (err instanceof AuthenticationError) io.err(`  ${credentialHint(err, command)}\n`);
      if (err.requestId) io.err(`  request id: ${err.requestId}\n`);
      return 1;
    }
    throw err;
  }
}
