/**
 * Series in, rows out: the CLI's conversions between files and the API.
 * In:  one series (a column of numbers, `ds,y`, a JSON array of numbers, `{target, start}`), or
 *      Nixtla's long format `unique_id, ds, y` (CSV, or JSON records); `{"inputs": [...]}` is passed as is.
 * Out: one row per series and step: unique_id, ds, mean, then one column per quantile level (q10, q50, q90).
 */
import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import type { DetectAnomaliesResponse, ForecastInput, ForecastResponse } from './client.ts';
import { gridIndexes, inferFrequency as inferFromTimes, parseFrequency, parseTime } from './frequency.ts';

export class InputError extends Error {
  override readonly name = 'InputError';
}

export interface SeriesSet {
  inputs: ForecastInput[];
  /** The unique_id of each input, in order. */
  ids: string[];
  /** Every ds was a plain date (YYYY-MM-DD): midnight timestamps are printed as dates too. */
  dateOnly?: boolean;
  /** The sorted ds of each series, when the input had dates. */
  stamps?: string[][];
  /** Those ds as epoch milliseconds (an ISO date without an offset is UTC, as the service reads it). */
  times?: number[][];
  /** The sorted ds of each series when every ds was a whole number (Nixtla/M4 style step numbers). */
  steps?: number[][];
  /** Whole-number ds after alignSeries: step k of series i (of `length`) is `first + k * step`. */
  index?: { first: number; step: number; length: number }[];
}

const MISSING = new Set(['', 'na', 'nan', 'null', 'none']);
const DEFAULT_ID = 'series';

function toValue(raw: unknown, where: string): number | null {
  if (raw === null || raw === undefined) return null;
  if (typeof raw === 'number') {
    if (!Number.isFinite(raw)) throw new InputError(`${where}: y must be a finite number, got ${raw}`);
    return raw;
  }
  const s = String(raw).trim();
  if (MISSING.has(s.toLowerCase())) return null;
  const n = Number(s);
  if (!Number.isFinite(n)) throw new InputError(`${where}: y is not a number: ${JSON.stringify(s).slice(0, 60)}`);
  return n;
}

interface Row {
  id: string;
  ds: string | null;
  y: number | null;
  where: string;
}

const WHOLE = /^[+-]?\d+$/;

/**
 * Groups long-format rows by unique_id (first-seen order), each sorted by ds. ds are ISO 8601 dates
 * or date-times, or all whole numbers (step numbers, as in Nixtla's M4 files: `1`, `2`, …).
 */
function group(rows: Row[]): SeriesSet {
  const byId = new Map<string, Row[]>();
  for (const r of rows) {
    const list = byId.get(r.id);
    if (list) list.push(r);
    else byId.set(r.id, [r]);
  }
  const withDs = rows.filter((r) => r.ds !== null);
  const whole = withDs.length > 0 && withDs.every((r) => WHOLE.test(r.ds ?? ''));
  if (!whole && withDs.some((r) => WHOLE.test(r.ds ?? ''))) {
    const [n, d] = [withDs.find((r) => WHOLE.test(r.ds ?? '')), withDs.find((r) => !WHOLE.test(r.ds ?? ''))];
    throw new InputError(`ds mixes whole numbers (${n?.where}: ${n?.ds}) and dates (${d?.where}: ${JSON.stringify(d?.ds).slice(0, 60)})`);
  }
  const inputs: ForecastInput[] = [];
  const ids: string[] = [];
  const stamps: string[][] = [];
  const times: number[][] = [];
  const steps: number[][] = [];
  for (const [id, list] of byId) {
    const dated = list.every((r) => r.ds !== null);
    if (!dated && list.some((r) => r.ds !== null)) throw new InputError(`series ${id}: some rows have a ds and some do not`);
    if (dated) {
      const keyed = list.map((r) => {
        const t = whole ? Number(r.ds) : parseTime(r.ds ?? '');
        if (Number.isNaN(t) || (whole && !Number.isSafeInteger(t)))
          throw new InputError(
            `${r.where}: ds is not an ISO 8601 date (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SS) nor a step number: ${JSON.stringify(r.ds).slice(0, 60)}`,
          );
        return { r, t };
      });
      keyed.sort((a, b) => a.t - b.t);
      for (let i = 1; i < keyed.length; i++) {
        const [a, b] = [keyed[i - 1], keyed[i]];
        if (a && b && a.t === b.t) throw new InputError(`series ${id}: ds ${b.r.ds} appears twice (${a.r.where} and ${b.r.where})`);
      }
      list.splice(0, list.length, ...keyed.map((k) => k.r));
      if (whole) steps.push(keyed.map((k) => k.t));
      else {
        stamps.push(list.map((r) => r.ds ?? ''));
        times.push(keyed.map((k) => k.t));
      }
    }
    ids.push(id);
    inputs.push({ target: list.map((r) => r.y), item_id: id, ...(dated && !whole ? { start: list[0]?.ds ?? null } : {}) });
  }
  if (inputs.length === 0) throw new InputError('the input holds no series');
  if (whole) return { inputs, ids, steps };
  const dateOnly = rows.length > 0 && rows.every((r) => r.ds !== null && /^\d{4}-\d{2}-\d{2}$/.test(r.ds));
  return { inputs, ids, dateOnly, stamps, times };
}

