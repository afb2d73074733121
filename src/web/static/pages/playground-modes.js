// The playground's modes beyond one forecast: anomaly detection, imputation and cross-validation
// (POST /v1/detect-anomalies, /v1/impute, /v1/cross-validation). Each has its parameters (inside
// the playground's one form) and its result card; the data comes from the shared Data fieldset.
import { AnomalyChart, BacktestChart, ImputeChart } from '../chart.js';
import { html } from '../html.js';
import { fmt } from '../ui.js';

const AIR = [
  112, 118, 132, 129, 121, 135, 148, 148, 136, 119, 104, 118, 115, 126, 141, 135, 125, 149, 170, 170, 158, 133, 114, 140, 145, 150, 178, 163, 172, 178, 199,
  199, 184, 162, 146, 166, 171, 180, 193, 181, 183, 218, 230, 242, 209, 191, 172, 194,
];

/** An example series per mode, put in the values box when the user switches mode (unless they typed their own). */
export const SAMPLES = {
  forecast: AIR.slice(0, 24).join(' '),
  anomalies: AIR.map((v, i) => (i === 30 ? 320 : i === 40 ? 90 : v)).join(' '),
  impute: AIR.map((v, i) => (i === 5 || i === 17 || (i >= 26 && i < 30) ? 'null' : v)).join(' '),
  cv: AIR.join(' '),
};

export const MODES = [
  { id: 'forecast', label: 'Forecast', action: 'Forecast' },
  { id: 'anomalies', label: 'Detect anomalies', action: 'Detect anomalies' },
  { id: 'impute', label: 'Fill gaps (impute)', action: 'Fill the gaps' },
  { id: 'cv', label: 'Cross-validate (backtest)', action: 'Run the backtest' },
];

/** A timestamp without its midnight time of day. */
const when = (t) => t.replace(/T00:00:00(\.000)?Z$/, '');
const num = (v) => (v === null || v === undefined ? '—' : fmt.num(v));
const int = (v) => Number.parseInt(String(v), 10);

function Field({ id, label, children, help }) {
  return html`<div class="field">
    <label for=${id}>${label}</label>
    ${children}
    ${help ? html`<small id=${`${id}-help`}>${help}</small>` : null}
  </div>`;
}

const onValue = (set) => (e) => set(e.currentTarget.value);

// ---- anomaly detection ---------------------------------------------------------------------

export const anomalyDefaults = { method: 'forecast', model: 'auto-ets', level: '99', window: '24', sensitivity: '3', detectionSize: '' };

