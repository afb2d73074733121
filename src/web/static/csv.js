// Series from pasted numbers or a CSV file: one column of values (a header is optional), or the
// long format `unique_id, ds, y` that Nixtla's libraries use (one row per series and time step).
import { csvParseRows } from 'd3-dsv';

/** A numeric cell, or null for an empty one (a gap); throws on text that is not a number. */
function cell(text, where) {
  const t = text.trim();
  if (t === '' || t.toLowerCase() === 'nan' || t.toLowerCase() === 'null') return null;
  const v = Number(t);
  if (!Number.isFinite(v)) throw new Error(`${where}: "${t}" is not a number`);
  return v;
}

/** Numbers separated by commas, spaces or new lines; an error names `field` (the form's label) and the value. */
export function parseNumbers(text, field) {
  const parts = text.split(/[\s,;]+/).filter((p) => p.length > 0);
  return parts.map((p, i) => cell(p, `${field ? `${field}, ` : ''}value ${i + 1}`));
}

/** Returns [{id, start, values}] from CSV text. */
export function parseCsv(text) {
  const rows = csvParseRows(text.trim()).filter((r) => r.some((c) => c.trim() !== ''));
  if (rows.length === 0) throw new Error('The file has no rows');
  const head = rows[0].map((c) => c.trim().toLowerCase());
  const iy = head.indexOf('y');
  if (head.includes('unique_id') && head.includes('ds') && iy >= 0) {
    const iid = head.indexOf('unique_id');
    const ids = head.indexOf('ds');
    const byId = new Map();
    rows.slice(1).forEach((r, n) => {
      const id = (r[iid] ?? '').trim();
      if (!id) throw new Error(`row ${n + 2}: unique_id is empty`);
      const s = byId.get(id) ?? { id, rows: [] };
      s.rows.push({ ds: (r[ids] ?? '').trim(), y: cell(r[iy] ?? '', `row ${n + 2}, column y`) });
      byId.set(id, s);
    });
    return [...byId.values()].map((s) => {
      s.rows.sort((a, b) => (a.ds < b.ds ? -1 : a.ds > b.ds ? 1 : 0));
      return { id: s.id, start: s.rows[0]?.ds || null, values: s.rows.map((r) => r.y) };
    });
  }
  if (rows.some((r) => r.length > 1 && r.slice(1).some((c) => c.trim() !== ''))) {
    throw new Error('Expected one column of numbers, or the columns unique_id, ds, y');
  }
  const hasHeader = Number.isNaN(Number(rows[0][0])) && rows[0][0].trim() !== '';
  const body = hasHeader ? rows.slice(1) : rows;
  return [{ id: hasHeader ? rows[0][0].trim() : 'series', start: null, values: body.map((r, n) => cell(r[0] ?? '', `row ${n + 1 + (hasHeader ? 1 : 0)}`)) }];
}
