/** The requests of bench/abuse.ts (the largest accepted of each kind, and a few refused ones), shared with bench/loop-turns.ts. */
export interface Scenario {
  name: string;
  path: string;
  body: () => string;
  parallel?: number;
}

const ramp = (n: number) => Array.from({ length: n }, (_, i) => 100 + 10 * Math.sin(i / 3) + (i % 7));
/** A JSON-RPC tools/call body for POST /mcp. */
const mcpToolCall = (name: string, args: unknown): string => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });
const forecast = (over: Record<string, unknown>) => JSON.stringify({ model: 'naive', inputs: [{ target: ramp(200) }], ...over });

/** A naive forecast of the longest input (100,000 steps) with `variates` columns, h 24 (REST and MCP rows). */
const wideNaive = (variates: number) => ({
  model: 'naive',
  inputs: [{ target: Array.from({ length: 100_000 }, (_, t) => Array.from({ length: variates }, (_, v) => (t + v) % 97)) }],
  parameters: { prediction_length: 24 },
});
/** The largest series an input may be (100,000 steps), with a daily-like season. */
const longSeasonal = () => Array.from({ length: 100_000 }, (_, i) => (i % 97) + (i % 24));
const FAST_FOUR = ['naive', 'seasonal-naive', 'drift', 'theta'];

