/**
 * What a catalog entry declares about an exported ONNX graph. These are expectations and
 * defaults only: at run time the names, dtypes and static dimensions are read from the
 * InferenceSession, and the quantile levels from the repo's manifest.json when present.
 */
export interface OnnxGraphSpec {
  /** File inside the hub repo, e.g. `chronos2-ctx2048-h64.onnx`. */
  file: string;
  /** Expected name of the float32 [rows, context] input. */
  contextInput: string;
  /** Expected name of the int64 [rows] id input (rows sharing an id are forecast jointly), or null. */
  idInput: string | null;
  /** Expected output name: [rows, horizon, levels] quantiles or [rows, horizon] point forecast. */
  output: string;
  /** Fallbacks when the graph's dimensions are symbolic and no manifest says otherwise. */
  contextLength: number;
  horizon: number;
  /** The output's quantile levels, ascending; null for a point-forecast graph. */
  levels: number[] | null;
  /**
   * How short series and missing values are fed:
   * - `nan`: left-pad with NaN and pass NaN through (the graph is missing-aware);
   * - `impute_pad_first`: left-pad with the first value, then impute NaN by linear
   *   interpolation with edge fill (TinyCast's official predictor);
   * - `fill_mean`: fill NaN and the left padding with the mean of the window's observed
   *   points (the TypeScript TinyTimeMixer's pipeline: after the model's scaler those points
   *   are 0, as in granite-tsfm's padded, masked input; see docs/models-onnx.md).
   */
  missing: 'nan' | 'impute_pad_first' | 'fill_mean';
  /**
   * `median`: longer horizons by feeding the raw median (for a point-forecast graph: the point
   * forecast) back block by block (TinyCast, TinyTimeMixer).
   */
  rollout: 'none' | 'median';
  /** Rows per session.run. A group (rows sharing an id) is never split across runs. */
  maxBatchRows: number;
}
