import { type Frequency, parseFrequency, parseIsoMs, stepTime } from '../forecasting/frequency.ts';
import { LIMITS } from '../forecasting/schemas.ts';
import { AppError, type FieldIssue, ValidationFailure } from '../shared/errors.ts';
import { TurnBudget } from '../shared/turns.ts';
import type { IngestOptionsT, SeriesIngestResponseT } from './schemas.ts';
import { type Cell, MISSING, rowName, type Table } from './table.ts';

const TIME_NAMES = ['ds', 'date', 'time', 'timestamp', 'datetime', 'period', 'month', 'week', 'day', 'year', 'dt'];
const VALUE_NAMES = ['y', 'value', 'values', 'target', 'observation', 'count', 'amount', 'sales'];
const ID_NAMES = ['unique_id', 'id', 'series', 'series_id', 'item_id', 'key', 'name', 'sku'];
const LISTED = 100;

/** A timestamp cell as epoch ms (ISO 8601 dates and date-times, YYYY-MM, YYYY/MM/DD), or null. */
export function parseTime(c: Cell): number | null {
  if (typeof c !== 'string') return null;
  let s = c.trim();
  if (/^\d{4}\/\d{2}\/\d{2}/.test(s)) s = s.replace(/\//g, '-');
  if (/^\d{4}-\d{2}$/.test(s)) s = `${s}-01`;
  const ms = parseIsoMs(s);
  return Number.isNaN(ms) ? null : ms;
}

function parseValue(c: Cell): number | null | undefined {
  if (c === null) return null;
  if (typeof c === 'number') return Number.isFinite(c) ? c : undefined;
  const s = c.trim();
  if (MISSING.has(s.toLowerCase())) return null;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) return undefined;
  const v = Number(s);
  return Number.isFinite(v) ? v : undefined;
}

function sample(t: Table, col: number): Cell[] {
  const out: Cell[] = [];
  for (const row of t.rows) {
    const v = row[col];
    if (v !== null && v !== undefined && v !== '') out.push(v);
    if (out.length >= 50) break;
  }
  return out;
}

interface Columns {
  time: number;
  values: number[];
  id: number | null;
}

function pickColumns(t: Table, o: IngestOptionsT, field: string): Columns {
  const lower = t.header.map((h) => h.toLowerCase());
  const named = (name: string | null | undefined, what: string): number | null => {
    if (!name) return null;
    const i = t.header.indexOf(name);
    const j = i >= 0 ? i : lower.indexOf(name.toLowerCase());
    if (j < 0)
      throw new ValidationFailure([{ path: [`${what}_column`], msg: `No column '${name}'; the columns are ${t.header.join(', ')}`, type: 'value_error' }]);
    return j;
  };
  const byName = (names: string[], skip: Set<number>): number | null => {
    for (const n of names) {
      const i = lower.indexOf(n);
      if (i >= 0 && !skip.has(i)) return i;
    }
    return null;
  };
  const isTimeCol = (i: number) => {
    const s = sample(t, i);
    return s.length > 0 && s.every((c) => parseTime(c) !== null);
  };
  const isNumericCol = (i: number) => {
    const s = sample(t, i);
    return s.length > 0 && s.every((c) => parseValue(c) !== undefined);
  };
  let time = named(o.time_column, 'time') ?? byName(TIME_NAMES, new Set());
  if (time === null) time = t.header.findIndex((_, i) => isTimeCol(i));
  if (time === null || time < 0) {
    throw new ValidationFailure([
      { path: [field], msg: `No column of timestamps found among ${t.header.join(', ')}; name it with time_column (ISO 8601 dates)`, type: 'value_error' },
    ]);
  }
  const taken = new Set([time]);
  let id = named(o.id_column, 'id') ?? byName(ID_NAMES, taken);
  if (id !== null) taken.add(id);
  const explicitValue = named(o.value_column, 'value');
  let values: number[];
  if (explicitValue !== null) values = [explicitValue];
  else {
    const v = byName(VALUE_NAMES, taken);
    if (v !== null) values = [v];
    else values = t.header.map((_, i) => i).filter((i) => !taken.has(i) && isNumericCol(i));
  }
  if (values.length === 0) {
    throw new ValidationFailure([
      { path: [field], msg: `No numeric column found among ${t.header.join(', ')}; name it with value_column`, type: 'value_error' },
    ]);
  }
  // An unnamed text column beside one value column is the series name (long format).
  if (id === null && values.length === 1) {
    const text = t.header.map((_, i) => i).find((i) => !taken.has(i) && i !== values[0] && !isNumericCol(i) && sample(t, i).length > 0);
    if (text !== undefined) id = text;
  }
  if (id !== null && values.length > 1) {
    throw new ValidationFailure([
      {
        path: ['value_column'],
        msg: `Several numeric columns (${values.map((i) => t.header[i]).join(', ')}) beside the id column '${t.header[id]}'; name one with value_column`,
        type: 'value_error',
      },
    ]);
  }
  return { time, values, id };
}