function fromCsv(text: string): SeriesSet {
  let records: string[][];
  try {
    records = parse(text, { skip_empty_lines: true, trim: true, relax_column_count: false });
  } catch (err) {
    throw new InputError(`CSV: ${err instanceof Error ? err.message : String(err)}`);
  }
  const head = records[0];
  if (!head) throw new InputError('the input is empty');
  const headerless = head.every((c) => MISSING.has(c.toLowerCase()) || Number.isFinite(Number(c)));
  if (headerless) {
    if (head.length !== 1) throw new InputError('a CSV without a header must be one column of numbers; otherwise name the columns unique_id,ds,y');
    return group(records.map((r, i) => ({ id: DEFAULT_ID, ds: null, y: toValue(r[0], `line ${i + 1}`), where: `line ${i + 1}` })));
  }
  const cols = head.map((c) => c.toLowerCase());
  let yAt = cols.indexOf('y');
  if (yAt < 0 && cols.length === 1) yAt = 0;
  if (yAt < 0) throw new InputError(`the CSV needs a y column (found ${head.join(', ')}); long format is unique_id,ds,y`);
  const idAt = cols.indexOf('unique_id');
  const dsAt = cols.indexOf('ds');
  return group(
    records.slice(1).map((r, i) => {
      const where = `line ${i + 2}`;
      const id = idAt >= 0 ? (r[idAt] ?? '') : DEFAULT_ID;
      if (id === '') throw new InputError(`${where}: unique_id is empty`);
      return { id, ds: dsAt >= 0 ? (r[dsAt] ?? null) : null, y: toValue(r[yAt], where), where };
    }),
  );
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function fromJson(text: string): SeriesSet {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new InputError(`JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (isRecord(doc) && Array.isArray(doc.inputs)) {
    const inputs = doc.inputs as ForecastInput[];
    return { inputs, ids: inputs.map((x, i) => String(x.item_id ?? (isRecord(x.metadata) ? x.metadata.item_id : undefined) ?? `${DEFAULT_ID}_${i + 1}`)) };
  }
  if (isRecord(doc) && Array.isArray(doc.target)) {
    const id = typeof doc.item_id === 'string' || typeof doc.item_id === 'number' ? String(doc.item_id) : DEFAULT_ID;
    return { inputs: [{ ...(doc as ForecastInput), item_id: id }], ids: [id] };
  }
  if (Array.isArray(doc)) {
    if (doc.every((v) => v === null || typeof v === 'number')) {
      return group(doc.map((v, i) => ({ id: DEFAULT_ID, ds: null, y: toValue(v, `item ${i}`), where: `item ${i}` })));
    }
    return group(
      doc.map((rec, i) => {
        const where = `record ${i}`;
        if (!isRecord(rec) || !('y' in rec)) throw new InputError(`${where}: expected an object with y (and unique_id, ds)`);
        const id = rec.unique_id === undefined || rec.unique_id === null ? DEFAULT_ID : String(rec.unique_id);
        const ds = rec.ds === undefined || rec.ds === null ? null : String(rec.ds);
        return { id, ds, y: toValue(rec.y, where), where };
      }),
    );
  }
  throw new InputError('JSON input must be an array of numbers, an array of {unique_id, ds, y} records, {target, start} or {inputs: [...]}');
}

/**
 * The pandas-style frequency the ds of a set of series follow, missing dates allowed (see
 * frequency.ts inferFrequency): `D`, `2h`, `W`, `B`, `MS`, `M`, `QS`, `QS-FEB`, `Q-NOV`, `YS`,
 * `YS-JUL`, `Y-JUN`, …; null when the steps are irregular, no series has 3 ds, or there are none.
 */
export function inferFrequency(set: SeriesSet): string | null {
  return set.times ? inferFromTimes(set.times) : null;
}

/** The frequency of one series' sorted ISO timestamps (see inferFrequency). */
export function frequencyOf(stamps: string[]): string | null {
  const t = stamps.map(parseTime);
  return t.some(Number.isNaN) ? null : inferFromTimes([t]);
}

export interface Alignment {
  /** The series with one value per step of their grid: null where the input had no row. */
  set: SeriesSet;
  /** The frequency to send: the one given, else the inferred one, else null. */
  frequency: string | null;
  /** The frequency was inferred from the ds (not given). */
  inferred: boolean;
  /** Dated series whose ds follow no frequency (none given): sent without one, rows get step numbers. */
  irregular: boolean;
  /** Missing steps filled with null, per series that had some. */
  filled: { id: string; count: number; total: number }[];
}

/** Most empty steps filling may add (beyond that, the frequency is surely not the data's). */
const MAX_FILL = 100_000;

const gcd = (a: number, b: number): number => (b === 0 ? Math.abs(a) : gcd(b, a % b));

/**
 * Puts every series on its grid so that no step is silently dropped: a date (or step number)
 * missing between two rows becomes a null value, which the service accepts, so the forecast
 * continues after the last real step. Dates follow `given` (--freq) or the frequency inferred from
 * all series; a ds off that grid is an InputError naming it. Step numbers step by the greatest
 * common divisor of their differences.
 */
export function alignSeries(set: SeriesSet, given?: string): Alignment {
  const filled: Alignment['filled'] = [];
  const observed = set.inputs.reduce((n, x) => n + (x.target?.length ?? 0), 0);
  const budget = Math.max(MAX_FILL, 10 * observed);
  const place = (k: number, index: number[], target: (number | null)[]) => {
    const n = (index.at(-1) ?? -1) + 1;
    const out: (number | null)[] = new Array(n).fill(null);
    index.forEach((at, j) => {
      out[at] = target[j] ?? null;
    });
    const id = set.ids[k] ?? String(k);
    if (n > index.length) filled.push({ id, count: n - index.length, total: n });
    return out;
  };
  const tooMany = (what: string) =>
    new InputError(`filling the missing steps on the ${what} grid would add more than ${budget} empty values (to ${observed} given): is the frequency right?`);

  if (set.steps) {
    let step = 0;
    for (const s of set.steps) for (let i = 1; i < s.length; i++) step = gcd(step, (s[i] as number) - (s[i - 1] as number));
    step ||= 1;
    const index = set.steps.map((s) => s.map((v) => (v - (s[0] ?? 0)) / step));
    if (index.reduce((n, ix) => n + (ix.at(-1) ?? -1) + 1 - ix.length, 0) > budget) throw tooMany(`step ${step}`);
    const inputs = set.inputs.map((x, k) => ({ ...x, target: place(k, index[k] ?? [], (x.target ?? []) as (number | null)[]) }));
    const first = inputs.map((x, k) => ({ first: set.steps?.[k]?.[0] ?? 0, step, length: x.target.length }));
    return { set: { ...set, inputs, index: first }, frequency: given ?? null, inferred: false, irregular: false, filled };
  }
  if (!set.times) return { set, frequency: given ?? null, inferred: false, irregular: false, filled };
  const code = given ?? inferFromTimes(set.times);
  if (!code) return { set, frequency: null, inferred: false, irregular: true, filled };
  const freq = parseFrequency(code);
  // A code unknown here goes as given: the service answers it with the list of accepted codes.
  if (!freq) return { set, frequency: code, inferred: !given, irregular: false, filled };
  let left = budget;
  const inputs = set.inputs.map((x, k) => {
    const times = set.times?.[k] ?? [];
    const stamps = set.stamps?.[k] ?? [];
    const at = gridIndexes(times, freq, times.length + left);
    if (!at.ok && 'tooLong' in at) throw tooMany(code);
    if (!at.ok) {
      const where = at.at === 0 ? 'is not on it' : `is off the grid that starts at ${stamps[0]}`;
      throw new InputError(
        `series ${set.ids[k]}: ds ${stamps[at.at]} ${where} (frequency ${code}${given ? ', from --freq' : ''}: expected ${new Date(at.expected).toISOString()}); ` +
          (given ? 'check --freq, or leave it out to infer the frequency' : 'pass --freq'),
      );
    }
    left -= (at.index.at(-1) ?? -1) + 1 - at.index.length;
    if (left < 0) throw tooMany(code);
    return { ...x, target: place(k, at.index, (x.target ?? []) as (number | null)[]) };
  });
  return { set: { ...set, inputs }, frequency: code, inferred: !given, irregular: false, filled };
}

/** Reads series from CSV or JSON text (`auto` looks at the first character). */
export function parseSeries(text: string, format: 'csv' | 'json' | 'auto' = 'auto'): SeriesSet {
  const f = format === 'auto' ? (/^\s*[[{]/.test(text) ? 'json' : 'csv') : format;
  return f === 'json' ? fromJson(text) : fromCsv(text);
}

/** The column name of a quantile level: 0.1 → q10, 0.025 → q2.5. */
export function quantileColumn(level: number): string {
  return `q${Number((level * 100).toFixed(6))}`;
}

export type OutputRow = Record<string, string | number | null>;

/** One row per series and step: unique_id, ds (the step number when the API has no timestamps), mean, q…. */
export function forecastRows(
  ids: string[],
  response: Pick<ForecastResponse, 'outputs' | 'quantile_levels'>,
  dateOnly = false,
  index?: SeriesSet['index'],
): OutputRow[] {
  const rows: OutputRow[] = [];
  const ds = (t: string | undefined, j: number, i: number) => {
    // Step-number ds continue after the last one: first + (length + j) × step.
    const ix = index?.[i];
    if (ix) return ix.first + (ix.length + j) * ix.step;
    if (t === undefined) return j + 1;
    const midnight = dateOnly ? /^(\d{4}-\d{2}-\d{2})T00:00:00(?:\.0+)?Z$/.exec(t) : null;
    return midnight?.[1] ?? t;
  };
  response.outputs.forEach((out, i) => {
    const id = ids[i] ?? `${DEFAULT_ID}_${i + 1}`;
    const byLevel = new Map((out.quantile_predictions ?? []).map((q) => [q.level, q.values]));
    out.mean.forEach((step, j) => {
      const row: OutputRow = { unique_id: id, ds: ds(out.timestamps?.[j], j, i), mean: step[0] ?? null };
      for (const level of response.quantile_levels) row[quantileColumn(level)] = byLevel.get(level)?.[j]?.[0] ?? null;
      rows.push(row);
    });
  });
  return rows;
}

export function rowsToCsv(rows: OutputRow[], levels: number[]): string {
  const columns = ['unique_id', 'ds', 'mean', ...levels.map(quantileColumn)];
  return stringify(rows, { header: true, columns, cast: { number: (n) => String(n) } });
}

export interface AnomalyRow {
  unique_id: string;
  ds: string | number;
  value: number | null;
  expected: number | null;
  lower: number | null;
  upper: number | null;
  score: number | null;
  anomaly: boolean;
}

/** One row per scored point of each series (first variate), its ds the timestamp, the input's step number, or the step (1-based). */
export function anomalyRows(ids: string[], response: Pick<DetectAnomaliesResponse, 'outputs'>, dateOnly = false, index?: SeriesSet['index']): AnomalyRow[] {
  const rows: AnomalyRow[] = [];
  response.outputs.forEach((out, i) => {
    const id = ids[i] ?? `${DEFAULT_ID}_${i + 1}`;
    out.anomaly.forEach((flags, k) => {
      const t = out.timestamps?.[k];
      const midnight = t && dateOnly ? /^(\d{4}-\d{2}-\d{2})T00:00:00(?:\.0+)?Z$/.exec(t) : null;
      rows.push({
        unique_id: id,
        ds: midnight?.[1] ?? t ?? (index?.[i] ? (index[i]?.first ?? 0) + (out.start_index + k) * (index[i]?.step ?? 1) : out.start_index + k + 1),
        value: out.value[k]?.[0] ?? null,
        expected: out.expected[k]?.[0] ?? null,
        lower: out.lower[k]?.[0] ?? null,
        upper: out.upper[k]?.[0] ?? null,
        score: out.score[k]?.[0] ?? null,
        anomaly: flags[0] ?? false,
      });
    });
  });
  return rows;
}

export function anomalyRowsToCsv(rows: AnomalyRow[]): string {
  const columns = ['unique_id', 'ds', 'value', 'expected', 'lower', 'upper', 'score', 'anomaly'];
  return stringify(rows, { header: true, columns, cast: { number: (n) => String(n), boolean: (b) => (b ? 'true' : 'false') } });
}