export function AnomalyParams({ p, set, models }) {
  const change = (k) => onValue((v) => set({ ...p, [k]: v }));
  const fitted = models.filter((m) => (m.capabilities ?? []).includes('fitted_values'));
  return html`<fieldset>
    <legend>Anomaly detection</legend>
    <div class="row top">
      <${Field} id="an-method" label="Method" help=${p.method === 'forecast' ? "Flags values outside the model's prediction interval." : 'Flags values far from the mean of the previous values.'}>
        <select id="an-method" value=${p.method} onChange=${change('method')} aria-describedby="an-method-help">
          <option value="forecast">forecast</option>
          <option value="zscore">zscore</option>
        </select>
      <//>
      ${
        p.method === 'forecast'
          ? html`<${Field} id="an-model" label="Model" help="Models with in-sample fitted values.">
                <select id="an-model" value=${p.model} onChange=${change('model')} aria-describedby="an-model-help">
                  ${(fitted.length ? fitted : [{ id: 'auto-ets', available: true }]).map(
                    (m) => html`<option value=${m.id} disabled=${m.available === false}>${m.id}</option>`,
                  )}
                </select>
              <//>
              <${Field} id="an-level" label="Interval level (%)" help="Higher: fewer, surer flags.">
                <input id="an-level" type="number" step="any" min="50" max="99.99" value=${p.level} onInput=${change('level')} aria-describedby="an-level-help" required />
              <//>`
          : html`<${Field} id="an-window" label="Window (previous values, 4–128)">
                <input id="an-window" type="number" min="4" max="128" value=${p.window} onInput=${change('window')} required />
              <//>
              <${Field} id="an-sensitivity" label="Sensitivity (standard deviations, 1.5–6)">
                <input id="an-sensitivity" type="number" step="0.1" min="1.5" max="6" value=${p.sensitivity} onInput=${change('sensitivity')} required />
              <//>`
      }
      <${Field} id="an-last" label="Last N points only (optional)" help="Online mode: only these are scored; the earlier points are context.">
        <input id="an-last" type="number" min="1" value=${p.detectionSize} onInput=${change('detectionSize')} aria-describedby="an-last-help" />
      <//>
    </div>
  </fieldset>`;
}

export function anomalyBody(p, inputs, frequency) {
  const body = { inputs, method: p.method, ...(frequency ? { frequency } : {}) };
  if (p.method === 'forecast') Object.assign(body, { model: p.model, level: Number(p.level) });
  else Object.assign(body, { window: int(p.window), sensitivity: Number(p.sensitivity) });
  if (String(p.detectionSize).trim() !== '') body.detection_size = int(p.detectionSize);
  return body;
}

export function AnomalyCard({ r, series, pick }) {
  const out = r.outputs[pick] ?? r.outputs[0];
  const s = series[pick] ?? series[0];
  const how = r.method === 'forecast' ? `${r.model}, ${r.level}% interval` : `zscore, window ${r.window}, sensitivity ${r.sensitivity}`;
  const flagged = [];
  out.anomaly.forEach((row, i) => {
    if (row[0]) flagged.push(i);
  });
  const where = (i) => out.start_index + i + 1;
  return html`<section class="card result" aria-label="Anomalies">
    <h3>Anomalies in ${s.id} (${how})</h3>
    <p class="facts">
      <span><strong data-testid="anomaly-count">${out.anomaly_count} flagged</strong> of ${out.value.length} scored points${r.outputs.length > 1 ? ` (${r.anomaly_count} in all series)` : ''}</span>
      <span>cost: <strong data-testid="credits">${r.cost_credits} credit${r.cost_credits === 1 ? '' : 's'}</strong></span>
      <span>${fmt.int(r.usage.total_tokens)} tokens</span>
    </p>
    <${AnomalyChart} values=${s.values} output=${out} title=${`${s.id} — anomalies`} />
    <div class="table-wrap" tabindex="0" role="region" aria-label="Flagged points">
      <table>
        <caption>${flagged.length ? 'The flagged points, by score' : 'No point is outside the normal range'}</caption>
        <thead><tr><th scope="col">step</th>${out.timestamps ? html`<th scope="col">time</th>` : null}<th scope="col">value</th><th scope="col">expected</th><th scope="col">normal range</th><th scope="col">score (σ)</th></tr></thead>
        <tbody>
          ${flagged
            .sort((a, b) => (out.score[b][0] ?? 0) - (out.score[a][0] ?? 0))
            .map(
              (i) => html`<tr>
                <td>${where(i)}</td>${out.timestamps ? html`<td>${when(out.timestamps[i])}</td>` : null}<td>${num(out.value[i][0])}</td><td>${num(out.expected[i][0])}</td>
                <td>${num(out.lower[i][0])} – ${num(out.upper[i][0])}</td><td>${num(out.score[i][0])}</td>
              </tr>`,
            )}
        </tbody>
      </table>
    </div>
  </section>`;
}

// ---- imputation ----------------------------------------------------------------------------

export const imputeDefaults = { method: 'model', model: 'auto-ets' };

export function ImputeParams({ p, set, models }) {
  const change = (k) => onValue((v) => set({ ...p, [k]: v }));
  return html`<fieldset>
    <legend>Imputation</legend>
    <p class="muted">Write each missing value as <code>null</code> or <code>NaN</code> in the values (an uploaded file: an empty cell or a missing time step).</p>
    <div class="row top">
      <${Field} id="im-method" label="Fill method" help=${p.method === 'model' ? 'Each gap is forecast from both sides, the two blended.' : 'A straight line between the neighbours of each gap.'}>
        <select id="im-method" value=${p.method} onChange=${change('method')} aria-describedby="im-method-help">
          <option value="model">model</option>
          <option value="linear">linear</option>
        </select>
      <//>
      ${
        p.method === 'model'
          ? html`<${Field} id="im-model" label="Model">
              <select id="im-model" value=${p.model} onChange=${change('model')}>
                ${models.map((m) => html`<option value=${m.id} disabled=${!m.available}>${m.id}${m.available ? '' : ' (not installed)'}</option>`)}
              </select>
            <//>`
          : null
      }
    </div>
  </fieldset>`;
}

export function imputeBody(p, inputs, frequency) {
  return { inputs, method: p.method, ...(p.method === 'model' ? { model: p.model } : {}), ...(frequency ? { frequency } : {}) };
}

export function ImputeCard({ r, series, pick }) {
  const out = r.outputs[pick] ?? r.outputs[0];
  const s = series[pick] ?? series[0];
  const rows = [];
  out.filled.forEach((f, i) => {
    if (f[0]) rows.push(i);
  });
  return html`<section class="card result" aria-label="Imputation">
    <h3>${s.id} with its gaps filled (${r.method === 'model' ? r.model : 'linear interpolation'})</h3>
    <p class="facts">
      <span><strong data-testid="filled-count">${out.filled_count} point${out.filled_count === 1 ? '' : 's'} filled</strong> of ${out.target.length}</span>
      <span>cost: <strong data-testid="credits">${r.cost_credits} credit${r.cost_credits === 1 ? '' : 's'}</strong></span>
      <span>${fmt.int(r.usage.total_tokens)} tokens</span>
    </p>
    <${ImputeChart} output=${out} title=${`${s.id} — imputed`} />
    <div class="table-wrap" tabindex="0" role="region" aria-label="Filled points">
      <table>
        <caption>${rows.length ? 'The filled points' : 'The series had no missing value'}</caption>
        <thead><tr><th scope="col">step</th><th scope="col">filled value</th></tr></thead>
        <tbody>${rows.map((i) => html`<tr><td>${i + 1}</td><td>${num(out.target[i][0])}</td></tr>`)}</tbody>
      </table>
    </div>
  </section>`;
}

// ---- cross-validation ----------------------------------------------------------------------

export const cvDefaults = { models: ['auto-ets', 'seasonal-naive'], horizon: '6', windows: '3', step: '' };

export function CvParams({ p, set, models }) {
  const change = (k) => onValue((v) => set({ ...p, [k]: v }));
  const toggle = (id) => (e) => set({ ...p, models: e.currentTarget.checked ? [...p.models, id] : p.models.filter((m) => m !== id) });
  return html`<fieldset>
    <legend>Cross-validation</legend>
    <fieldset class="checks">
      <legend>Models to compare (up to 8)</legend>
      ${models.map(
        (m) =>
          html`<label class="field check"><input type="checkbox" checked=${p.models.includes(m.id)} disabled=${!m.available} onChange=${toggle(m.id)} />${m.id}</label>`,
      )}
    </fieldset>
    <div class="row top">
      <${Field} id="cv-horizon" label="Steps per window">
        <input id="cv-horizon" type="number" min="1" value=${p.horizon} onInput=${change('horizon')} required />
      <//>
      <${Field} id="cv-windows" label="Windows (1–20)">
        <input id="cv-windows" type="number" min="1" max="20" value=${p.windows} onInput=${change('windows')} required />
      <//>
      <${Field} id="cv-step" label="Steps between windows (optional)" help="Default: the steps per window (windows do not overlap).">
        <input id="cv-step" type="number" min="1" value=${p.step} onInput=${change('step')} aria-describedby="cv-step-help" />
      <//>
    </div>
  </fieldset>`;
}

export function cvBody(p, inputs, frequency, quantile_levels) {
  if (p.models.length === 0) throw new Error('Pick at least one model to compare');
  return {
    inputs,
    models: p.models,
    prediction_length: int(p.horizon),
    n_windows: int(p.windows),
    ...(String(p.step).trim() !== '' ? { step_size: int(p.step) } : {}),
    ...(frequency ? { frequency } : {}),
    ...(quantile_levels.length ? { quantile_levels } : {}),
  };
}

export function CvCard({ r, series, pick }) {
  const s = series[pick] ?? series[0];
  const input = Math.min(pick, r.windows[0].cutoffs.length - 1);
  const forecasts = r.results.map((m) => ({
    model: m.model,
    windows: m.windows.map((w) => ({ cutoff: r.windows[w.window].cutoffs[input], mean: w.forecast.outputs[input].mean.map((row) => row[0]) })),
  }));
  const coverage = (m) =>
    m.metrics.coverage.length === 0
      ? '—'
      : m.metrics.coverage.map((c) => `${Math.round(c.nominal * 100)}%: ${c.observed === null ? '—' : `${Math.round(c.observed * 100)}%`}`).join(', ');
  return html`<section class="card result" aria-label="Cross-validation">
    <h3>Backtest: ${r.n_windows} window${r.n_windows === 1 ? '' : 's'} of ${r.prediction_length} steps, ${r.step_size} apart</h3>
    <p class="facts">
      <span>cost: <strong data-testid="credits">${r.total_cost_credits} credit${r.total_cost_credits === 1 ? '' : 's'}</strong></span>
      <span>${fmt.int(r.usage.total_tokens)} tokens</span>
      <span>metrics over every window and series; ranked by sMAPE</span>
    </p>
    <div class="table-wrap" tabindex="0" role="region" aria-label="Backtest metrics">
      <table>
        <caption>Models ranked by the backtest (lower sMAPE, MASE and WQL are better; coverage should be near its nominal level)</caption>
        <thead><tr><th scope="col">rank</th><th scope="col">model</th><th scope="col">sMAPE %</th><th scope="col">MASE</th><th scope="col">WQL</th><th scope="col">interval coverage (nominal: observed)</th><th scope="col">credits</th></tr></thead>
        <tbody>
          ${r.results.map(
            (m) =>
              html`<tr><td>${m.rank}</td><td>${m.model}</td><td>${num(m.metrics.smape)}</td><td>${num(m.metrics.mase)}</td><td>${num(m.metrics.wql)}</td><td>${coverage(m)}</td><td>${m.credits}</td></tr>`,
          )}
        </tbody>
      </table>
    </div>
    <${BacktestChart} values=${s.values} forecasts=${forecasts} title=${`${s.id} — backtest`} />
    <details><summary>Metrics per window</summary>
      <div class="table-wrap" tabindex="0" role="region" aria-label="Metrics per window">
        <table>
          <caption>sMAPE % per model and window (window 1 is the oldest)</caption>
          <thead><tr><th scope="col">model</th>${r.windows.map((w) => html`<th scope="col">window ${w.window + 1}</th>`)}</tr></thead>
          <tbody>${r.results.map((m) => html`<tr><td>${m.model}</td>${m.windows.map((w) => html`<td>${num(w.metrics.smape)}</td>`)}</tr>`)}</tbody>
        </table>
      </div>
    </details>
  </section>`;
}
