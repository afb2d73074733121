import { yieldTurn as nextTurn } from '../shared/turns.ts';
import type { FieldIssue } from '../shared/errors.ts';
import { RawJson } from '../shared/json.ts';
/**
 * Pandas-style frequency codes: what the service accepts, the season length each implies, and
 * the timestamps of forecast steps. All arithmetic is in UTC.
 *
 * Accepted (an optional integer multiple may precede any code, e.g. `15min`, `2h`, `3D`):
 *   s / S            seconds                 min / T     minutes
 *   h / H            hours                   D           calendar days
 *   B                business days (Mon–Fri) W           weeks (7 days from the start)
 *   MS               month start             M / ME      month end
 *   QS               quarter start           Q / QE      quarter end
 *   YS / AS          year start              Y / YE / A  year end
 *
 * Anchors, as pandas: `W-SUN` … `W-SAT` (weeks ending on that weekday: a start on another day
 * rolls forward to it), `Q-NOV`, `QE-NOV`, `QS-FEB` (quarters ending or starting in that month and
 * every third month from it), `A-JUN`, `Y-JUN`, `YE-JUN`, `AS-JUL`, `YS-JUL` (years ending or
 * starting in that month). Any other suffix is unknown.
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
  /**
   * An anchor suffix: for weeks the weekday steps land on (0 = Sunday); for quarters and years the
   * phase of their period boundaries in months (0: quarters start in January, April …, years in
   * January; see `monthStep`). Absent: weeks step from the start, periods are calendar ones.
   */
  anchor?: number;
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const WEEKDAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const mod = (a: number, k: number): number => ((a % k) + k) % k;

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
  const m = /^(\d+)?([A-Za-z]+)(?:-([A-Za-z]{3}))?$/.exec(code.trim());
  if (!m) return null;
  const multiple = m[1] ? Number(m[1]) : 1;
  const u = UNITS[m[2] ?? ''];
  if (!u || !Number.isInteger(multiple) || multiple < 1 || multiple > 100_000) return null;
  const freq: Frequency = { code, multiple, ...u, seasonLength: seasonFor(u.unit, multiple) };
  if (m[3] === undefined) return freq;
  // Only weeks, quarters and years take an anchor suffix (W-SUN, Q-NOV, A-JUN), and only a real one.
  const suffix = m[3].toUpperCase();
  if (u.unit === 'week') {
    const day = WEEKDAYS.indexOf(suffix);
    return day < 0 ? null : { ...freq, anchor: day };
  }
  const month = MONTHS.indexOf(suffix);
  if (month < 0 || (u.unit !== 'quarter' && u.unit !== 'year')) return null;
  const k = u.unit === 'quarter' ? 3 : 12;
  // The phase of the period starts: a period ending in `month` starts the month after.
  return { ...freq, anchor: mod(u.periodEnd ? month + 1 : month, k) };
}

/** Where an anchored week's steps start: `start`, rolled forward to the anchor's weekday (pandas' W-XXX). */
function anchoredStart(start: Date, freq: Frequency): Date {
  if (freq.unit !== 'week' || freq.anchor === undefined) return start;
  return new Date(start.getTime() + mod(freq.anchor - start.getUTCDay(), 7) * DAY_MS);
}

const monthsOf: Partial<Record<Unit, number>> = { month: 1, quarter: 3, year: 12 };

/**
 * Month-based steps land on period boundaries, as pandas does: a start that is not on one rolls
 * forward to the next period start (MS, QS, YS) or to the end of its period (M, Q, Y).
 * Quarters are calendar quarters; years are calendar years. The time of day is kept.
 */
