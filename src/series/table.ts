import { Readable } from 'node:stream';
import { parse as csvParse, type CsvError } from 'csv-parse';
import { AppError, ValidationFailure } from '../shared/errors.ts';
import { TurnBudget } from '../shared/turns.ts';

/** A table read from CSV, TSV or JSON: cells as text, numbers or null, each row with the line/record it came from. */
export interface Table {
  format: 'csv' | 'tsv' | 'json';
  header: string[];
  /** True when the first line named the columns (CSV/TSV); JSON always has names. */
  named: boolean;
  rows: Cell[][];
  /** Where each row came from, for messages: a 1-based line (CSV/TSV) or a 0-based record index (JSON). */
  origin: number[];
}
export type Cell = string | number | null;

export interface TableLimits {
  maxRows: number;
  maxColumns: number;
}

/** "line 17" or "record 3": names the row of the source in every message. */
export function rowName(t: Pick<Table, 'format'>, origin: number): string {
  return t.format === 'json' ? `record ${origin}` : `line ${origin}`;
}

export function detectFormat(text: string): 'csv' | 'tsv' | 'json' {
  const head = text.trimStart();
  if (head.startsWith('[') || head.startsWith('{')) return 'json';
  const first = head.slice(0, head.indexOf('\n') === -1 ? head.length : head.indexOf('\n'));
  return (first.match(/\t/g)?.length ?? 0) > (first.match(/,/g)?.length ?? 0) ? 'tsv' : 'csv';
}

const CHUNK = 16 * 1024;

function* chunks(text: string): Generator<string> {
  for (let i = 0; i < text.length; i += CHUNK) yield text.slice(i, i + CHUNK);
}

/**
 * CSV/TSV through csv-parse's streaming parser, fed in 16 KiB slices so a 5 MB paste never pins
 * the event loop; stops at the row limit. `field` names the input field in errors.
 */
async function readDelimited(text: string, format: 'csv' | 'tsv', limits: TableLimits, field: string): Promise<Table> {
  const first = text.trimStart().split('\n', 1)[0] ?? '';
  const delimiter = format === 'tsv' ? '\t' : (first.match(/;/g)?.length ?? 0) > (first.match(/,/g)?.length ?? 0) ? ';' : ',';
  const parser = Readable.from(chunks(text)).pipe(
    csvParse({ delimiter, bom: true, trim: true, skip_empty_lines: true, info: true, max_record_size: 64 * 1024, to_line: limits.maxRows + 2 }),
  );
  const records: string[][] = [];
  const origin: number[] = [];
  const turns = new TurnBudget();
  try {
    for await (const r of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
      if (records.length === 0 && r.record.length > limits.maxColumns) {
        throw new AppError('request_too_large', `The data has ${r.record.length} columns; at most ${limits.maxColumns} are read (INGEST_MAX_COLUMNS)`);
      }
      records.push(r.record);
      origin.push(r.info.lines);
      if (records.length > limits.maxRows + 1) {
        parser.destroy();
        throw new AppError('request_too_large', `The data has more than ${limits.maxRows} rows; at most ${limits.maxRows} are read (INGEST_MAX_ROWS)`);
      }
      if (turns.spent) await turns.next();
    }
  } catch (err) {
    if (err instanceof AppError) throw err;
    const e = err as CsvError;
    const line = (e as { lines?: number }).lines;
    throw new ValidationFailure([
      { path: [field], msg: `${line ? `line ${line}: ` : ''}${e.message.replace(/^Invalid Record Length: /, '')}`, type: 'value_error', ctx: { line } },
    ]);
  }
  if (records.length === 0) throw new ValidationFailure([{ path: [field], msg: 'The data is empty', type: 'value_error' }]);
  const firstRow = records[0] as string[];
  const named = firstRow.some((c) => c !== '' && !looksLikeData(c));
  const header = named ? firstRow : firstRow.map((_, i) => `column_${i + 1}`);
  const rows = named ? records.slice(1) : records;
  return { format, header, named, rows, origin: named ? origin.slice(1) : origin };
}

