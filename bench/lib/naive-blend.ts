/** One series of the seasonal-naive blend study (bench/naive-blend-dump.ts writes them, bench/naive-blend-rules.ts scores them). */
export interface BlendSeries {
  id: string;
  /** M3 frequency, or the ETT origin set ("design", "check"). */
  set: string;
  m: number;
  h: number;
  y: number[];
  actual: number[];
}

/** A series with the model's own forecast and its backtest refits' forecasts. */
export interface BlendSaved extends BlendSeries {
  mean: number[];
  windows: { origin: number; mean: number[] }[];
}