function monthStep(start: Date, monthsPerPeriod: number, periodEnd: boolean, periods: number, phase = 0): Date {
  let mo = start.getUTCFullYear() * 12 + start.getUTCMonth();
  // Periods start in the months congruent to `phase` (an anchor: Q-NOV's quarters start in March, June …).
  const at = (x: number) => mod(x - phase, monthsPerPeriod);
  if (periodEnd) {
    while (at(mo) !== monthsPerPeriod - 1) mo += 1;
  } else if (start.getUTCDate() !== 1 || at(mo) !== 0) {
    mo += 1;
    while (at(mo) !== 0) mo += 1;
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
  if (secs !== undefined) return new Date(anchoredStart(start, freq).getTime() + n * secs * 1000);
  if (freq.unit === 'bday') return addBusinessDays(start, n);
  return monthStep(start, monthsOf[freq.unit] ?? 1, freq.periodEnd, n, freq.anchor ?? 0);
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

const pad2 = Array.from({ length: 60 }, (_, i) => String(i).padStart(2, '0'));
const pad3 = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'));

/**
 * `k ↦ stepTime(start, freq, k).toISOString()`, 4–5× faster for fixed-length steps: the date part
 * ("2024-01-01T", from toISOString, so years past 9999 are written as it writes them) is kept while
 * steps stay within the same UTC day, and the time of day is written from tables.
 */
export function isoWriter(start: Date, freq: Frequency): (k: number) => string {
  const secs = SECONDS[freq.unit];
  if (secs === undefined) return (k) => stepTime(start, freq, k).toISOString();
  const t0 = anchoredStart(start, freq).getTime();
  const stepMs = freq.multiple * secs * 1000;
  let day = Number.NaN;
  let prefix = '';
  return (k) => {
    const ms = t0 + k * stepMs;
    const d = Math.floor(ms / DAY_MS);
    if (d !== day) {
      const full = new Date(ms).toISOString();
      day = d;
      prefix = full.slice(0, full.indexOf('T') + 1);
    }
    let rest = ms - d * DAY_MS;
    const h = Math.floor(rest / 3_600_000);
    rest -= h * 3_600_000;
    const m = Math.floor(rest / 60_000);
    rest -= m * 60_000;
    const s = Math.floor(rest / 1000);
    return `${prefix}${pad2[h]}:${pad2[m]}:${pad2[s]}.${pad3[rest - s * 1000]}Z`;
  };
}

/** Timestamps written between two turns of the event loop (~0.8 µs each: about 3 ms a slice). */
const TIMESTAMP_SLICE = 4096;
const utf8 = new TextEncoder();

/**
 * The same timestamps as JSON text (an array of ISO strings, which need no escaping), written in
 * slices with a turn of the event loop between them. An answer may hold millions of them (200
 * inputs × 10,000 steps of means only is within the output cap): as one `forecastTimestamps` call
 * per input they were 1.6 s of one turn and millions of strings on the heap (issue #11).
 */
export async function timestampsJson(start: Date, freq: Frequency, observed: number, horizon: number): Promise<RawJson> {
  if (horizon <= 0) return new RawJson(utf8.encode('[]'));
  const pieces: Uint8Array[] = [];
  const iso = isoWriter(start, freq);
  for (let at = 0; at < horizon; at += TIMESTAMP_SLICE) {
    const end = Math.min(horizon, at + TIMESTAMP_SLICE);
    let text = at === 0 ? '[' : ',';
    for (let h = at; h < end; h++) text += `${h > at ? ',' : ''}"${iso(observed + h)}"`;
    if (end === horizon) text += ']';
    pieces.push(utf8.encode(text));
    if (end < horizon) await nextTurn();
  }
  return new RawJson(pieces);
}

/** Days in month `m` (1–12) of year `y` (proleptic Gregorian, as Date). */
const daysIn = (y: number, m: number): number => (m === 2 ? (y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 29 : 28) : [4, 6, 9, 11].includes(m) ? 30 : 31);

const ISO = /^\d{4}-\d{2}-\d{2}(?:([T ])[\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * Parses an ISO 8601 date or date-time; a value without an offset is read as UTC. One regular
 * expression and one Date per value: a request may carry hundreds of thousands of timestamps.
 */
export function parseStart(s: string): Date | null {
  const text = s.trim();
  const m = ISO.exec(text);
  if (!m) return null;
  const iso = m[1] === undefined ? `${text}T00:00:00Z` : m[2] === undefined ? `${text.replace(' ', 'T')}Z` : m[1] === ' ' ? text.replace(' ', 'T') : text;
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return null;
  // V8 rolls a day past its month over (2024-02-30 reads as 2024-03-01): that is no date.
  const year = Number(text.slice(0, 4));
  const month = Number(text.slice(5, 7));
  return month >= 1 && month <= 12 && Number(text.slice(8, 10)) <= daysIn(year, month) ? d : null;
}

const digit = (s: string, i: number): number => {
  const c = s.charCodeAt(i) - 48;
  return c >= 0 && c <= 9 ? c : Number.NaN;
};
const num = (s: string, i: number, n: number): number => {
  let v = 0;
  for (let k = 0; k < n; k++) v = v * 10 + digit(s, i + k);
  return v;
};

/**
 * `parseStart(s)?.getTime() ?? NaN`, 5–10× faster for the forms series are written in
 * (`2024-01-31`, `2024-01-31T10:00:00`, `…:00Z`, `…:00.000Z`, with T or a space): their fields are
 * read from the characters and checked for range; anything else (offsets, other precisions, years
 * before 100, an out-of-range field) takes parseStart itself, so the answer is always the same.
 */
export function parseIsoMs(text: string): number {
  const n = text.length;
  if ((n === 10 || n === 19 || n === 20 || n === 23 || n === 24) && text.charCodeAt(4) === 45 && text.charCodeAt(7) === 45) {
    const y = num(text, 0, 4);
    const mo = num(text, 5, 2);
    const d = num(text, 8, 2);
    let h = 0;
    let mi = 0;
    let sec = 0;
    let ms = 0;
    let ok = y >= 100 && mo >= 1 && mo <= 12 && d >= 1 && d <= daysIn(y, mo);
    if (ok && n > 10) {
      const sep = text.charCodeAt(10);
      h = num(text, 11, 2);
      mi = num(text, 14, 2);
      sec = num(text, 17, 2);
      ok = (sep === 84 || sep === 32) && text.charCodeAt(13) === 58 && text.charCodeAt(16) === 58 && h <= 23 && mi <= 59 && sec <= 59;
      const zoned = n === 20 || n === 24;
      if (ok && zoned) ok = text.charCodeAt(n - 1) === 90;
      if (ok && n >= 23) {
        ms = num(text, 20, 3);
        ok = text.charCodeAt(19) === 46 && ms >= 0;
      }
    }
    // NaN fields (a non-digit) fail every comparison above.
    if (ok) return Date.UTC(y, mo - 1, d, h, mi, sec, ms);
  }
  return parseStart(text)?.getTime() ?? Number.NaN;
}

/** Epoch milliseconds of each timestamp (NaN where one is no ISO date), by array: filled ahead in slices (parseTimestampsAhead). */
const parsedTimes = new WeakMap<readonly string[], Float64Array>();
/** Timestamps parsed between two turns of the event loop. */
const PARSE_SLICE = 16_384;

/** The epoch milliseconds of `raw` (NaN where one is no ISO date): parsed ahead, or now. */
export function timesOf(raw: readonly string[]): Float64Array {
  const done = parsedTimes.get(raw);
  if (done && done.length === raw.length) return done;
  const out = new Float64Array(raw.length);
  for (let j = 0; j < raw.length; j++) out[j] = parseIsoMs(raw[j] as string);
  return out;
}

/** `raw.slice(0, end)`, its parsed times shared with `raw`'s when parsed ahead (a backtest's shorter history). */
export function sliceTimestamps(raw: readonly string[], end: number): string[] {
  const out = raw.slice(0, end);
  const done = parsedTimes.get(raw);
  if (done && done.length === raw.length) parsedTimes.set(out, done.subarray(0, out.length));
  return out;
}

/**
 * Parses the `inputs[].timestamps` of a request (or of each `requests[]` item of a batch) ahead of
 * its planning, in slices with a turn of the event loop between them: planning is synchronous, and
 * 320,000 timestamps (a 9 MB body) were 140–230 ms of one turn there (issue #11). Small arrays are
 * left to planning.
 */
export async function parseTimestampsAhead(input: unknown): Promise<void> {
  const lists: string[][] = [];
  const collect = (x: unknown) => {
    const inputs = (x as { inputs?: unknown } | null)?.inputs;
    if (!Array.isArray(inputs)) return;
    for (const item of inputs) {
      const t = (item as { timestamps?: unknown } | null)?.timestamps;
      if (Array.isArray(t) && t.length > 1024 && !parsedTimes.has(t)) lists.push(t as string[]);
    }
  };
  collect(input);
  const requests = (input as { requests?: unknown } | null)?.requests;
  if (Array.isArray(requests)) for (const r of requests) collect(r);
  let budget = PARSE_SLICE;
  for (const raw of lists) {
    const out = new Float64Array(raw.length);
    for (let j = 0; j < raw.length; j++) {
      out[j] = parseIsoMs(raw[j] as string);
      if (--budget === 0) {
        budget = PARSE_SLICE;
        await nextTurn();
      }
    }
    parsedTimes.set(raw, out);
  }
}

/** The outcome of reading a series' own timestamps: its frequency, or the first index at fault. */
export type TimestampCheck = { ok: true; frequency: Frequency } | { ok: false; index: number; msg: string };

const fixedCode = (ms: number): string | null => {
  const units: [number, string][] = [
    [7 * DAY_MS, 'W'],
    [DAY_MS, 'D'],
    [3_600_000, 'h'],
    [60_000, 'min'],
    [1000, 's'],
  ];
  for (const [size, code] of units) if (ms % size === 0) return ms === size ? code : `${ms / size}${code}`;
  return null;
};

const monthIndex = (d: Date): number => d.getUTCFullYear() * 12 + d.getUTCMonth();
const isMonthEnd = (d: Date): boolean => new Date(d.getTime() + DAY_MS).getUTCDate() === 1;

/**
 * The frequencies the first two timestamps allow, in the order they are tried: calendar years,
 * quarters and months anchored at the start or the end of the period, a fixed step (weeks down to
 * seconds), then business days (what pandas' infer_freq would name). Each is then checked against
 * the whole series.
 */
function candidates(a: Date, b: Date): Frequency[] {
  const out: Frequency[] = [];
  const add = (code: string | null) => {
    const f = code === null ? null : parseFrequency(code);
    if (f) out.push(f);
  };
  const delta = b.getTime() - a.getTime();
  const sameTimeOfDay = delta % DAY_MS === 0;
  const months = monthIndex(b) - monthIndex(a);
  if (months > 0 && sameTimeOfDay && (a.getUTCDate() === 1 || isMonthEnd(a))) {
    const end = a.getUTCDate() !== 1; // so the last day of its month
    const [y, q, m] = end ? ['Y', 'Q', 'M'] : ['YS', 'QS', 'MS'];
    if (months % 12 === 0) add(months === 12 ? y : `${months / 12}${y}`);
    if (months % 3 === 0) add(months === 3 ? q : `${months / 3}${q}`);
    add(months === 1 ? m : `${months}${m}`);
  }
  // A fixed step before business days: Mon, Tue, Wed is daily (as pandas infers it); a series that
  // skips the weekend fails 'D' there and is business days.
  add(delta > 0 ? fixedCode(delta) : null);
  // Friday → Monday is one business day; so is any weekday → the next.
  if (sameTimeOfDay && (delta === DAY_MS || (delta === 3 * DAY_MS && a.getUTCDay() === 5))) add('B');
  return out;
}

/** How many of `times` (epoch ms) follow `freq` from `times[0]` (all of them = regular). */
function regularPrefix(times: ArrayLike<number>, freq: Frequency): number {
  // An anchored week's grid starts on its weekday: a first time on another day is off the grid.
  const first = anchoredStart(new Date(times[0] as number), freq).getTime();
  const secs = SECONDS[freq.unit];
  if (secs !== undefined) {
    // Fixed steps: arithmetic, no Date per step.
    const step = freq.multiple * secs * 1000;
    for (let k = 0; k < times.length; k++) if (first + k * step !== times[k]) return k;
    return times.length;
  }
  const t0 = new Date(times[0] as number);
  for (let k = 0; k < times.length; k++) if (stepTime(t0, freq, k).getTime() !== times[k]) return k;
  return times.length;
}

/**
 * Checks a series' timestamps (parsed, one per step) and names its frequency: each must come after
 * the previous one (no duplicates), and all must fall on one regular grid, which may be a calendar
 * one (months, quarters, years, business days). With `given` (parameters.frequency) the grid is
 * that one; otherwise it is inferred from the first two and must hold for all. O(n) steps.
 */
export function checkTimestamps(parsed: readonly Date[] | Float64Array, given: Frequency | null): TimestampCheck {
  const times: ArrayLike<number> = parsed instanceof Float64Array ? parsed : parsed.map((d) => d.getTime());
  const at = (j: number) => new Date(times[j] as number);
  for (let j = 1; j < times.length; j++) {
    const d = (times[j] as number) - (times[j - 1] as number);
    if (d === 0) return { ok: false, index: j, msg: `Duplicate timestamp: the same time as timestamps[${j - 1}]` };
    if (d < 0) return { ok: false, index: j, msg: `Not increasing: earlier than timestamps[${j - 1}] (timestamps go oldest first, like the target)` };
  }
  const iso = (j: number) => at(j).toISOString();
  if (given) {
    const k = regularPrefix(times, given);
    if (k === times.length) return { ok: true, frequency: given };
    return {
      ok: false,
      index: k,
      msg: `Does not follow parameters.frequency '${given.code}': expected ${stepTime(at(0), given, k).toISOString()} here, got ${iso(k)}`,
    };
  }
  if (times.length < 2) {
    return { ok: false, index: 0, msg: 'One timestamp cannot show a frequency: send at least two, or set parameters.frequency' };
  }
  const options = candidates(at(0), at(1));
  if (options.length === 0) {
    return { ok: false, index: 1, msg: `No supported frequency steps from ${iso(0)} to ${iso(1)} (the finest is one second)` };
  }
  let best = { freq: options[0] as Frequency, k: -1 };
  for (const f of options) {
    const k = regularPrefix(times, f);
    if (k === times.length) return { ok: true, frequency: f };
    if (k > best.k) best = { freq: f, k };
  }
  const k = best.k;
  return {
    ok: false,
    index: k,
    msg:
      `Irregular: the first timestamps step by '${best.freq.code}', which puts ${stepTime(at(0), best.freq, k).toISOString()} here, not ${iso(k)}. ` +
      'Send one timestamp per step of a regular series (a missing observation is null in the target), or set parameters.frequency',
  };
}

/** The one 422 issue for a frequency code parseFrequency does not know (forecast, anomalies, impute). */
export function unknownFrequencyIssue(code: string, path: (string | number)[]): FieldIssue {
  return {
    path,
    msg: `Unknown frequency '${code}'. Use a pandas-style code such as min, 5min, 15min, 30min, h, D, B, W, W-MON, MS, M, QS, Q, Q-NOV, YS, Y, A-JUN`,
    type: 'value_error',
    input: code,
  };
}