/** The frequency the timestamps step by, or null when irregular: calendar months first, then fixed units. */
export function detectFrequency(times: number[][]): string | null {
  // Arithmetic on epoch ms where it can be (UTC days are 86,400,000 ms; 1970-01-01 was a Thursday),
  // a Date only while a calendar question is still open: 50,000 sampled times were 28–61 ms of one turn.
  const DAY_MS = 86_400_000;
  const monthly = times.every((ts) => ts.every((ms) => ((ms % DAY_MS) + DAY_MS) % DAY_MS === 0));
  const counts = new Map<number, number>();
  let atStart = monthly;
  let atEnd = monthly;
  let weekend = false;
  for (const ts of times) {
    for (let i = 0; i < ts.length; i++) {
      const ms = ts[i] as number;
      if (atStart || atEnd) {
        const d = new Date(ms);
        if (d.getUTCDate() !== 1) atStart = false;
        if (new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1)).getUTCDate() !== 1) atEnd = false;
      }
      if (!weekend) {
        const dow = (((Math.floor(ms / DAY_MS) + 4) % 7) + 7) % 7;
        if (dow === 0 || dow === 6) weekend = true;
      }
      if (i === 0) continue;
      const diff = ms - (ts[i - 1] as number);
      counts.set(diff, (counts.get(diff) ?? 0) + 1);
    }
  }
  // Months between steps: only asked of month-aligned series.
  const monthCounts = new Map<number, number>();
  if (monthly && (atStart || atEnd)) {
    for (const ts of times) {
      for (let i = 1; i < ts.length; i++) {
        const d = new Date(ts[i] as number);
        const p = new Date(ts[i - 1] as number);
        const months = (d.getUTCFullYear() - p.getUTCFullYear()) * 12 + d.getUTCMonth() - p.getUTCMonth();
        monthCounts.set(months, (monthCounts.get(months) ?? 0) + 1);
      }
    }
  }
  if (counts.size === 0) return null;
  const mode = (m: Map<number, number>) => [...m.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0]?.[0] ?? 0;
  if (monthly && (atStart || atEnd)) {
    const months = mode(monthCounts);
    const suffix = atStart ? 'S' : '';
    if (months === 12) return `Y${suffix}`;
    if (months === 3) return `Q${suffix}`;
    if (months >= 1 && months < 12) return months === 1 ? `M${suffix}` : `${months}M${suffix}`;
  }
  const step = mode(counts);
  const DAY = 86_400_000;
  if (step <= 0) return null;
  if (step === DAY && !weekend && counts.has(3 * DAY)) return 'B';
  const units: [number, string][] = [
    [7 * DAY, 'W'],
    [DAY, 'D'],
    [3_600_000, 'h'],
    [60_000, 'min'],
    [1000, 's'],
  ];
  for (const [ms, code] of units) {
    if (step % ms === 0) {
      if (code === 'W' && step !== ms) continue;
      const k = step / ms;
      return k === 1 ? code : `${k}${code}`;
    }
  }
  return null;
}

/** Steps of `freq` from `a` to `b` (an integer when `b` is on the grid started at `a`, else null). */
function stepsBetween(a: number, b: number, freq: Frequency, limit: number): number | null {
  let lo = 0;
  // Fixed units in closed form; calendar units by walking (bounded by the gap limit: a gap the walk
  // does not close within it is longer than any series may be, on the grid or not).
  const fixed = { second: 1000, minute: 60_000, hour: 3_600_000, day: 86_400_000, week: 604_800_000 }[freq.unit as string];
  if (fixed !== undefined) {
    const k = (b - a) / (fixed * freq.multiple);
    return Number.isInteger(k) ? k : null;
  }
  const start = new Date(a);
  while (lo < limit) {
    lo += 1;
    const t = stepTime(start, freq, lo).getTime();
    if (t === b) return lo;
    if (t > b) return null;
  }
  return limit + 1;
}

const tooLong = (uid: string) => new AppError('request_too_large', `Series '${uid}' would be longer than ${LIMITS.maxSeriesLength} steps (gaps included)`);

/** Null steps any answer may fill for gaps, whatever the ratio: a few rows a year apart at a monthly frequency. */
export const GAP_FILL_FLOOR = 1000;

export interface ShapeLimits {
  /** Series read (INGEST_MAX_SERIES). */
  maxSeries: number;
  /** Points of the answer in all, gaps included (INGEST_MAX_POINTS). */
  maxPoints: number;
  /** Null steps filled for gaps per point read from the data, plus GAP_FILL_FLOOR (INGEST_GAP_FILL_RATIO). */
  gapFillRatio: number;
}

