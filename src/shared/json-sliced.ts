import { yieldTurn as nextTurn } from './turns.ts';
import { ColumnsBuilder } from './numeric-columns.ts';

/**
 * JSON.parse of a large text in slices, with turns of the event loop between them: a 5.7 MB
 * forecast body (100,000 steps × 20 variates) is 40–80 ms of one JSON.parse call, all of it on the
 * event loop. The containers that are large are walked here, one level at a time; everything small
 * inside them (a row of a target, a number, a string, a small object) is parsed by the native
 * JSON.parse, many at once (runs of small array items are parsed as one array). The result is what
 * JSON.parse gives. The walk is strict about the JSON between the slices; anything it does not
 * expect is thrown as an error, and the caller then uses the native parser, which reports it.
 */

export interface SlicedOptions {
  /** A value whose text is shorter than this is parsed natively, in one piece (default 16 KiB). */
  small?: number;
  /** Characters of consecutive small array items parsed in one native call (default 64 KiB). */
  batch?: number;
  /** Longest stretch of parsing between two turns of the event loop (default 4 ms). */
  budgetMs?: number;
  /**
   * Refuse what Fastify's safe parser refuses (secure-json-parse, `protoAction` and
   * `constructorAction` 'error'): an own `__proto__` key anywhere, or a `constructor` member that is
   * an object with an own `prototype` — however the key is written (`\u005f_proto__` too). Thrown as
   * ForbiddenPrototype, with that parser's message, in slices like the rest (default false).
   */
  forbidPrototype?: boolean;
  /**
   * A large array under member `key` of an object that is an item of an array under member
   * `within` (a forecast's `inputs[].target`, at any depth: a batch's `requests[].inputs[].target`
   * too) is read into a NumericColumns (src/shared/numeric-columns.ts) when every item is a finite
   * number or null, or every item a row of such values of one width in 1..maxWidth; otherwise (or
   * when the array is small enough to be parsed natively) as plain JSON. Default: none.
   */
  columns?: ColumnsOption;
}

export interface ColumnsOption {
  key: string;
  within: string;
  maxWidth: number;
}

class Unexpected extends Error {}

/** A key the safe parser refuses (see SlicedOptions.forbidPrototype); the message is secure-json-parse's. */
export class ForbiddenPrototype extends SyntaxError {
  constructor() {
    super('Object contains forbidden prototype property');
  }
}

// secure-json-parse's own tests of a text: a key that may decode to __proto__ or constructor.
const SUSPECT_PROTO =
  /"(?:_|\\u005[Ff])(?:_|\\u005[Ff])(?:p|\\u0070)(?:r|\\u0072)(?:o|\\u006[Ff])(?:t|\\u0074)(?:o|\\u006[Ff])(?:_|\\u005[Ff])(?:_|\\u005[Ff])"\s*:/;
const SUSPECT_CONSTRUCTOR =
  /"(?:c|\\u0063)(?:o|\\u006[Ff])(?:n|\\u006[Ee])(?:s|\\u0073)(?:t|\\u0074)(?:r|\\u0072)(?:u|\\u0075)(?:c|\\u0063)(?:t|\\u0074)(?:o|\\u006[Ff])(?:r|\\u0072)"\s*:/;

/** A member the safe parser refuses: key `__proto__`, or `constructor` holding an object with an own `prototype`. */
const forbidden = (key: string, value: unknown): boolean =>
  key === '__proto__' || (key === 'constructor' && value !== null && typeof value === 'object' && Object.hasOwn(value, 'prototype'));

/** secure-json-parse's scan of a parsed value (only run on a piece whose text is suspect, so bounded by the piece). */
function scan(root: unknown): void {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || typeof node !== 'object') continue;
    if (Array.isArray(node)) {
      for (const x of node) if (x !== null && typeof x === 'object') stack.push(x);
      continue;
    }
    for (const key of Object.keys(node)) {
      const x = (node as Record<string, unknown>)[key];
      if (forbidden(key, x)) throw new ForbiddenPrototype();
      if (x !== null && typeof x === 'object') stack.push(x);
    }
  }
}

/** Large containers opened inside each other at most (a forecast body needs 4: body, inputs, input, target). */
const MAX_DEPTH = 16;

/**
 * A large container being read: `open` until its first item, `sep` when a comma or its end must come
 * next. An array read into columns (`cols`) is read again as plain JSON from `start` (just after its
 * `[`) when an item does not fit them.
 */
