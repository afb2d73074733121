/**
 * Series in, rows out: the CLI's conversions between files and the API.
 * In:  one series (a column of numbers, `ds,y`, a JSON array of numbers, `{target, start}`), or
 *      Nixtla's long format `unique_id, ds, y` (CSV, or JSON records); `{"inputs": [...]}` is passed as is.
 * Out: one row per series and step: unique_id, ds, mean, then one column per quantile level (q10, q50, q90).
 */
import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import type { DetectAnomaliesResponse, ForecastInput, ForecastResponse } from './client.ts';

export class InputError extends Error {
  override readonly name = 'InputError';
}

export interface SeriesSet {
  inputs: ForecastInput[];
  /** The unique_id of each input, in order. */
  ids: string[];
  /** Every ds was a plain date (YYYY-MM-DD): midnight timestamps are printed as dates too. */
  dateOnly?: boolean;
  /** The sorted ds of each series, when the input had them. */
  stamps?: string[][];
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

/** Groups long-format rows by unique_id (first-seen order), each sorted by ds. */
function group(rows: Row[]): SeriesSet {
  const byId = new Map<string, Row[]>();
  for (const r of rows) {
    const list = byId.get(r.id);
    if (list) list.push(r);
    else byId.set(r.id, [r]);
  }
  const inputs: ForecastInput[] = [];
  const ids: string[] = [];
  const stamps: string[][] = [];
  for (const [id, list] of byId) {
    const dated = list.every((r) => r.ds !== null);
    if (!dated && list.some((r) => r.ds !== null)) throw new InputError(`series ${id}: some rows have a ds and some do not`);
    if (dated) {
      const keyed = list.map((r) => {
        const t = Date.parse(r.ds ?? '');
        if (Number.isNaN(t)) throw new InputError(`${r.where}: ds is not a date: ${JSON.stringify(r.ds).slice(0, 60)}`);
        return { r, t };
      });
      keyed.sort((a, b) => a.t - b.t);
      for (let i = 1; i < keyed.length; i++) {
        const [a, b] = [keyed[i - 1], keyed[i]];
        if (a && b && a.t === b.t) throw new InputError(`series ${id}: ds ${b.r.ds} appears twice (${a.r.where} and ${b.r.where})`);
      }
      list.splice(0, list.length, ...keyed.map((k) => k.r));
    }
    ids.push(id);
    if (dated) stamps.push(list.map((r) => r.ds ?? ''));
    inputs.push({ target: list.map((r) => r.y), item_id: id, ...(dated ? { start: list[0]?.ds ?? null } : {}) });
  }
  if (inputs.length === 0) throw new InputError('the input holds no series');
  const dateOnly = rows.length > 0 && rows.every((r) => r.ds !== null && /^\d{4}-\d{2}-\d{2}$/.test(r.ds));
  return { inputs, ids, dateOnly, stamps };
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

const SECOND = 1000;
const FIXED: [number, string][] = [
  [7 * 86_400 * SECOND, 'W'],
  [86_400 * SECOND, 'D'],
  [3600 * SECOND, 'h'],
  [60 * SECOND, 'min'],
  [SECOND, 's'],
];

/**
 * The pandas-style frequency of the first series with at least 3 timestamps, when its steps are
 * regular: fixed steps (`D`, `2h`, `15min`, `W`), or month/quarter/year starts (`MS`, `QS`, `YS`)
 * or ends (`M`, `Q`, `Y`); null when the steps are irregular or there are no timestamps.
 */
export function inferFrequency(set: SeriesSet): string | null {
  const stamps = set.stamps?.find((s) => s.length >= 3);
  return stamps ? frequencyOf(stamps) : null;
}

/** The frequency of one series' sorted timestamps (see inferFrequency). */
export function frequencyOf(stamps: string[]): string | null {
  if (stamps.length < 3) return null;
  const t = stamps.map((s) => Date.parse(s));
  if (t.some(Number.isNaN)) return null;
  return calendarFrequency(t) ?? fixedFrequency(t);
}

/** Month, quarter or year starts or ends (checked first: Jul 1, Aug 1, Sep 1 is MS, not 31D). */
function calendarFrequency(t: number[]): string | null {
  const dates = t.map((x) => new Date(x));
  const midnight = dates.every((d) => d.getUTCHours() === 0 && d.getUTCMinutes() === 0 && d.getUTCSeconds() === 0 && d.getUTCMilliseconds() === 0);
  if (!midnight) return null;
  const starts = dates.every((d) => d.getUTCDate() === 1);
  const ends = dates.every((d) => new Date(d.getTime() + 86_400 * SECOND).getUTCDate() === 1);
  if (!starts && !ends) return null;
  const monthIndex = dates.map((d) => d.getUTCFullYear() * 12 + d.getUTCMonth());
  const k = (monthIndex[1] ?? 0) - (monthIndex[0] ?? 0);
  if (k < 1 || !monthIndex.slice(1).every((m, i) => m - (monthIndex[i] ?? 0) === k)) return null;
  const suffix = starts ? 'S' : '';
  if (k % 12 === 0) return `${k === 12 ? '' : k / 12}Y${suffix}`;
  if (k % 3 === 0) return `${k === 3 ? '' : k / 3}Q${suffix}`;
  return `${k === 1 ? '' : k}M${suffix}`;
}

/** Equal steps of whole weeks, days, hours, minutes or seconds. */
function fixedFrequency(t: number[]): string | null {
  const steps = t.slice(1).map((x, i) => x - (t[i] ?? 0));
  const first = steps[0] ?? 0;
  if (first <= 0 || !steps.every((d) => d === first)) return null;
  for (const [unit, code] of FIXED) {
    if (first % unit === 0) return first === unit ? code : `${first / unit}${code}`;
  }
  return null;
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
export function forecastRows(ids: string[], response: Pick<ForecastResponse, 'outputs' | 'quantile_levels'>, dateOnly = false): OutputRow[] {
  const rows: OutputRow[] = [];
  const ds = (t: string | undefined, j: number) => {
    if (t === undefined) return j + 1;
    const midnight = dateOnly ? /^(\d{4}-\d{2}-\d{2})T00:00:00(?:\.0+)?Z$/.exec(t) : null;
    return midnight?.[1] ?? t;
  };
  response.outputs.forEach((out, i) => {
    const id = ids[i] ?? `${DEFAULT_ID}_${i + 1}`;
    const byLevel = new Map((out.quantile_predictions ?? []).map((q) => [q.level, q.values]));
    out.mean.forEach((step, j) => {
      const row: OutputRow = { unique_id: id, ds: ds(out.timestamps?.[j], j), mean: step[0] ?? null };
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

/** One row per scored point of each series (first variate), its ds the timestamp or the step number (1-based). */
export function anomalyRows(ids: string[], response: Pick<DetectAnomaliesResponse, 'outputs'>, dateOnly = false): AnomalyRow[] {
  const rows: AnomalyRow[] = [];
  response.outputs.forEach((out, i) => {
    const id = ids[i] ?? `${DEFAULT_ID}_${i + 1}`;
    out.anomaly.forEach((flags, k) => {
      const t = out.timestamps?.[k];
      const midnight = t && dateOnly ? /^(\d{4}-\d{2}-\d{2})T00:00:00(?:\.0+)?Z$/.exec(t) : null;
      rows.push({
        unique_id: id,
        ds: midnight?.[1] ?? t ?? out.start_index + k + 1,
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
