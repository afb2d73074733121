// Charts drawn with uPlot (canvas). Each chart sits in a <figure> whose caption and the table
// next to it carry the same numbers for screen readers.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { html } from './html.js';

const COLORS = {
  history: '#1f2937',
  mean: '#1d4ed8',
  band: 'rgba(29, 78, 216, 0.18)',
  bandLine: '#60a5fa',
  bar: '#0f766e',
  anomaly: '#dc2626',
  filled: '#c2410c',
};
/** One colour per model of a backtest (distinguishable, dark enough on white). */
const PALETTE = ['#1d4ed8', '#c2410c', '#047857', '#7c3aed', '#be185d', '#0e7490', '#854d0e', '#4b5563'];

/** A series drawn as markers only (no line): flagged or filled points. */
const markers = (label, color, size = 9) => ({
  label,
  stroke: color,
  fill: color,
  width: 0,
  paths: () => null,
  points: { show: true, space: 0, size, stroke: color, fill: color },
});
/** The x axis of step numbers: whole steps only. */
const STEP_AXIS = { label: 'step', incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000] };
const drawnHook = { draw: [(u) => u.root.setAttribute('data-drawn', 'true')] };

function useUplot(build, deps) {
  const box = useRef(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return undefined;
    const width = () => Math.max(280, Math.floor(el.clientWidth || 600));
    const plot = build(el, width());
    const ro = new ResizeObserver(() => plot.setSize({ width: width(), height: plot.height }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      plot.destroy();
    };
  }, deps);
  return box;
}

/** The quantile level nearest to `target`, or null when there is none within 0.15. */
function nearestQuantile(qs, target) {
  let best = null;
  for (const q of qs ?? []) if (!best || Math.abs(q.level - target) < Math.abs(best.level - target)) best = q;
  return best && Math.abs(best.level - target) <= 0.15 ? best : null;
}

/**
 * History, forecast mean and the band between the quantiles nearest 10% and 90% (a fan chart).
 * `output` is one entry of a forecast's `outputs`; `history` the numbers sent.
 */
export function FanChart({ history, output, title }) {
  const mean = output.mean.map((m) => m[0]);
  const lo = nearestQuantile(output.quantile_predictions, 0.1);
  const hi = nearestQuantile(output.quantile_predictions, 0.9);
  const n = history.length;
  const box = useUplot(
    (el, width) => {
      const xs = Array.from({ length: n + mean.length }, (_, i) => i + 1);
      const pad = (arr, before) => [...Array(before).fill(null), ...arr];
      // The forecast lines start at the last observed point so they join the history.
      const last = history[n - 1] ?? null;
      const series = [
        { label: 'step' },
        { label: 'history', stroke: COLORS.history, width: 2 },
        { label: 'mean', stroke: COLORS.mean, width: 2, dash: [6, 3] },
      ];
      const data = [xs, [...history, ...Array(mean.length).fill(null)], pad([last, ...mean], n - 1)];
      const bands = [];
      if (lo && hi) {
        series.push(
          { label: `q${hi.level}`, stroke: COLORS.bandLine, width: 1, points: { show: false } },
          { label: `q${lo.level}`, stroke: COLORS.bandLine, width: 1, points: { show: false } },
        );
        data.push(pad([last, ...hi.values.map((v) => v[0])], n - 1), pad([last, ...lo.values.map((v) => v[0])], n - 1));
        bands.push({ series: [3, 4], fill: COLORS.band });
      }
      const opts = {
        width,
        height: 280,
        series,
        bands,
        scales: { x: { time: false } },
        axes: [STEP_AXIS, {}],
        hooks: drawnHook,
      };
      return new uPlot(opts, data, el);
    },
    [history, output],
  );
  const band = lo && hi ? `, with the ${Math.round(lo.level * 100)}–${Math.round(hi.level * 100)}% band` : '';
  return html`<figure class="chart">
    <div ref=${box} role="img" aria-label=${`${title}: ${n} observed points and ${mean.length} forecast steps${band}`}></div>
    <figcaption>${title}: history (solid), forecast mean (dashed)${band} (shaded)</figcaption>
  </figure>`;
}

/**
 * A series with the anomaly detector's expectation, its interval (shaded) and the flagged points
 * (red markers). `values` is the whole series sent; `output` one entry of the answer's `outputs`,
 * whose rows start at `output.start_index`.
 */
