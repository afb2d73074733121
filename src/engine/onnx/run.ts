import type { Tensor } from 'onnxruntime-node';
import { EngineError } from '../types.ts';
import type { ResolvedGraph } from './session.ts';

export interface Row {
  context: Float32Array;
  /** Rows sharing a group are run in the same batch with the same id (forecast jointly). */
  group: number;
}

/** Packs whole groups into batches of at most `maxRows` rows (a larger group runs alone). */
export function planBatches(rows: readonly Row[], maxRows: number): number[][] {
  const groups = new Map<number, number[]>();
  rows.forEach((row, i) => {
    const members = groups.get(row.group);
    if (members) members.push(i);
    else groups.set(row.group, [i]);
  });
  const batches: number[][] = [];
  let current: number[] = [];
  for (const members of groups.values()) {
    if (current.length > 0 && current.length + members.length > maxRows) {
      batches.push(current);
      current = [];
    }
    current.push(...members);
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

/**
 * Runs every row through the graph for `blocks` consecutive blocks and returns, per row,
 * `blocks * horizon * width` values (row-major [step, level]; width 1 for point graphs).
 * Between blocks each row's context slides by one block and takes the raw median (or the
 * point forecast) of the block just produced: the official TinyCast rollout.
 */
export async function runRows(graph: ResolvedGraph, rows: readonly Row[], blocks: number, maxRows: number, signal?: AbortSignal): Promise<Float32Array[]> {
  const { ort, contextLength: C, horizon: H } = graph;
  const width = graph.levels ? graph.levels.length : 1;
  const feedIndex = graph.levels ? graph.medianIndex : 0;
  const results: Float32Array[] = rows.map(() => new Float32Array(blocks * H * width));
  for (const batch of planBatches(rows, Math.max(1, maxRows))) {
    const b = batch.length;
    const ctx = new Float32Array(b * C);
    for (const [i, r] of batch.entries()) ctx.set(rows[r]?.context ?? new Float32Array(C), i * C);
    const idsByGroup = new Map<number, number>();
    const ids = batch.map((r) => {
      const g = rows[r]?.group ?? r;
      let id = idsByGroup.get(g);
      if (id === undefined) {
        id = idsByGroup.size;
        idsByGroup.set(g, id);
      }
      return id;
    });
    for (let block = 0; block < blocks; block++) {
      if (signal?.aborted) throw new EngineError('timeout', 'forecast cancelled');
      const feeds: Record<string, Tensor> = { [graph.contextInput]: new ort.Tensor('float32', ctx, [b, C]) };
      if (graph.idInput) {
        feeds[graph.idInput.name] =
          graph.idInput.dtype === 'int64'
            ? new ort.Tensor(
                'int64',
                BigInt64Array.from(ids, (v) => BigInt(v)),
                [b],
              )
            : new ort.Tensor('int32', Int32Array.from(ids), [b]);
      }
      let out: Tensor | undefined;
      try {
        out = (await graph.session.run(feeds))[graph.output];
      } catch (err) {
        throw new EngineError('failed', `onnx run failed: ${(err as Error).message}`);
      }
      const data = out?.data;
      if (!(data instanceof Float32Array) || data.length !== b * H * width) {
        throw new EngineError('failed', `onnx output ${graph.output} has an unexpected shape [${out?.dims.join(', ') ?? ''}]`);
      }
      for (const [i, r] of batch.entries()) results[r]?.set(data.subarray(i * H * width, (i + 1) * H * width), block * H * width);
      if (block + 1 < blocks) slideContexts(ctx, data, b, C, H, width, feedIndex);
    }
  }
  return results;
}

function slideContexts(ctx: Float32Array, out: Float32Array, b: number, C: number, H: number, width: number, feed: number): void {
  for (let i = 0; i < b; i++) {
    const row = ctx.subarray(i * C, (i + 1) * C);
    const keep = Math.max(0, C - H);
    row.copyWithin(0, C - keep);
    for (let h = Math.max(0, H - C); h < H; h++) {
      row[keep + h - Math.max(0, H - C)] = out[(i * H + h) * width + feed] ?? NaN;
    }
  }
}