/**
 * The answer's size follows from the data sent, not from the distance between its timestamps:
 * filling gaps is free work for the caller, so it may add at most `gapFillRatio` null steps per
 * point read (plus GAP_FILL_FLOOR), and the answer holds at most `maxPoints` points. Checked before
 * any gap is filled: 60 rows 100,000 minutes apart were a 10 MB answer for 2 KB of text.
 */
function gapBudget(limits: ShapeLimits, read: number): { fill: number; points: number } {
  return { fill: Math.floor(limits.gapFillRatio * read) + GAP_FILL_FLOOR, points: limits.maxPoints };
}

function tooManyFilled(read: number, budget: number, ratio: number, freq: string): AppError {
  return new AppError(
    'request_too_large',
    `The gaps between the timestamps would be filled with more than ${budget} nulls (${read} points read, frequency ${freq}); ` +
      `at most ${ratio} per point read plus ${GAP_FILL_FLOOR} are filled (INGEST_GAP_FILL_RATIO). ` +
      'Check the frequency (the step the data really has), aggregate sparse data to a coarser step first, or send gaps: "error" to find the gaps',
  );
}

/** Turns a table into forecast inputs: columns, order, duplicates, frequency, gaps. */
export async function shapeSeries(t: Table, o: IngestOptionsT, field: string, limits: ShapeLimits): Promise<Omit<SeriesIngestResponseT, 'object'>> {
  const { maxSeries } = limits;
  const cols = pickColumns(t, o, field);
  const warnings: string[] = [];
  const issues: FieldIssue[] = [];
  const fail = (origin: number, msg: string, column: number) => {
    if (issues.length < 20)
      issues.push({ path: [field], msg: `${rowName(t, origin)}, column '${t.header[column]}': ${msg}`, type: 'value_error', ctx: { row: origin } });
  };
  // unique_id → time → values seen (with their rows, for duplicate reports)
  const series = new Map<string, Map<number, { values: (number | null)[]; rows: number[] }>>();
  const turns = new TurnBudget();
  for (let r = 0; r < t.rows.length; r++) {
    if (turns.spent) await turns.next();
    const row = t.rows[r] as Cell[];
    const origin = t.origin[r] as number;
    const time = parseTime(row[cols.time] ?? null);
    if (time === null) {
      fail(origin, `'${String(row[cols.time] ?? '').slice(0, 40)}' is not a timestamp (ISO 8601, e.g. 2024-01-31 or 2024-01-31T12:00:00Z)`, cols.time);
      continue;
    }
    const ids = cols.id !== null ? [String(row[cols.id] ?? '')] : cols.values.length > 1 ? cols.values.map((c) => t.header[c] as string) : ['series_1'];
    cols.values.forEach((c, k) => {
      const v = parseValue(row[c] ?? null);
      if (v === undefined) {
        fail(origin, `'${String(row[c]).slice(0, 40)}' is not a number`, c);
        return;
      }
      const uid = ids[cols.id !== null ? 0 : k] as string;
      let s = series.get(uid);
      if (!s) {
        if (series.size >= maxSeries)
          throw new AppError('request_too_large', `The data holds more than ${maxSeries} series; at most ${maxSeries} are read (INGEST_MAX_SERIES)`);
        s = new Map();
        series.set(uid, s);
      }
      const at = s.get(time);
      if (at) {
        at.values.push(v);
        at.rows.push(origin);
      } else s.set(time, { values: [v], rows: [origin] });
    });
  }
  if (issues.length > 0) throw new ValidationFailure(issues);
  if (series.size === 0) throw new ValidationFailure([{ path: [field], msg: 'The data has a header but no rows', type: 'value_error' }]);

  const duplicates: SeriesIngestResponseT['duplicates'] = [];
  for (const [uid, s] of series) {
    for (const [time, at] of s) {
      if (at.rows.length > 1 && duplicates.length < LISTED) duplicates.push({ unique_id: uid, time: new Date(time).toISOString(), rows: at.rows });
    }
  }
  if (duplicates.length > 0 && o.duplicates === 'error') {
    throw new ValidationFailure(
      duplicates.slice(0, 10).map((d) => ({
        path: [field],
        msg: `${d.rows.map((r) => rowName(t, r)).join(' and ')}: series '${d.unique_id}' has two values for ${d.time}; choose duplicates: first, last or mean`,
        type: 'value_error',
        ctx: { rows: d.rows },
      })),
    );
  }
  const resolve = (vals: (number | null)[]): number | null => {
    if (o.duplicates === 'first') return vals[0] ?? null;
    if (o.duplicates === 'last') return vals.at(-1) ?? null;
    const present = vals.filter((v): v is number => v !== null);
    return present.length === 0 ? null : present.reduce((a, b) => a + b, 0) / present.length;
  };

  const ordered: { uid: string; times: number[]; s: Map<number, { values: (number | null)[]; rows: number[] }> }[] = [];
  for (const [uid, s] of series) {
    if (turns.spent) await turns.next();
    const times = [...s.keys()];
    const sorted = Float64Array.from(times).sort();
    if (times.some((x, i) => x !== sorted[i])) warnings.push(`Series '${uid}': rows were not in time order; sorted`);
    ordered.push({ uid, times: Array.from(sorted), s });
  }
  // Detected on a sample (the first 1000 steps of up to 50 series, ~8 ms: a turn of its own); steps off that grid are caught below, naming their line.
  await turns.next();
  const code = o.frequency ?? detectFrequency(ordered.slice(0, 50).map((x) => x.times.slice(0, 1000)));
  await turns.next();
  const freq = code ? parseFrequency(code) : null;
  if (o.frequency && !freq)
    throw new ValidationFailure([{ path: ['frequency'], msg: `'${o.frequency}' is not a frequency code (D, h, MS, W, …)`, type: 'value_error' }]);
  if (!freq) warnings.push('The timestamps are irregular: no frequency detected, gaps are not filled');

  const gaps: SeriesIngestResponseT['gaps'] = [];
  const reports: SeriesIngestResponseT['series'] = [];
  const inputs: SeriesIngestResponseT['inputs'] = [];
  const read = ordered.reduce((a, x) => a + x.times.length, 0);
  const budget = gapBudget(limits, read);
  const tooMany = () =>
    new AppError(
      'request_too_large',
      `The series would hold more than ${budget.points} points in all (gaps included); at most ${budget.points} are returned (INGEST_MAX_POINTS). Send fewer or shorter series per request`,
    );
  if (read > budget.points) throw tooMany();
  let total = 0;
  let filled = 0;
  for (const { uid, times, s } of ordered) {
    const target: (number | null)[] = [];
    let missing = 0;
    for (let i = 0; i < times.length; i++) {
      if (turns.spent) await turns.next();
      const time = times[i] as number;
      if (i > 0 && freq) {
        const prev = times[i - 1] as number;
        const steps = stepsBetween(prev, time, freq, LIMITS.maxSeriesLength);
        if (steps === null) {
          const at = s.get(time)?.rows[0] ?? 0;
          throw new ValidationFailure([
            {
              path: [field],
              msg: `${rowName(t, at)}: ${new Date(time).toISOString()} of series '${uid}' is off the ${freq.code} grid that starts at ${new Date(times[0] as number).toISOString()}`,
              type: 'value_error',
              ctx: { row: at },
            },
          ]);
        }
        // Measured before it is filled: two rows millennia apart are billions of steps at 1min.
        if (target.length + steps > LIMITS.maxSeriesLength) throw tooLong(uid);
        if (steps > 1 && o.gaps !== 'error') {
          // Counted before the nulls are written: the answer's size is bounded by the data read.
          if (filled + steps - 1 > budget.fill) throw tooManyFilled(read, budget.fill, limits.gapFillRatio, freq.code);
          if (total + target.length + steps > budget.points) throw tooMany();
        }
        if (steps > 1) {
          if (o.gaps === 'error') {
            const at = s.get(time)?.rows[0] ?? 0;
            throw new ValidationFailure([
              {
                path: [field],
                msg: `${rowName(t, at)}: series '${uid}' misses ${steps - 1} step(s) before ${new Date(time).toISOString()}; use gaps: null to fill them`,
                type: 'value_error',
                ctx: { row: at },
              },
            ]);
          }
          if (gaps.length < LISTED) gaps.push({ unique_id: uid, after: new Date(prev).toISOString(), missing: steps - 1 });
          missing += steps - 1;
          filled += steps - 1;
          for (let k = 1; k < steps; k++) target.push(null);
        }
      }
      const v = resolve(s.get(time)?.values ?? [null]);
      if (v === null) missing += 1;
      target.push(v);
      if (target.length > LIMITS.maxSeriesLength) throw tooLong(uid);
    }
    total += target.length;
    if (total > budget.points) throw tooMany();
    const start = new Date(times[0] as number).toISOString();
    const end = new Date(times.at(-1) as number).toISOString();
    reports.push({ unique_id: uid, start, end, length: target.length, observed: target.length - missing, missing });
    inputs.push({ target, start, item_id: uid });
  }
  return {
    format: t.format,
    rows: t.rows.length,
    columns: {
      time: t.header[cols.time] as string,
      value: cols.values.map((i) => t.header[i] as string),
      id: cols.id !== null ? (t.header[cols.id] as string) : null,
      ignored: t.header.filter((_, i) => i !== cols.time && i !== cols.id && !cols.values.includes(i)),
    },
    frequency: freq?.code ?? null,
    inputs,
    series: reports,
    gaps,
    duplicates,
    warnings,
  };
}