export function AnomalyChart({ values, output, title }) {
  const n = values.length;
  const at = (col) => {
    const out = Array(n).fill(null);
    col.forEach((row, i) => {
      out[output.start_index + i] = row[0];
    });
    return out;
  };
  const flagged = Array(n).fill(null);
  output.anomaly.forEach((row, i) => {
    if (row[0]) flagged[output.start_index + i] = output.value[i][0];
  });
  const count = flagged.filter((v) => v !== null).length;
  const box = useUplot(
    (el, width) => {
      const xs = Array.from({ length: n }, (_, i) => i + 1);
      const series = [
        { label: 'step' },
        { label: 'value', stroke: COLORS.history, width: 2 },
        { label: 'expected', stroke: COLORS.mean, width: 1.5, dash: [6, 3] },
        { label: 'upper', stroke: COLORS.bandLine, width: 1, points: { show: false } },
        { label: 'lower', stroke: COLORS.bandLine, width: 1, points: { show: false } },
        markers('anomaly', COLORS.anomaly, 10),
      ];
      const data = [xs, values, at(output.expected), at(output.upper), at(output.lower), flagged];
      const opts = {
        width,
        height: 280,
        series,
        bands: [{ series: [3, 4], fill: COLORS.band }],
        scales: { x: { time: false } },
        axes: [STEP_AXIS, {}],
        hooks: drawnHook,
      };
      return new uPlot(opts, data, el);
    },
    [values, output],
  );
  return html`<figure class="chart">
    <div ref=${box} role="img" aria-label=${`${title}: ${n} points, ${output.value.length} scored, ${count} flagged as anomalies`}></div>
    <figcaption>${title}: the values (solid), what was expected (dashed) and the normal range (shaded); red dots are the flagged points</figcaption>
  </figure>`;
}

/**
 * A series before and after imputation: the observed values (solid, broken at the gaps) and the
 * filled ones (orange, dashed across each gap, a marker on every filled point).
 */
export function ImputeChart({ output, title }) {
  const filled = output.filled.map((r) => r[0]);
  const values = output.target.map((r) => r[0]);
  const n = values.length;
  const observed = values.map((v, i) => (filled[i] ? null : v));
  // The dashed line joins each gap to its observed neighbours.
  const bridge = values.map((v, i) => (filled[i] || filled[i - 1] || filled[i + 1] ? v : null));
  const points = values.map((v, i) => (filled[i] ? v : null));
  const count = filled.filter(Boolean).length;
  const box = useUplot(
    (el, width) => {
      const series = [
        { label: 'step' },
        { label: 'observed', stroke: COLORS.history, width: 2 },
        { label: 'filled (line)', stroke: COLORS.filled, width: 2, dash: [5, 3], points: { show: false } },
        markers('filled', COLORS.filled, 8),
      ];
      const data = [Array.from({ length: n }, (_, i) => i + 1), observed, bridge, points];
      const opts = { width, height: 280, series, scales: { x: { time: false } }, axes: [STEP_AXIS, {}], hooks: drawnHook };
      return new uPlot(opts, data, el);
    },
    [output],
  );
  return html`<figure class="chart">
    <div ref=${box} role="img" aria-label=${`${title}: ${n} points, ${count} of them filled`}></div>
    <figcaption>${title}: observed values (solid); filled values (orange dots, dashed across the gaps)</figcaption>
  </figure>`;
}

/**
 * A backtest: the series and, per model, its forecasts of the held-out windows (a later window's
 * forecast of a step replaces an earlier one where windows overlap).
 * `forecasts`: [{model, windows: [{cutoff, mean: number[]}]}].
 */
export function BacktestChart({ values, forecasts, title }) {
  const n = values.length;
  const box = useUplot(
    (el, width) => {
      const series = [{ label: 'step' }, { label: 'actual', stroke: COLORS.history, width: 2 }];
      const data = [Array.from({ length: n }, (_, i) => i + 1), values];
      forecasts.forEach((f, k) => {
        const ys = Array(n).fill(null);
        for (const w of f.windows) {
          w.mean.forEach((v, j) => {
            ys[w.cutoff + j] = v;
          });
        }
        series.push({ label: f.model, stroke: PALETTE[k % PALETTE.length], width: 2, dash: [6, 3] });
        data.push(ys);
      });
      const opts = { width, height: 280, series, scales: { x: { time: false } }, axes: [STEP_AXIS, {}], hooks: drawnHook };
      return new uPlot(opts, data, el);
    },
    [values, forecasts],
  );
  return html`<figure class="chart">
    <div ref=${box} role="img" aria-label=${`${title}: ${n} points and the held-out forecasts of ${forecasts.map((f) => f.model).join(', ')}`}></div>
    <figcaption>${title}: the series (solid) and each model's forecasts of the held-out windows (dashed, one colour per model)</figcaption>
  </figure>`;
}

/** Bars of one measure per day (usage). */
export function DailyBars({ days, measure, label }) {
  const box = useUplot(
    (el, width) => {
      const xs = days.map((d) => Date.parse(`${d.date}T00:00:00Z`) / 1000);
      const ys = days.map((d) => d[measure]);
      const opts = {
        width,
        height: 220,
        series: [{}, { label, stroke: COLORS.bar, fill: 'rgba(15, 118, 110, 0.35)', paths: uPlot.paths.bars({ size: [0.6, 60] }), points: { show: false } }],
        scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        hooks: drawnHook,
      };
      return new uPlot(opts, [xs, ys], el);
    },
    [days, measure],
  );
  return html`<figure class="chart">
    <div ref=${box} role="img" aria-label=${`${label} per day over ${days.length} days`}></div>
    <figcaption>${label} per day (UTC)</figcaption>
  </figure>`;
}
