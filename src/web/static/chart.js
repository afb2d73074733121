// Charts drawn with uPlot (canvas). Each chart sits in a <figure> whose caption and the table
// next to it carry the same numbers for screen readers.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { html } from './html.js';

const COLORS = { history: '#1f2937', mean: '#1d4ed8', band: 'rgba(29, 78, 216, 0.18)', bandLine: '#60a5fa', bar: '#0f766e' };

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
        axes: [{ label: 'step' }, {}],
        hooks: { draw: [(u) => u.root.setAttribute('data-drawn', 'true')] },
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
        hooks: { draw: [(u) => u.root.setAttribute('data-drawn', 'true')] },
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
