/**
 * Pandas-style frequency codes: what the service accepts, the season length each implies, and
 * the timestamps of forecast steps. All arithmetic is in UTC.
 *
 * Accepted (an optional integer multiple may precede any code, e.g. `15min`, `2h`, `3D`):
 *   s / S            seconds                 min / T     minutes
 *   h / H            hours                   D           calendar days
 *   B                business days (Mon–Fri) W / W-SUN…  weeks (7 days)
 *   MS               month start             M / ME      month end
 *   QS               quarter start           Q / QE      quarter end
 *   YS / AS          year start              Y / YE / A  year end
 */
export type Unit = 'second' | 'minute' | 'hour' | 'day' | 'bday' | 'week' | 'month' | 'quarter' | 'year';

export interface Frequency {
  code: string;
  multiple: number;
  unit: Unit;
  /** Anchored to the end of the period (M, Q, Y) rather than its start (MS, QS, YS). */
  periodEnd: boolean;
  /** The main seasonal cycle for this frequency, in steps (1 = none). */
  seasonLength: number;
}

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

const SECONDS: Partial<Record<Unit, number>> = { second: 1, minute: 60, hour: 3600, day: 86400, week: 7 * 86400 };

function seasonFor(unit: Unit, multiple: number): number {
  const perDay = (s: number) => Math.round(86400 / (s * multiple));
  switch (unit) {
    case 'second':
      return multiple >= 60 ? perDay(1) : Math.max(1, Math.round(60 / multiple)); // minute cycle for fast data
    case 'minute':
      return Math.max(1, perDay(60)); // daily cycle
    case 'hour':
      return multiple <= 12 ? Math.max(1, perDay(3600)) : 1;
    case 'day':
      return multiple === 1 ? 7 : 1;
    case 'bday':
      return multiple === 1 ? 5 : 1;
    case 'week':
      return multiple === 1 ? 52 : 1;
    case 'month':
      return 12 % multiple === 0 ? 12 / multiple : 1;
    case 'quarter':
      return multiple === 1 ? 4 : 1;
    case 'year':
      return 1;
  }
}

export function parseFrequency(code: string): Frequency | null {
  const m = /^(\d+)?([A-Za-z]+)(?:-[A-Z]{3})?$/.exec(code.trim());
  if (!m) return null;
  const multiple = m[1] ? Number(m[1]) : 1;
  const u = UNITS[m[2] ?? ''];
  if (!u || !Number.isInteger(multiple) || multiple < 1 || multiple > 100_000) return null;
  // Only weeks, quarters and years take an anchor suffix (W-SUN, Q-DEC, A-DEC).
  if (code.includes('-') && !['week', 'quarter', 'year'].includes(u.unit)) return null;
  return { code, multiple, ...u, seasonLength: seasonFor(u.unit, multiple) };
}

const monthsOf: Partial<Record<Unit, number>> = { month: 1, quarter: 3, year: 12 };

/**
 * Month-based steps land on period boundaries, as pandas does: a start that is not on one rolls
 * forward to the next period start (MS, QS, YS) or to the end of its period (M, Q, Y).
 * Quarters are calendar quarters; years are calendar years. The time of day is kept.
 */
function monthStep(start: Date, monthsPerPeriod: number, periodEnd: boolean, periods: number): Date {
  let mo = start.getUTCFullYear() * 12 + start.getUTCMonth();
  if (periodEnd) {
    while (mo % monthsPerPeriod !== monthsPerPeriod - 1) mo += 1;
  } else if (start.getUTCDate() !== 1 || mo % monthsPerPeriod !== 0) {
    mo += 1;
    while (mo % monthsPerPeriod !== 0) mo += 1;
  }
  mo += periods * monthsPerPeriod;
  const y = Math.floor(mo / 12);
  const m = mo % 12;
  // setUTCFullYear rather than Date.UTC(y, …): Date.UTC reads years 0–99 as 1900–1999.
  const out = new Date(Date.UTC(2000, 0, 1, start.getUTCHours(), start.getUTCMinutes(), start.getUTCSeconds(), start.getUTCMilliseconds()));
  out.setUTCFullYear(y, m + (periodEnd ? 1 : 0), periodEnd ? 0 : 1);
  return out;
}

const DAY_MS = 86_400_000;

/**
 * Business days in closed form (O(1) whatever `n`): a weekend start rolls forward to Monday first,
 * as pandas does for B; then whole weeks of five business days, then the remainder, skipping the
 * weekend it crosses. The time of day is kept.
 */
function addBusinessDays(d: Date, n: number): Date {
  const dow = d.getUTCDay();
  const rolled = d.getTime() + (dow === 6 ? 2 : dow === 0 ? 1 : 0) * DAY_MS;
  const weekday = new Date(rolled).getUTCDay(); // 1..5
  const weeks = Math.floor(n / 5);
  const rest = n % 5;
  const extra = weekday + rest > 5 ? rest + 2 : rest;
  return new Date(rolled + (weeks * 7 + extra) * DAY_MS);
}

/** The time of step `k` (0 = start) of a series that begins at `start`. */
export function stepTime(start: Date, freq: Frequency, k: number): Date {
  const n = k * freq.multiple;
  const secs = SECONDS[freq.unit];
  if (secs !== undefined) return new Date(start.getTime() + n * secs * 1000);
  if (freq.unit === 'bday') return addBusinessDays(start, n);
  return monthStep(start, monthsOf[freq.unit] ?? 1, freq.periodEnd, n);
}

/** Latest instant a JavaScript Date (and so a timestamp here) can hold: ±8.64e15 ms from 1970. */
const MAX_TIME_MS = 8.64e15;

/**
 * Whether every timestamp of a forecast is representable: steps are monotonic, so checking the
 * last one (in O(1)) is enough. Callers turn `false` into a 422 before any work is done.
 */
export function timestampsRepresentable(start: Date, freq: Frequency, observed: number, horizon: number): boolean {
  const last = stepTime(start, freq, observed + horizon - 1).getTime();
  return Number.isFinite(last) && Math.abs(last) <= MAX_TIME_MS;
}

/** One ISO timestamp per forecast step, continuing `observed` steps after `start` (O(horizon)). */
export function forecastTimestamps(start: Date, freq: Frequency, observed: number, horizon: number): string[] {
  const out: string[] = [];
  for (let h = 0; h < horizon; h++) out.push(stepTime(start, freq, observed + h).toISOString());
  return out;
}

/** Parses an ISO 8601 date or date-time; a value without an offset is read as UTC. */
export function parseStart(s: string): Date | null {
  if (!/^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(s.trim())) return null;
  const text = /T|\s/.test(s.trim()) && !/(Z|[+-]\d{2}:?\d{2})$/.test(s.trim()) ? `${s.trim().replace(' ', 'T')}Z` : s.trim();
  const d = new Date(text.length === 10 ? `${text}T00:00:00Z` : text);
  return Number.isNaN(d.getTime()) ? null : d;
}
