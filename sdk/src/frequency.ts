/**
 * Frequencies on the client: the pandas-style codes the service accepts (docs/forecasting.md
 * "Frequencies and timestamps"), the grid each one lays from a series' first timestamp, the code
 * that a set of series' timestamps follow, and where each timestamp falls on that grid (so that
 * missing dates become missing values instead of being dropped). Arithmetic is in UTC, like the
 * service's: a grid computed here is the one the service continues for the forecast.
 */

export type Unit = 'second' | 'minute' | 'hour' | 'day' | 'bday' | 'week' | 'month' | 'quarter' | 'year';

export interface Frequency {
  code: string;
  multiple: number;
  unit: Unit;
  /** Period ends (M, Q, Y) rather than starts (MS, QS, YS). */
  periodEnd: boolean;
  /** Weeks: the weekday steps land on (0 = Sunday). Quarters and years: the month phase of their period starts. */
  anchor?: number;
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const WEEKDAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const mod = (a: number, k: number): number => ((a % k) + k) % k;
const DAY_MS = 86_400_000;

const UNITS: Record<string, { unit: Unit; periodEnd: boolean }> = {
  s: { unit: 'second', periodEnd: false },
  S: { unit: 'second', periodEnd: false },
  min: { unit: 'minute', periodEnd: false },
  T: { unit: 'minute', periodEnd: false },
  h: { unit: 'hour', periodEnd: false },
  H: { unit: 'hour', periodEnd: false },
  D: { unit: 'day', periodEnd: false },
  B: { unit: 'bday', periodEnd: false },
  W: { unit: 'week', periodEnd: false },
  MS: { unit: 'month', periodEnd: false },
  M: { unit: 'month', periodEnd: true },
  ME: { unit: 'month', periodEnd: true },
  QS: { unit: 'quarter', periodEnd: false },
  Q: { unit: 'quarter', periodEnd: true },
  QE: { unit: 'quarter', periodEnd: true },
  YS: { unit: 'year', periodEnd: false },
  AS: { unit: 'year', periodEnd: false },
  Y: { unit: 'year', periodEnd: true },
  YE: { unit: 'year', periodEnd: true },
  A: { unit: 'year', periodEnd: true },
};

const FIXED_MS: Partial<Record<Unit, number>> = { second: 1000, minute: 60_000, hour: 3_600_000, day: DAY_MS, week: 7 * DAY_MS };
const MONTHS_PER: Partial<Record<Unit, number>> = { month: 1, quarter: 3, year: 12 };

/** A code the service accepts (`15min`, `W-WED`, `QS-FEB`, `Y-JUN`, …), or null. */
export function parseFrequency(code: string): Frequency | null {
  const m = /^(\d+)?([A-Za-z]+)(?:-([A-Za-z]{3}))?$/.exec(code.trim());
  if (!m) return null;
  const multiple = m[1] ? Number(m[1]) : 1;
  const u = UNITS[m[2] ?? ''];
  if (!u || !Number.isInteger(multiple) || multiple < 1 || multiple > 100_000) return null;
  const freq: Frequency = { code: code.trim(), multiple, ...u };
  if (m[3] === undefined) return freq;
  const suffix = m[3].toUpperCase();
  if (u.unit === 'week') {
    const day = WEEKDAYS.indexOf(suffix);
    return day < 0 ? null : { ...freq, anchor: day };
  }
  const month = MONTHS.indexOf(suffix);
  if (month < 0 || (u.unit !== 'quarter' && u.unit !== 'year')) return null;
  const k = u.unit === 'quarter' ? 3 : 12;
  return { ...freq, anchor: mod(u.periodEnd ? month + 1 : month, k) };
}

/** Month-based step `periods` from `start`, landing on period starts or ends (a start off one rolls forward). */
function monthStep(start: Date, monthsPerPeriod: number, periodEnd: boolean, periods: number, phase: number): number {
  let mo = start.getUTCFullYear() * 12 + start.getUTCMonth();
  const at = (x: number) => mod(x - phase, monthsPerPeriod);
  if (periodEnd) {
    while (at(mo) !== monthsPerPeriod - 1) mo += 1;
  } else if (start.getUTCDate() !== 1 || at(mo) !== 0) {
    mo += 1;
    while (at(mo) !== 0) mo += 1;
  }
  mo += periods * monthsPerPeriod;
  const out = new Date(Date.UTC(2000, 0, 1, start.getUTCHours(), start.getUTCMinutes(), start.getUTCSeconds(), start.getUTCMilliseconds()));
  out.setUTCFullYear(Math.floor(mo / 12), mod(mo, 12) + (periodEnd ? 1 : 0), periodEnd ? 0 : 1);
  return out.getTime();
}

function addBusinessDays(t: number, n: number): number {
  const dow = new Date(t).getUTCDay();
  const rolled = t + (dow === 6 ? 2 : dow === 0 ? 1 : 0) * DAY_MS;
  const weekday = new Date(rolled).getUTCDay();
  const weeks = Math.floor(n / 5);
  const rest = n % 5;
  return rolled + (weeks * 7 + (weekday + rest > 5 ? rest + 2 : rest)) * DAY_MS;
}

/** Epoch ms of step `k` (0 = the first, which may roll forward from `start` onto the grid), as the service computes it. */
export function stepTime(start: number, freq: Frequency, k: number): number {
  const n = k * freq.multiple;
  const fixed = FIXED_MS[freq.unit];
  if (fixed !== undefined) {
    const first = freq.unit === 'week' && freq.anchor !== undefined ? start + mod(freq.anchor - new Date(start).getUTCDay(), 7) * DAY_MS : start;
    return first + n * fixed;
  }
  if (freq.unit === 'bday') return addBusinessDays(start, n);
  return monthStep(new Date(start), MONTHS_PER[freq.unit] ?? 1, freq.periodEnd, n, freq.anchor ?? 0);
}

const ISO = /^\d{4}-\d{2}-\d{2}(?:([T ])[\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/;
const daysIn = (y: number, m: number): number => (m === 2 ? (y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 29 : 28) : [4, 6, 9, 11].includes(m) ? 30 : 31);

/** Epoch ms of an ISO 8601 date or date-time as the service reads it (no offset: UTC); NaN otherwise. */
export function parseTime(s: string): number {
  const text = s.trim();
  const m = ISO.exec(text);
  if (!m) return Number.NaN;
  const iso = m[1] === undefined ? `${text}T00:00:00Z` : m[2] === undefined ? `${text.replace(' ', 'T')}Z` : text.replace(' ', 'T');
  const t = new Date(iso).getTime();
  const year = Number(text.slice(0, 4));
  const month = Number(text.slice(5, 7));
  return month >= 1 && month <= 12 && Number(text.slice(8, 10)) <= daysIn(year, month) ? t : Number.NaN;
}

const monthIndex = (d: Date): number => d.getUTCFullYear() * 12 + d.getUTCMonth();
const isMidnight = (t: number): boolean => mod(t, DAY_MS) === 0;
const isMonthEnd = (d: Date): boolean => new Date(d.getTime() + DAY_MS).getUTCDate() === 1;

/** Steps between consecutive times of each series (sorted, distinct): a grid must divide all of them. */
function diffs(series: number[][], f: (t: number) => number): number[] {
  const out: number[] = [];
  for (const s of series) for (let i = 1; i < s.length; i++) out.push(f(s[i] as number) - f(s[i - 1] as number));
  return out;
}

function calendarCode(series: number[][]): string | null {
  const all = series.flat();
  if (!all.every(isMidnight)) return null;
  const dates = all.map((t) => new Date(t));
  const starts = dates.every((d) => d.getUTCDate() === 1);
  const ends = !starts && dates.every(isMonthEnd);
  if (!starts && !ends) return null;
  const steps = diffs(series, (t) => monthIndex(new Date(t)));
  const k = Math.min(...steps);
  if (!(k >= 1) || steps.some((d) => d % k !== 0)) return null;
  const phases = (n: number) => new Set(dates.map((d) => mod(monthIndex(d), n)));
  const [S, many] = [starts ? 'S' : '', (n: number) => (n === 1 ? '' : String(n))];
  if (k % 12 === 0 || k % 3 === 0) {
    const per = k % 12 === 0 ? 12 : 3;
    const ph = phases(per);
    if (ph.size === 1) {
      const p = [...ph][0] as number;
      const unit = per === 12 ? 'Y' : 'Q';
      // Calendar periods go unanchored (YS, Q); others name the month as pandas does: YS-JUL, Y-JUN, QS-FEB, Q-NOV.
      const calendar = starts ? p === 0 : p === per - 1;
      const anchor = starts ? MONTHS[p] : MONTHS[per === 12 ? p : p + 9];
      return `${many(k / per)}${unit}${S}${calendar ? '' : `-${anchor}`}`;
    }
    // Series on different phases (one in January, one in July): months from each series' own start.
  }
  return `${many(k)}M${S}`;
}

function fixedCode(ms: number): string | null {
  const units: [number, string][] = [
    [7 * DAY_MS, 'W'],
    [DAY_MS, 'D'],
    [3_600_000, 'h'],
    [60_000, 'min'],
    [1000, 's'],
  ];
  for (const [size, code] of units) if (ms % size === 0) return ms === size ? code : `${ms / size}${code}`;
  return null;
}

/**
 * The frequency a set of series' timestamps (epoch ms, each sorted and distinct) follow, allowing
 * missing steps: month, quarter or year starts or ends (`MS`, `Q`, `YS-JUL`, `Y-JUN`, `QS-FEB`,
 * `Q-NOV`, `3MS` …), business days (`B`: weekdays only, across a weekend), else a fixed step
 * (`D`, `2h`, `15min`, `W`). The step is the smallest between consecutive timestamps of any series
 * and every other step must be a whole number of it; null when they are not (irregular), or when
 * no series has 3 timestamps.
 */
export function inferFrequency(series: number[][]): string | null {
  if (!series.some((s) => s.length >= 3)) return null;
  const calendar = calendarCode(series);
  if (calendar) return calendar;
  const steps = diffs(series, (t) => t);
  const step = Math.min(...steps);
  if (!(step > 0) || steps.some((d) => d % step !== 0)) return null;
  if (step === DAY_MS) {
    const all = series.flat();
    const weekdays = all.every((t) => mod(new Date(t).getUTCDay(), 6) !== 0);
    // A step over a weekend (Friday → Monday is 3 days) with no weekend date: business days.
    const skipsWeekend = series.some((s) => s.some((t, i) => i > 0 && (t - (s[i - 1] as number)) / DAY_MS > new Date(t).getUTCDay()));
    if (weekdays && skipsWeekend) return 'B';
  }
  return fixedCode(step);
}

export type GridPlacement = { ok: true; index: number[] } | { ok: false; at: number; expected: number } | { ok: false; tooLong: true };

/**
 * Where a series' timestamps fall on `freq`'s grid from its first one: their step indexes; or the
 * first timestamp off the grid (and the grid time expected there); or `tooLong` when the last
 * would be more than `maxSteps` steps from the first.
 */
export function gridIndexes(times: number[], freq: Frequency, maxSteps: number): GridPlacement {
  const t0 = times[0];
  if (t0 === undefined) return { ok: true, index: [] };
  const fixed = FIXED_MS[freq.unit];
  const first = stepTime(t0, freq, 0);
  if (first !== t0) return { ok: false, at: 0, expected: first };
  const index: number[] = [];
  if (fixed !== undefined) {
    const step = fixed * freq.multiple;
    for (const [j, t] of times.entries()) {
      const k = (t - t0) / step;
      if (!Number.isInteger(k)) return { ok: false, at: j, expected: t0 + Math.ceil(k) * step };
      if (k > maxSteps) return { ok: false, tooLong: true };
      index.push(k);
    }
    return { ok: true, index };
  }
  let k = 0;
  for (const [j, t] of times.entries()) {
    let at = stepTime(t0, freq, k);
    while (at < t && k <= maxSteps) at = stepTime(t0, freq, ++k);
    if (k > maxSteps) return { ok: false, tooLong: true };
    if (at !== t) return { ok: false, at: j, expected: at };
    index.push(k);
  }
  return { ok: true, index };
}
