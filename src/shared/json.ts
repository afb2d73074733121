import { yieldTurn as nextTurn } from './turns.ts';
import { NumericColumns } from './numeric-columns.ts';

/**
 * JSON helpers for large or hostile values. Both walk iteratively or in slices, so neither a
 * deeply nested value (stack overflow) nor a 2-million-number forecast (tens of milliseconds of
 * JSON.stringify) can pin the event loop.
 */

/** A serialised JSON document, as chunks to send one after the other (never joined into one string). */
export interface JsonChunks {
  /** Text, or UTF-8 bytes (RawJson written elsewhere, e.g. by a worker thread). */
  chunks: (string | Uint8Array)[];
  bytes: number;
}

/**
 * A value already serialised (UTF-8 JSON text): serialiseJson writes its bytes as they are. Lets a
 * worker thread write the millions of numbers of a forecast while this thread writes the rest.
 */
export class RawJson {
  /** The text's pieces, in order. */
  readonly parts: Uint8Array[];
  constructor(bytes: Uint8Array | Uint8Array[]) {
    this.parts = Array.isArray(bytes) ? bytes : [bytes];
  }
  /** For JSON.stringify, should one meet it (slow: parses the text back). */
  toJSON(): unknown {
    return JSON.parse(this.parts.map((b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8')).join(''));
  }
}

const utf8 = new TextEncoder();

/**
 * The steps × variates matrix `[[c0[t], c1[t], …], …]` for t in [from, to), as the JSON text
 * JSON.stringify writes (NaN and other non-finite numbers as null), written in slices of about
 * SLICE values with a turn of the event loop between them. For answers of millions of values
 * (anomaly scores, imputed series), which as arrays were millions of one-row arrays on the heap and
 * hundreds of milliseconds of one turn.
 */
export async function matrixJson(cols: readonly ArrayLike<number | boolean>[], from: number, to: number): Promise<RawJson> {
  if (to <= from) return new RawJson(utf8.encode('[]'));
  const width = Math.max(1, cols.length);
  const rowsPerSlice = Math.max(1, Math.floor(SLICE / width));
  const pieces: Uint8Array[] = [];
  for (let at = from; at < to; at += rowsPerSlice) {
    const end = Math.min(to, at + rowsPerSlice);
    const rows = new Array<string>(end - at);
    for (let t = at; t < end; t++) {
      let row = '[';
      for (let v = 0; v < cols.length; v++) {
        const x = (cols[v] as ArrayLike<number | boolean>)[t];
        row += `${v > 0 ? ',' : ''}${typeof x === 'boolean' ? x : x !== undefined && Number.isFinite(x) ? String(x) : 'null'}`;
      }
      rows[t - at] = `${row}]`;
    }
    pieces.push(utf8.encode(`${at === from ? '[' : ','}${rows.join(',')}${end === to ? ']' : ''}`));
    if (end < to) await nextTurn();
  }
  return new RawJson(pieces);
}

/** The whole document as one string (e.g. to store it); joins the chunks. */
export function jsonText(json: JsonChunks): string {
  return json.chunks.map((c) => (typeof c === 'string' ? c : Buffer.from(c.buffer, c.byteOffset, c.byteLength).toString('utf8'))).join('');
}

/** The whole document in one piece to send in one write: a string, or bytes when a chunk is RawJson's. */
export function jsonBody(json: JsonChunks): string | Buffer {
  if (json.chunks.length === 1 && typeof json.chunks[0] === 'string') return json.chunks[0];
  if (json.chunks.every((c) => typeof c === 'string')) return (json.chunks as string[]).join('');
  return Buffer.concat(json.chunks.map((c) => (typeof c === 'string' ? Buffer.from(c, 'utf8') : c)));
}

/** Scalars written per slice before the serialiser yields to the event loop. */
const SLICE = 20_000;

type Frame = { kind: 'array'; items: unknown[]; i: number } | { kind: 'object'; entries: [string, unknown][]; i: number };

function scalar(v: unknown): string | undefined {
  if (v === null) return 'null';
  switch (typeof v) {
    case 'number':
      return Number.isFinite(v) ? String(v) : 'null';
    case 'string':
      return JSON.stringify(v);
    case 'boolean':
      return v ? 'true' : 'false';
    case 'bigint':
      throw new TypeError('Do not know how to serialize a BigInt');
    default:
      return undefined; // undefined, functions, symbols: skipped in objects, null in arrays (as JSON.stringify)
  }
}

/**
 * True when `value` holds at most `budget` array items and object entries in all (walked without
 * recursion, and given up as soon as the budget is spent). Values with `toJSON` are not counted
 * (their output is unknown until called): false.
 */
function holdsAtMost(value: unknown, budget: number): boolean {
  const stack: unknown[] = [value];
  let left = budget;
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object') continue;
    if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return false;
    if (Array.isArray(v)) {
      left -= v.length;
      if (left < 0) return false;
      for (const x of v) {
        if (x === null || typeof x !== 'object') continue;
        // A row of scalars (the steps × variates matrices of a forecast): counted here, not stacked.
        if (Array.isArray(x) && x.every((y) => y === null || typeof y !== 'object')) {
          left -= x.length;
          if (left < 0) return false;
        } else stack.push(x);
      }
    } else {
      const keys = Object.keys(v);
      left -= keys.length;
      if (left < 0) return false;
      for (const k of keys) {
        const x = (v as Record<string, unknown>)[k];
        if (x !== null && typeof x === 'object') stack.push(x);
      }
    }
  }
  return true;
}

/**
 * JSON.stringify's output for plain data (arrays, objects, toJSON, scalars), produced in slices of
 * about SLICE scalars with a turn of the event loop between slices.
 */
export async function serialiseJson(value: unknown): Promise<JsonChunks> {
  // A small value (a usual forecast, each item of a batch) in one native call: the same text,
  // several times faster than the walk below, and too little work to pin the event loop.
  // (A RawJson has toJSON, so a value holding one always takes the walk, which splices its bytes.)
  if (holdsAtMost(value, SLICE)) {
    const text = JSON.stringify(value) ?? 'null';
    return { chunks: [text], bytes: Buffer.byteLength(text) };
  }
  // A large value starts in a turn of its own: many answers finishing together (a batch's items, as
  // their workers report) would otherwise each run a first slice in the same turn.
  await nextTurn();
  const chunks: (string | Uint8Array)[] = [];
  let bytes = 0;
  let parts: string[] = [];
  let written = 0;
  const flush = () => {
    if (parts.length === 0) return;
    const c = parts.join('');
    chunks.push(c);
    bytes += Buffer.byteLength(c);
    parts = [];
  };
  const stack: Frame[] = [];
  // Opens a container or writes a scalar; returns false for values JSON omits.
  const open = (raw: unknown): boolean => {
    if (raw instanceof RawJson) {
      flush();
      for (const b of raw.parts) {
        chunks.push(b);
        bytes += b.byteLength;
      }
      return true;
    }
    let v = raw;
    if (v !== null && typeof v === 'object' && typeof (v as { toJSON?: unknown }).toJSON === 'function') v = (v as { toJSON(): unknown }).toJSON();
    if (Array.isArray(v)) {
      parts.push('[');
      stack.push({ kind: 'array', items: v, i: 0 });
      return true;
    }
    if (v !== null && typeof v === 'object') {
      parts.push('{');
      const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => scalar(x) !== undefined || (x !== null && typeof x === 'object'));
      stack.push({ kind: 'object', entries, i: 0 });
      return true;
    }
    const s = scalar(v);
    if (s === undefined) return false;
    parts.push(s);
    written++;
    return true;
  };
  if (!open(value)) parts.push('null');
  while (stack.length > 0) {
    const top = stack[stack.length - 1] as Frame;
    if (top.kind === 'array') {
      if (top.i >= top.items.length) {
        parts.push(']');
        stack.pop();
        continue;
      }
      if (top.i > 0) parts.push(',');
      const item = top.items[top.i];
      // Fast paths, native JSON.stringify over slices (the same text as over the whole array):
      // a run of numbers, or a run of rows of numbers (the steps × variates matrices of a forecast).
      const row = Array.isArray(item) ? (item as unknown[]) : null;
      const width = typeof item === 'number' || item === null ? 1 : row && (typeof row[0] === 'number' || row.length === 0) ? Math.max(1, row.length) : 0;
      if (width > 0) {
        const n = Math.max(1, Math.floor((SLICE - written) / width));
        const slice = JSON.stringify(top.items.slice(top.i, top.i + n));
        parts.push(slice.slice(1, -1));
        written += Math.min(n, top.items.length - top.i) * width;
        top.i += n;
      } else {
        top.i++;
        if (!open(item)) parts.push('null');
      }
    } else {
      if (top.i >= top.entries.length) {
        parts.push('}');
        stack.pop();
        continue;
      }
      const [k, item] = top.entries[top.i++] as [string, unknown];
      parts.push(`${top.i > 1 ? ',' : ''}${JSON.stringify(k)}:`);
      open(item);
    }
    if (written >= SLICE) {
      written = 0;
      flush();
      await nextTurn();
    }
  }
  flush();
  return { chunks, bytes };
}

export interface JsonProblem {
  /** Path from the root, e.g. ['inputs', 0, 'metadata', 'a']. */
  path: (string | number)[];
  msg: string;
  type: 'string_unstorable' | 'too_deep' | 'too_big';
  ctx?: { maximum: number };
}

/** Deepest nesting of arrays and objects accepted anywhere in a request. */
export const MAX_JSON_DEPTH = 32;
/**
 * Most members of one JSON object accepted anywhere in a request. No operation takes an object
 * anywhere near this large (covariate records hold at most 100 names); a body of 400,000 names was
 * seconds of work for every step that walks it.
 */
export const MAX_JSON_MEMBERS = 10_000;

/** Why a string cannot be stored as text by SQLite and PostgreSQL, or null when it can. */
export function unstorable(s: string): string | null {
  if (s.includes('\u0000')) return 'contains a NUL character (U+0000), which cannot be stored';
  if (!s.isWellFormed()) return 'contains a lone UTF-16 surrogate, which is not valid Unicode text';
  return null;
}

/** A frame of findJsonProblem's walk: its path is built from the parent links only when a problem is found. */
type Visit = { v: unknown; depth: number; parent: Visit | null; key: string | number };

function pathOf(f: Visit | null): (string | number)[] {
  const path: (string | number)[] = [];
  for (let x = f; x?.parent; x = x.parent) path.push(x.key);
  return path.reverse();
}

/** True for an array holding only numbers and nulls (a row of a target): nothing in it can be a problem. */
function numericRow(a: unknown[]): boolean {
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    if (x !== null && typeof x !== 'number') return false;
  }
  return true;
}