type Frame = {
  kind: 'array' | 'object';
  value: unknown[] | Record<string, unknown>;
  key: string | null;
  state: 'open' | 'item' | 'sep';
  start: number;
  cols?: ColumnsBuilder | undefined;
};

const isWs = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

export async function parseJsonSliced(text: string, options: SlicedOptions = {}): Promise<unknown> {
  const small = options.small ?? 16_384;
  const batch = options.batch ?? 65_536;
  const budgetMs = options.budgetMs ?? 4;
  const check = options.forbidPrototype === true;
  const columns = options.columns;
  /** JSON.parse of a small piece, scanned as the safe parser would when its text holds a suspect key. */
  const native = (piece: string): unknown => {
    const v = JSON.parse(piece);
    if (check && v !== null && typeof v === 'object' && (SUSPECT_PROTO.test(piece) || SUSPECT_CONSTRUCTOR.test(piece))) scan(v);
    return v;
  };
  const n = text.length;
  let i = 0;

  const ws = () => {
    while (i < n && isWs(text.charCodeAt(i))) i++;
  };
  /**
   * End (exclusive) of the string starting at quote position `at`; -1 when it does not end before
   * `stop`. Jumps from quote to quote with the native indexOf (a quote preceded by an odd run of
   * backslashes is escaped): a 5.5 MB string was 80–95 ms of one turn read a character at a time.
   */
  const stringEnd = (at: number, stop = n): number => {
    let j = at + 1;
    for (;;) {
      const q = text.indexOf('"', j);
      if (q < 0 || q >= stop) {
        if (stop < n) return -1;
        throw new Unexpected('unterminated string');
      }
      let b = q - 1;
      while (b > at && text.charCodeAt(b) === 0x5c) b--;
      if ((q - 1 - b) % 2 === 0) return q + 1;
      j = q + 1;
    }
  };
  /** End (exclusive) of the value starting at `at` when it ends within `limit` characters, else -1. */
  const valueEnd = (at: number, limit: number): number => {
    const c = text.charCodeAt(at);
    if (c === 0x22) return stringEnd(at);
    if (c === 0x7b || c === 0x5b) {
      const stop = Math.min(n, at + limit);
      let depth = 0;
      let j = at;
      while (j < stop) {
        const d = text.charCodeAt(j);
        if (d === 0x22) {
          // A string running past `stop` makes the container large: not scanned to its end here.
          j = stringEnd(j, stop);
          if (j < 0) break;
          continue;
        }
        if (d === 0x7b || d === 0x5b) depth++;
        else if (d === 0x7d || d === 0x5d) {
          depth--;
          if (depth === 0) return j + 1;
        }
        j++;
      }
      if (stop === n && limit >= n - at) throw new Unexpected('unterminated container');
      return -1;
    }
    // A number or a literal: up to the next delimiter.
    let j = at;
    while (j < n) {
      const d = text.charCodeAt(j);
      if (d === 0x2c || d === 0x5d || d === 0x7d || isWs(d)) break;
      j++;
    }
    if (j === at) throw new Unexpected('value expected');
    return j;
  };

  const stack: Frame[] = [];
  let root: unknown;
  let done = false;
  const place = (value: unknown, key: string | null) => {
    const top = stack[stack.length - 1];
    if (!top) {
      root = value;
      done = true;
    } else if (top.kind === 'array') (top.value as unknown[]).push(value);
    else if (check && forbidden(key as string, value)) throw new ForbiddenPrototype();
    else if (key === '__proto__') Object.defineProperty(top.value, key, { value, writable: true, enumerable: true, configurable: true });
    else (top.value as Record<string, unknown>)[key as string] = value;
  };
  /** Parses the value at i: natively when small, else opens it as a frame. */
  const value = (key: string | null) => {
    ws();
    const c = text.charCodeAt(i);
    if (c === 0x7b || c === 0x5b) {
      const end = valueEnd(i, small);
      if (end < 0) {
        // Each level scans up to `small` characters before it is opened: deep nesting of large
        // containers would be quadratic. Past MAX_DEPTH the native parser takes the whole text.
        if (stack.length >= MAX_DEPTH) throw new Unexpected('nested too deep for slicing');
        const frame: Frame =
          c === 0x5b
            ? {
                kind: 'array',
                value: [],
                key,
                state: 'open',
                start: i + 1,
                cols: columnsHere(key) ? new ColumnsBuilder((columns as ColumnsOption).maxWidth) : undefined,
              }
            : { kind: 'object', value: {}, key, state: 'open', start: i + 1 };
        stack.push(frame);
        i++;
        return;
      }
      place(native(text.slice(i, end)), key);
      i = end;
      return;
    }
    const end = valueEnd(i, n);
    place(native(text.slice(i, end)), key);
    i = end;
  };
  /** After an item of the frame on top: a comma (another item follows) or its closing bracket. */
  const afterItem = (close: number): 'more' | 'closed' => {
    ws();
    const c = text.charCodeAt(i);
    if (c === 0x2c) {
      i++;
      ws();
      const d = text.charCodeAt(i);
      if (d === 0x5d || d === 0x7d) throw new Unexpected('trailing comma');
      return 'more';
    }
    if (c === close) {
      i++;
      return 'closed';
    }
    throw new Unexpected('comma or closing bracket expected');
  };
  /** Whether an array opened now under `key` is `within[].key` (the open object is an item of the array under `within`). */
  const columnsHere = (key: string | null): boolean => {
    if (!columns || key !== columns.key) return false;
    const item = stack[stack.length - 1];
    const list = stack[stack.length - 2];
    return item?.kind === 'object' && item.key === null && list?.kind === 'array' && list.key === columns.within;
  };
  /** An array whose items do not fit columns: read again from its first item, as plain JSON. */
  const readAsJson = (frame: Frame) => {
    frame.cols = undefined;
    frame.value = [];
    frame.state = 'open';
    i = frame.start;
  };
  const close = () => {
    const frame = stack.pop() as Frame;
    place(frame.cols?.finish() ?? frame.value, frame.key);
    const parent = stack[stack.length - 1];
    if (parent) parent.state = 'sep';
  };

  // The body was just read and decoded in this turn (5.7 MB: ~10 ms): parsing starts in the next.
  await nextTurn();
  let sliceStart = performance.now();
  value(null);
  while (!done) {
    if (performance.now() - sliceStart >= budgetMs) {
      await nextTurn();
      sliceStart = performance.now();
    }
    const top = stack[stack.length - 1] as Frame;
    const closing = top.kind === 'array' ? 0x5d : 0x7d;
    ws();
    if (top.state === 'open') {
      top.state = 'item';
      if (text.charCodeAt(i) === closing) {
        i++;
        close();
        continue;
      }
    } else if (top.state === 'sep') {
      top.state = 'item';
      if (afterItem(closing) === 'closed') {
        close();
        continue;
      }
    }
    if (top.kind === 'array') {
      // A run of small items, parsed as one array; stops at a large item (opened as a frame) or the end.
      const from = i;
      let to = i;
      let closed = false;
      let large = false;
      while (to - from < batch) {
        const end = valueEnd(i, small);
        if (end < 0) {
          large = true;
          break;
        }
        i = end;
        to = end;
        if (afterItem(0x5d) === 'closed') {
          closed = true;
          break;
        }
      }
      if (to > from) {
        const items = native(`[${text.slice(from, to)}]`) as unknown[];
        if (top.cols) {
          // Copied into the columns: the parsed rows are garbage at once, and die young.
          if (!top.cols.add(items, to - from, n - to)) {
            readAsJson(top);
            continue;
          }
        } else {
          const arr = top.value as unknown[];
          for (const x of items) arr.push(x);
        }
      }
      if (closed) close();
      else if (large && top.cols) readAsJson(top);
      else if (large) value(null);
      continue;
    }
    // An object: one member at a time.
    if (text.charCodeAt(i) !== 0x22) throw new Unexpected('key expected');
    const keyEnd = stringEnd(i);
    const key = JSON.parse(text.slice(i, keyEnd)) as string;
    // Refused at once, before its value is read (a large one would be read for nothing).
    if (check && key === '__proto__') throw new ForbiddenPrototype();
    i = keyEnd;
    ws();
    if (text.charCodeAt(i) !== 0x3a) throw new Unexpected('colon expected');
    i++;
    const depth = stack.length;
    value(key);
    // A small member was placed: a comma or the end comes next. A large one opened a frame.
    if (stack.length === depth) top.state = 'sep';
  }
  ws();
  if (i !== n) throw new Unexpected('text after the value');
  return root;
}