export const SCENARIOS: Scenario[] = [
  {
    name: 'forecast, largest response: h 10000 × (1 + 3 quantiles + 196 samples) = 2,000,000 numbers',
    path: '/v1/forecast',
    body: () => forecast({ parameters: { prediction_length: 10_000, num_samples: 196 } }),
  },
  {
    name: 'same, 3 in parallel (one account)',
    path: '/v1/forecast',
    body: () => forecast({ parameters: { prediction_length: 10_000, num_samples: 196 } }),
    parallel: 3,
  },
  {
    name: 'batch, 64 items × h 1000 × (1 + 3 + 27) = 1,984,000 numbers',
    path: '/v1/forecast/batch',
    body: () =>
      JSON.stringify({
        requests: Array.from({ length: 64 }, () => ({
          model: 'naive',
          inputs: [{ target: ramp(200) }],
          parameters: { prediction_length: 1000, num_samples: 27 },
        })),
      }),
  },
  {
    name: 'largest input: 100,000 steps × 20 variates = 2,000,000 values',
    path: '/v1/forecast',
    body: () => JSON.stringify(wideNaive(20)),
  },
  {
    name: 'ensemble: 3 candidates + blend × h 10000 × (1 + 3 + 46 samples) = 2,000,000 numbers',
    path: '/v1/forecast/ensemble',
    body: () =>
      JSON.stringify({
        inputs: [{ target: ramp(20_000) }],
        models: ['naive', 'seasonal-naive', 'drift'],
        top_n: 3,
        parameters: { prediction_length: 10_000, num_samples: 46 },
      }),
  },
  {
    name: 'cross-validation: 3 models × 13 windows × h 10000 × (1 + 3) + actuals = 1,690,000 numbers',
    path: '/v1/cross-validation',
    body: () =>
      JSON.stringify({
        inputs: [{ target: ramp(25_000) }],
        models: ['naive', 'seasonal-naive', 'drift'],
        prediction_length: 10_000,
        n_windows: 13,
        step_size: 1000,
      }),
  },
  {
    name: 'detect-anomalies (zscore), largest accepted: 3 series × 100,000 points (× 6 numbers each = 1,800,000)',
    path: '/v1/detect-anomalies',
    body: () => JSON.stringify({ method: 'zscore', inputs: Array.from({ length: 3 }, () => ({ target: Array.from({ length: 100_000 }, (_, i) => i % 97) })) }),
  },
  {
    name: 'impute (linear), largest accepted: 10 series × 100,000 points (values + flags = 2,000,000), every 3rd missing',
    path: '/v1/impute',
    body: () =>
      JSON.stringify({
        method: 'linear',
        inputs: Array.from({ length: 10 }, () => ({ target: Array.from({ length: 100_000 }, (_, i) => (i % 3 === 1 ? null : i % 97)) })),
      }),
  },
  {
    name: 'MCP forecast tool, largest answer: h 1000 × (1 + 3 + 16 samples) = 20,000 numbers',
    path: '/mcp',
    body: () => mcpToolCall('forecast', { model: 'naive', inputs: [{ target: ramp(200) }], parameters: { prediction_length: 1000, num_samples: 16 } }),
  },
  {
    name: 'MCP forecast tool, largest input under MCP_BODY_LIMIT_BYTES (2 MiB): 100,000 steps × 4 variates',
    path: '/mcp',
    body: () => mcpToolCall('forecast', wideNaive(4)),
  },
  {
    name: "calendar: frequency 100000B, h 40 (the issue's 33 s case)",
    path: '/v1/forecast',
    body: () =>
      JSON.stringify({ model: 'naive', inputs: [{ target: ramp(10), start: '2024-01-01' }], parameters: { prediction_length: 40, frequency: '100000B' } }),
  },
  {
    name: 'calendar: frequency 100B, h 10000 with timestamps',
    path: '/v1/forecast',
    body: () =>
      JSON.stringify({ model: 'naive', inputs: [{ target: ramp(10), start: '2024-01-01' }], parameters: { prediction_length: 10_000, frequency: '100B' } }),
  },
  {
    name: 'most timestamps: 200 inputs × h 10000, means only (2,000,000 numbers and 2,000,000 timestamps)',
    path: '/v1/forecast',
    body: () =>
      JSON.stringify({
        model: 'naive',
        inputs: Array.from({ length: 200 }, () => ({ target: ramp(10), start: '2024-01-01T00:00:00Z' })),
        parameters: { prediction_length: 10_000, frequency: 'h', quantile_levels: [] },
      }),
  },
  {
    name: 'most timestamps sent: 4 inputs × 80,000 points, each with its ISO time (320,000 timestamps, 9.4 MB)',
    path: '/v1/forecast',
    body: () => {
      const t0 = Date.UTC(2000, 0, 1);
      const times = Array.from({ length: 80_000 }, (_, i) => new Date(t0 + i * 3_600_000).toISOString());
      return JSON.stringify({
        model: 'naive',
        inputs: Array.from({ length: 4 }, () => ({ target: Array.from({ length: 80_000 }, (_, i) => i % 97), timestamps: times })),
        parameters: { prediction_length: 24 },
      });
    },
  },
  {
    name: 'ingest, largest paste: 180,000 CSV rows of 90 series (4.8 MB)',
    path: '/v1/series/ingest',
    body: () => {
      const rows = ['unique_id,ds,y'];
      const start = Date.UTC(2020, 0, 1);
      for (let s = 0; s < 90; s++)
        for (let i = 0; i < 2000; i++) rows.push(`s${s},${new Date(start + i * 3_600_000).toISOString().slice(0, 19)},${(i * 7) % 1000}`);
      return JSON.stringify({ text: `${rows.join('\n')}\n` });
    },
  },
  {
    name: 'covariates: 50,000 steps with 40 past covariates (2,000,000 values)',
    path: '/v1/forecast',
    body: () =>
      JSON.stringify({
        model: 'naive',
        inputs: [
          {
            target: Array.from({ length: 50_000 }, (_, i) => i % 97),
            past_covariates: Object.fromEntries(Array.from({ length: 40 }, (_, c) => [`c${c}`, Array.from({ length: 50_000 }, (_, i) => (i + c) % 89)])),
          },
        ],
        parameters: { prediction_length: 24 },
      }),
  },
  {
    name: 'ensemble, largest input: 100,000 points, 4 fast candidates, h 24',
    path: '/v1/forecast/ensemble',
    body: () =>
      JSON.stringify({
        inputs: [{ target: longSeasonal() }],
        models: FAST_FOUR,
        parameters: { prediction_length: 24 },
      }),
  },
  {
    name: 'cross-validation, largest input: 100,000 points, 4 models × 10 windows (40 runs), h 24',
    path: '/v1/cross-validation',
    body: () =>
      JSON.stringify({
        inputs: [{ target: longSeasonal() }],
        models: FAST_FOUR,
        prediction_length: 24,
        n_windows: 10,
      }),
  },
  {
    name: 'most series: batch of 64 items × 1000 inputs × 12 points, h 6 (64,000 series)',
    path: '/v1/forecast/batch',
    body: () =>
      JSON.stringify({
        requests: Array.from({ length: 64 }, () => ({
          model: 'naive',
          inputs: Array.from({ length: 1000 }, (_, i) => ({ target: Array.from({ length: 12 }, (_, t) => (t * 7 + i) % 13) })),
          parameters: { prediction_length: 6 },
        })),
      }),
  },
  {
    name: 'auto-ets, 10,000 points, h 1000',
    path: '/v1/forecast',
    body: () => JSON.stringify({ model: 'auto-ets', inputs: [{ target: ramp(10_000) }], parameters: { prediction_length: 1000 } }),
  },
  {
    name: 'refused: h 10000 × 1000 samples (10 M numbers) → 413',
    path: '/v1/forecast',
    body: () => forecast({ parameters: { prediction_length: 10_000, num_samples: 1000 } }),
  },
  {
    name: 'refused: 40 KB of nested metadata → 422',
    path: '/v1/forecast',
    body: () => `{"model":"naive","inputs":[{"target":[1,2,3]}],"metadata":${'{"a":'.repeat(8000)}1${'}'.repeat(8000)}}`,
  },
  {
    name: 'refused: frequency 100000YS, h 10000 → 422',
    path: '/v1/forecast',
    body: () =>
      JSON.stringify({ model: 'naive', inputs: [{ target: ramp(10), start: '2024-01-01' }], parameters: { prediction_length: 10_000, frequency: '100000YS' } }),
  },
];