const NUMBER = /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/;
const DATE = /^\d{4}([-/]\d{2}([-/]\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?)?)?$/;
const looksLikeData = (c: string): boolean => NUMBER.test(c) || DATE.test(c) || MISSING.has(c.toLowerCase());

export const MISSING = new Set(['', 'na', 'nan', 'null', 'none', 'n/a', '-']);

function readJson(text: string, limits: TableLimits, field: string): Table {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new ValidationFailure([{ path: [field], msg: `Not valid JSON: ${(err as Error).message}`, type: 'value_error' }]);
  }
  const bad = (msg: string) => new ValidationFailure([{ path: [field], msg, type: 'value_error' }]);
  const cell = (v: unknown, where: string): Cell => {
    if (v === null || v === undefined) return null;
    if (typeof v === 'number' || typeof v === 'string') return v;
    throw bad(`${where}: expected a number, a string or null, got ${Array.isArray(v) ? 'an array' : typeof v}`);
  };
  if (Array.isArray(data)) {
    // An array of records: [{"ds": "2024-01-01", "y": 3}, …]
    if (data.length > limits.maxRows)
      throw new AppError('request_too_large', `The data has ${data.length} records; at most ${limits.maxRows} are read (INGEST_MAX_ROWS)`);
    const header: string[] = [];
    const index = new Map<string, number>();
    data.forEach((rec, i) => {
      if (rec === null || typeof rec !== 'object' || Array.isArray(rec)) throw bad(`record ${i}: expected an object of column → value`);
      for (const k of Object.keys(rec)) {
        if (!index.has(k)) {
          index.set(k, header.length);
          header.push(k);
          if (header.length > limits.maxColumns)
            throw new AppError(
              'request_too_large',
              `The data has more than ${limits.maxColumns} columns; at most ${limits.maxColumns} are read (INGEST_MAX_COLUMNS)`,
            );
        }
      }
    });
    const rows = data.map((rec: Record<string, unknown>, i) => header.map((k) => cell(rec[k], `record ${i}, column '${k}'`)));
    return { format: 'json', header, named: true, rows, origin: rows.map((_, i) => i) };
  }
  if (data !== null && typeof data === 'object') {
    // An object of columns: {"ds": [...], "y": [...]}
    const entries = Object.entries(data);
    if (entries.length > limits.maxColumns)
      throw new AppError('request_too_large', `The data has ${entries.length} columns; at most ${limits.maxColumns} are read (INGEST_MAX_COLUMNS)`);
    if (entries.length === 0) throw bad('The data is empty');
    let n = -1;
    for (const [k, col] of entries) {
      if (!Array.isArray(col)) throw bad(`column '${k}': expected an array of values`);
      if (n !== -1 && col.length !== n) throw bad(`column '${k}' has ${col.length} values; the first column has ${n}`);
      n = col.length;
    }
    if (n > limits.maxRows) throw new AppError('request_too_large', `The data has ${n} rows; at most ${limits.maxRows} are read (INGEST_MAX_ROWS)`);
    const cols = entries.map(([k, col]) => (col as unknown[]).map((v, i) => cell(v, `record ${i}, column '${k}'`)));
    const rows = Array.from({ length: n }, (_, i) => cols.map((c) => c[i] as Cell));
    return { format: 'json', header: entries.map(([k]) => k), named: true, rows, origin: rows.map((_, i) => i) };
  }
  throw bad('Expected a JSON array of records or an object of columns');
}

export async function readTable(text: string, format: 'auto' | 'csv' | 'tsv' | 'json', limits: TableLimits, field: string): Promise<Table> {
  const f = format === 'auto' ? detectFormat(text) : format;
  if (f === 'json') return readJson(text, limits, field);
  return readDelimited(text, f, limits, field);
}