/** Values visited between two checks of the time (findJsonProblemSliced). */
const VISITS_PER_CHECK = 2048;

/**
 * The walk of findJsonProblem, pausing (a `yield`) every VISITS_PER_CHECK values so that a caller
 * can give the event loop a turn; returns the first problem, or null.
 */
function* walk(value: unknown, maxDepth: number): Generator<void, JsonProblem | null> {
  const stack: Visit[] = [{ v: value, depth: 0, parent: null, key: '' }];
  let visits = 0;
  let checkAt = VISITS_PER_CHECK;
  while (stack.length > 0) {
    if (++visits >= checkAt) {
      checkAt = visits + VISITS_PER_CHECK;
      yield;
    }
    const f = stack.pop() as Visit;
    const v = f.v;
    if (typeof v === 'string') {
      const why = unstorable(v);
      if (why) return { path: pathOf(f), msg: `String ${why}`, type: 'string_unstorable' };
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    // Numbers only (read into typed columns by the sliced parser): no string, no nesting.
    if (v instanceof NumericColumns) continue;
    if (f.depth >= maxDepth) return { path: pathOf(f), msg: `Nested deeper than ${maxDepth} levels`, type: 'too_deep' };
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) {
        // Items count as visits too: a flat array of 300,000 numbers, or 100,000 numeric rows, is one
        // value on the stack but as much work as that many.
        if (++visits >= checkAt) {
          checkAt = visits + VISITS_PER_CHECK;
          yield;
        }
        const x: unknown = v[i];
        if (x === null || (typeof x !== 'object' && typeof x !== 'string')) continue;
        // A row of numbers one level down is fine unless that level is already too deep.
        if (f.depth + 1 < maxDepth && Array.isArray(x) && numericRow(x)) {
          visits += x.length;
          continue;
        }
        stack.push({ v: x, depth: f.depth + 1, parent: f, key: i });
      }
      continue;
    }
    // Counted before its keys are listed (listing 400,000 of them is itself tens of milliseconds).
    let members = 0;
    for (const _ in v) {
      if (++members > MAX_JSON_MEMBERS) {
        return { path: pathOf(f), msg: `Holds more than ${MAX_JSON_MEMBERS} members`, type: 'too_big', ctx: { maximum: MAX_JSON_MEMBERS } };
      }
    }
    for (const k of Object.keys(v)) {
      const why = unstorable(k);
      if (why) return { path: [...pathOf(f), k], msg: `Key ${why}`, type: 'string_unstorable' };
      const x = (v as Record<string, unknown>)[k];
      if (x !== null && (typeof x === 'object' || typeof x === 'string')) stack.push({ v: x, depth: f.depth + 1, parent: f, key: k });
    }
  }
  return null;
}

/**
 * The first problem in a parsed request value: a string or key the databases cannot store (NUL,
 * lone surrogates), nesting deeper than `maxDepth`, or an object of more than MAX_JSON_MEMBERS
 * members. Iterative, so any depth is safe to check; rows of numbers (a 100,000 × 20 target) are
 * skipped in a tight loop, without a frame each.
 */
export function findJsonProblem(value: unknown, maxDepth = MAX_JSON_DEPTH): JsonProblem | null {
  const it = walk(value, maxDepth);
  for (;;) {
    const r = it.next();
    if (r.done) return r.value;
  }
}

/** findJsonProblem with a turn of the event loop whenever it has walked for `budgetMs` (a request body of 100,000 small objects is hundreds of ms of walking). */
export async function findJsonProblemSliced(value: unknown, maxDepth = MAX_JSON_DEPTH, budgetMs = 4): Promise<JsonProblem | null> {
  const it = walk(value, maxDepth);
  let since = performance.now();
  for (;;) {
    const r = it.next();
    if (r.done) return r.value;
    if (performance.now() - since >= budgetMs) {
      await nextTurn();
      since = performance.now();
    }
  }
}
