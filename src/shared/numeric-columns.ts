/**
 * A large numeric array of a request body read straight into typed columns by the sliced parser
 * (src/shared/json-sliced.ts, option `columns`) instead of one JavaScript array per row: a
 * 100,000 × 20 target was 100,000 row arrays (about 20 MB that lived long enough to be copied by
 * every young-generation collection and then promoted), plus 20 columns of 100,000 numbers built
 * from them on the event loop. Here each variate is one Float64Array from the start; a missing
 * value (JSON null) is NaN, which JSON cannot otherwise express.
 *
 * `flat`: the text was `[v, v, …]` (one variate); otherwise `[[v, …], [v, …], …]`, every row of
 * `width` values. It serialises back (toJSON) to exactly the rows JSON.parse would have given, so
 * anything that writes or hashes the request (idempotency keys, error echoes) sees the same value.
 */
export class NumericColumns {
  /** Steps (rows). */
  readonly length: number;
  readonly flat: boolean;
  /** columns[v][t]; NaN = null. */
  readonly columns: Float64Array[];
  constructor(length: number, flat: boolean, columns: Float64Array[]) {
    this.length = length;
    this.flat = flat;
    this.columns = columns;
  }

  get width(): number {
    return this.columns.length;
  }

  toJSON(): (number | null)[] | (number | null)[][] {
    const value = (c: Float64Array, t: number): number | null => {
      const x = c[t] as number;
      return Number.isNaN(x) ? null : x;
    };
    const first = this.columns[0] as Float64Array;
    if (this.flat) return Array.from({ length: this.length }, (_, t) => value(first, t));
    return Array.from({ length: this.length }, (_, t) => this.columns.map((c) => value(c, t)));
  }
}

/**
 * Collects the items of a large array into columns, one batch of parsed items at a time. `add`
 * answers false as soon as an item does not fit (not a finite number or null, a row of another
 * width or outside 1..maxWidth, a mix of rows and numbers): the caller then reads the array as
 * plain JSON, so every error is reported as before.
 */
export class ColumnsBuilder {
  private flat: boolean | null = null;
  private cols: Float64Array[] = [];
  private n = 0;
  private capacity = 0;
  private readonly maxWidth: number;

  constructor(maxWidth: number) {
    this.maxWidth = maxWidth;
  }

  /**
   * `chars`: the length of the text these items were parsed from; `rest`: characters of the text
   * after them. The first batch sizes the columns for the whole text at its density (rows rarely
   * get shorter), so they are seldom grown and seldom cut.
   */
  add(items: readonly unknown[], chars: number, rest: number): boolean {
    if (items.length === 0) return true;
    if (this.flat === null) {
      const first = items[0];
      this.flat = !Array.isArray(first);
      const width = this.flat ? 1 : (first as unknown[]).length;
      if (width < 1 || width > this.maxWidth) return false;
      this.capacity = items.length + Math.ceil((items.length * rest) / Math.max(1, chars)) + 16;
      this.cols = Array.from({ length: width }, () => new Float64Array(this.capacity));
    }
    if (this.n + items.length > this.capacity) {
      this.capacity = Math.max(Math.ceil(this.capacity * 1.5), this.n + items.length);
      this.cols = this.cols.map((c) => {
        const grown = new Float64Array(this.capacity);
        grown.set(c.subarray(0, this.n));
        return grown;
      });
    }
    const n = this.n;
    if (this.flat) {
      const col = this.cols[0] as Float64Array;
      for (let k = 0; k < items.length; k++) {
        const x = items[k];
        if (x === null) col[n + k] = Number.NaN;
        else if (typeof x === 'number' && Number.isFinite(x)) col[n + k] = x;
        else return false;
      }
    } else {
      const cols = this.cols;
      const width = cols.length;
      for (let k = 0; k < items.length; k++) {
        const row = items[k];
        if (!Array.isArray(row) || row.length !== width) return false;
        for (let v = 0; v < width; v++) {
          const x: unknown = row[v];
          if (x === null) (cols[v] as Float64Array)[n + k] = Number.NaN;
          else if (typeof x === 'number' && Number.isFinite(x)) (cols[v] as Float64Array)[n + k] = x;
          else return false;
        }
      }
    }
    this.n += items.length;
    return true;
  }

  /**
   * The columns, cut to the rows read (null when nothing was read: an empty array stays []). A
   * column with little room left over is a view of it (no copy); one with much is copied to size,
   * as a copy to a worker thread copies the whole buffer under a view.
   */
  finish(): NumericColumns | null {
    if (this.flat === null || this.n === 0) return null;
    const n = this.n;
    const view = this.capacity - n <= n / 8;
    return new NumericColumns(
      n,
      this.flat,
      this.cols.map((c) => (view ? c.subarray(0, n) : c.slice(0, n))),
    );
  }
}
