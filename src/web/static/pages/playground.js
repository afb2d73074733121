import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, describeError, request } from '../api.js';
import { FanChart } from '../chart.js';
import { parseCsv, parseNumbers } from '../csv.js';
import { html } from '../html.js';
import { ErrorBox, fmt, SignInFirst, useAction } from '../ui.js';
import {
  AnomalyCard,
  AnomalyParams,
  anomalyBody,
  anomalyDefaults,
  CvCard,
  CvParams,
  cvBody,
  cvDefaults,
  ImputeCard,
  ImputeParams,
  imputeBody,
  imputeDefaults,
  MODES,
  SAMPLES,
} from './playground-modes.js';

/**
 * An uploaded file as series. A table with a time column goes to POST /v1/series/ingest, which
 * detects the columns, the frequency, gaps and duplicates and names the line of a bad value; a
 * file of one column of numbers (no timestamps) is read here.
 */
async function readUpload(file) {
  const text = await file.text();
  const first = text.trimStart().split(/\r?\n/, 1)[0] ?? '';
  if (!/[,;\t]/.test(first)) return { series: parseCsv(text), frequency: null, notes: [], by: 'page' };
  const format = /\t/.test(first) ? 'tsv' : 'auto';
  const { data } = await request('POST', '/v1/series/ingest', { body: { text, format } });
  const series = data.inputs.map((x, i) => ({ id: x.item_id ?? data.series[i]?.unique_id ?? `series ${i + 1}`, start: x.start ?? null, values: x.target }));
  const notes = [...data.warnings];
  const missing = data.series.reduce((a, s) => a + s.missing, 0);
  if (missing > 0) notes.push(`${missing} missing value${missing === 1 ? '' : 's'} (gaps) kept as null`);
  return { series, frequency: data.frequency, notes, by: 'server' };
}
const FREQUENCIES = ['h', 'D', 'B', 'W', 'MS', 'M', 'QS', 'YS', '15min'];

/** The sentence under the form, per mode. */
const HELP = {
  forecast: 'The chart shows the history, the forecast mean and the band between the quantiles nearest 10% and 90%.',
  anomalies:
    'POST /v1/detect-anomalies: each point is compared with what was expected from the points before it; the chart shades the normal range and marks the flagged points in red.',
  impute: 'POST /v1/impute: the missing values are filled; the chart shows the filled points in orange.',
  cv: 'POST /v1/cross-validation: each model forecasts the last windows of the series from the points before them; the table ranks the models by their errors.',
};

const price = (m) => `${m.pricing.input_credits_per_1k_tokens}/${m.pricing.output_credits_per_1k_tokens} credits per 1k tokens in/out`;

function ModelSelect({ id, label, models, value, onChange, optional }) {
  return html`<div class="field">
    <label for=${id}>${label}</label>
    <select id=${id} value=${value} onChange=${(e) => onChange(e.currentTarget.value)}>
      ${optional ? html`<option value="">— none —</option>` : null}
      ${models.map(
        (m) =>
          html`<option value=${m.id} disabled=${!m.available}>
            ${m.id} — ${price(m)}${m.access === 'billing' ? ', billing only' : ''}${m.available ? '' : ' (not installed)'}
          </option>`,
      )}
    </select>
  </div>`;
}

/** The numbers behind a chart, one row per forecast step. */
function ForecastTable({ output, caption }) {
  const qs = output.quantile_predictions ?? [];
  return html`<div class="table-wrap" tabindex="0" role="region" aria-label=${caption}>
    <table>
      <caption>${caption}</caption>
      <thead><tr><th scope="col">step</th>${output.timestamps ? html`<th scope="col">time</th>` : null}<th scope="col">mean</th>${qs.map((q) => html`<th scope="col">q${q.level}</th>`)}</tr></thead>
      <tbody>
        ${output.mean.map(
          (m, i) => html`<tr>
            <td>${i + 1}</td>${output.timestamps ? html`<td>${output.timestamps[i]}</td>` : null}<td>${fmt.num(m[0])}</td>${qs.map((q) => html`<td>${fmt.num(q.values[i][0])}</td>`)}
          </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

function ResultCard({ result, series, pick }) {
  if (result.error) {
    return html`<section class="card result" aria-label=${`Result of ${result.model}`}><h3>${result.model}</h3><${ErrorBox} error=${result.error} /></section>`;
  }
  const r = result.response;
  const out = r.outputs[pick] ?? r.outputs[0];
  const s = series[pick] ?? series[0];
  return html`<section class="card result" aria-label=${`Result of ${result.model}`}>
    <h3>${result.model}</h3>
    <p class="facts">
      <span>cost: <strong data-testid="credits">${result.credits ?? '?'} credit${result.credits === 1 ? '' : 's'}</strong></span>
      <span>${fmt.int(r.usage.total_tokens)} tokens</span>
      <span>${Math.round(r.latency_ms ?? 0)} ms</span>
      ${r.truncated_from ? html`<span>input truncated from ${r.truncated_from} points</span>` : null}
    </p>
    <${FanChart} history=${s.values} output=${out} title=${`${s.id} — ${result.model}`} />
    <details><summary>Table of the ${out.mean.length} forecast steps</summary><${ForecastTable} output=${out} caption=${`Forecast of ${s.id} by ${result.model}`} /></details>
  </section>`;
}

function EnsembleCard({ ens, series, pick }) {
  const meta = ens.ensemble_metadata;
  const out = ens.ensemble_result.outputs[pick] ?? ens.ensemble_result.outputs[0];
  const s = series[pick] ?? series[0];
  return html`<section class="card" aria-label="Ensemble result">
    <h3>Ensemble of ${meta.models_in_ensemble.join(', ')}</h3>
    <p class="facts"><span>cost: <strong data-testid="credits">${meta.total_cost_credits} credits</strong></span><span>scored by ${meta.scoring_metric} on the last ${meta.selection.held_out_length} points</span></p>
    <div class="table-wrap" tabindex="0" role="region" aria-label="Ensemble weights">
      <table>
        <caption>Candidates ranked by the hold-out backtest</caption>
        <thead><tr><th scope="col">rank</th><th scope="col">model</th><th scope="col">${meta.scoring_metric}</th><th scope="col">weight</th><th scope="col">why</th></tr></thead>
        <tbody>
          ${ens.ranked_results.map(
            (r) =>
              html`<tr><td>${r.rank}</td><td>${r.model}</td><td>${fmt.num(r.score)}</td><td>${(r.weight * 100).toFixed(1)}%</td><td>${r.selection_reason}</td></tr>`,
          )}
        </tbody>
      </table>
    </div>
    <${FanChart} history=${s.values} output=${out} title=${`${s.id} — ensemble`} />
  </section>`;
}

/** Credits charged for each request id, read back from the usage history. */
async function creditsOf(requestIds) {
  const { events } = await api.get('/api/account/usage?limit=100');
  const byId = new Map(events.map((e) => [e.request_id, e.credits]));
  return requestIds.map((id) => byId.get(id) ?? null);
}

export function PlaygroundPage({ user }) {
  const [models, setModels] = useState([]);
  const [mode, setMode] = useState('forecast');
  const [text, setText] = useState(SAMPLES.forecast);
  const [csv, setCsv] = useState(null);
  const [pick, setPick] = useState(0);
  const [model, setModel] = useState('auto-ets');
  const [compare, setCompare] = useState('');
  const [horizon, setHorizon] = useState(12);
  const [frequency, setFrequency] = useState('MS');
  const [start, setStart] = useState('1949-01-01');
  const [levels, setLevels] = useState('0.1, 0.5, 0.9');
  const [results, setResults] = useState(null);
  const [ens, setEns] = useState(null);
  const [series, setSeries] = useState([]);
  const [an, setAn] = useState(anomalyDefaults);
  const [im, setIm] = useState(imputeDefaults);
  const [cv, setCv] = useState(cvDefaults);
  /** The answer of the last anomaly, imputation or cross-validation call: {mode, data}. */
  const [other, setOther] = useState(null);
  const [run, busy, error, setError] = useAction();

  useEffect(() => {
    api.get('/api/models').then((r) => setModels(r.models), setError);
  }, []);
  if (!user) return html`<h1>Playground</h1><${SignInFirst} what="The playground" />`;

  const onFile = async (e) => {
    const file = e.currentTarget.files?.[0];
    if (!file) return setCsv(null);
    try {
      const read = await readUpload(file);
      setCsv({ name: file.name, ...read });
      if (read.frequency) setFrequency(read.frequency);
      setPick(0);
      setError(null);
    } catch (err) {
      setCsv(null);
      setError(new Error(`${file.name}: ${err instanceof ApiError ? describeError(err).replace(/^Please check the form — text: /, '') : err.message}`));
    }
  };

  /** Switches mode; an untouched example series is replaced by the next mode's example. */
  const switchMode = (next) => {
    if (Object.values(SAMPLES).includes(text)) setText(SAMPLES[next]);
    setMode(next);
    setError(null);
  };

  const quantileLevels = () => (levels.trim() === '' ? [] : parseNumbers(levels, 'Quantile levels'));
  /** A new submission replaces whatever the last one showed (results and their errors alike). */
  const clearResults = () => {
    setResults(null);
    setEns(null);
    setOther(null);
  };

  /** The request's inputs and parameters from the form; throws a readable error on bad input. */
  const build = () => {
    const list = csv ? csv.series : [{ id: 'series', start: start || null, values: parseNumbers(text, 'Values') }];
    if (list.length === 0 || list.every((s) => s.values.length === 0)) throw new Error('Enter some numbers or upload a CSV');
    const quantile_levels = quantileLevels();
    return {
      list,
      inputs: list.map((s) => ({ target: s.values, ...(s.start ? { start: s.start } : {}), metadata: { item_id: s.id } })),
      parameters: { prediction_length: Number(horizon), ...(frequency ? { frequency } : {}), ...(quantile_levels.length ? { quantile_levels } : {}) },
    };
  };

  const forecast = (e) => {
    e.preventDefault();
    run(async () => {
      clearResults();
      const { list, inputs, parameters } = build();
      setSeries(list);
      const chosen = [model, ...(compare && compare !== model ? [compare] : [])];
      const settled = await Promise.allSettled(
        chosen.map((m) => request('POST', '/v1/forecast', { body: { model: m, inputs, parameters }, client: 'playground' })),
      );
      // Every model refused for the same reason (the series, a parameter): say it once, above the results.
      const reasons = new Set(settled.map((s) => (s.status === 'rejected' ? describeError(s.reason) : null)));
      if (settled[0]?.status === 'rejected' && reasons.size === 1) throw settled[0].reason;
      const ok = settled.map((s) => (s.status === 'fulfilled' ? s.value.requestId : null));
      const credits = ok.some(Boolean) ? await creditsOf(ok.filter(Boolean)) : [];
      let k = 0;
      setResults(
        settled.map((s, i) =>
          s.status === 'fulfilled' ? { model: chosen[i], response: s.value.data, credits: credits[k++] } : { model: chosen[i], error: s.reason },
        ),
      );
    });
  };

  const ensemble = () =>
    run(async () => {
      clearResults();
      const { list, inputs, parameters } = build();
      setSeries(list);
      const { data } = await request('POST', '/v1/forecast/ensemble', { body: { inputs, parameters, top_n: 3 }, client: 'playground' });
      setEns(data);
    });

  /** Anomalies, imputation or cross-validation: one call of the public API with the form's data. */
  const analyse = (m) =>
    run(async () => {
      clearResults();
      const { list, inputs } = build();
      const quantile_levels = quantileLevels();
      const [path, body] =
        m === 'anomalies'
          ? ['/v1/detect-anomalies', anomalyBody(an, inputs, frequency)]
          : m === 'impute'
            ? ['/v1/impute', imputeBody(im, inputs, frequency)]
            : ['/v1/cross-validation', cvBody(cv, inputs, frequency, quantile_levels)];
      const { data } = await request('POST', path, { body, client: 'playground' });
      setSeries(list);
      setOther({ mode: m, data });
    });

  const submit = (e) => {
    if (mode === 'forecast') return forecast(e);
    e.preventDefault();
    return analyse(mode);
  };
  const action = MODES.find((x) => x.id === mode).action;

  return html`<h1>Playground</h1>
    <p class="muted">Calls made here are recorded in your usage with the source <code>playground</code> and cost the same credits as the API.</p>
    <form class="card" onSubmit=${submit} aria-describedby="pg-help">
      <fieldset class="modes">
        <legend>What to do</legend>
        <div class="row">
          ${MODES.map(
            (m) =>
              html`<label class="field check"><input type="radio" name="mode" value=${m.id} checked=${mode === m.id} onChange=${() => switchMode(m.id)} />${m.label}</label>`,
          )}
        </div>
      </fieldset>
      <fieldset>
        <legend>Data</legend>
        <div class="field">
          <label for="values">Values (separated by spaces, commas or new lines)</label>
          <textarea id="values" rows="3" value=${text} disabled=${!!csv} onInput=${(e) => setText(e.currentTarget.value)}></textarea>
        </div>
        <div class="row">
          <div class="field"><label for="start">Start (first timestamp, optional)</label><input id="start" value=${start} disabled=${!!csv} onInput=${(e) => setStart(e.currentTarget.value)} placeholder="2024-01-01" /></div>
          <div class="field">
            <label for="csv">Or upload a CSV</label>
            <input id="csv" type="file" accept=".csv,text/csv" onChange=${onFile} aria-describedby="csv-help" />
            <small id="csv-help">One column of numbers; or a table with a time column (long format <code>unique_id,ds,y</code>, or one series per column), read by the server's ingest.</small>
          </div>
        </div>
        ${
          csv
            ? html`<p role="status">Loaded ${csv.series.length} series from ${csv.name}: ${csv.series.map((s) => `${s.id} (${s.values.length} points)`).join(', ')}${csv.frequency ? `; frequency ${csv.frequency}` : ''}${csv.notes.length ? `; ${csv.notes.join('; ')}` : ''}.
              <button type="button" class="link" onClick=${() => setCsv(null)}>Use the typed values instead</button></p>`
            : null
        }
      </fieldset>
      ${
        mode === 'forecast'
          ? html`<fieldset>
        <legend>Model</legend>
        <div class="row">
          <${ModelSelect} id="model" label="Model" models=${models} value=${model} onChange=${setModel} />
          <${ModelSelect} id="compare" label="Compare with (optional)" models=${models} value=${compare} onChange=${setCompare} optional=${true} />
        </div>
      </fieldset>`
          : null
      }
      ${mode === 'anomalies' ? html`<${AnomalyParams} p=${an} set=${setAn} models=${models} />` : null}
      ${mode === 'impute' ? html`<${ImputeParams} p=${im} set=${setIm} models=${models} />` : null}
      ${mode === 'cv' ? html`<${CvParams} p=${cv} set=${setCv} models=${models} />` : null}
      <fieldset>
        <legend>Parameters</legend>
        <div class="row">
          ${mode === 'forecast' ? html`<div class="field"><label for="horizon">Horizon (steps)</label><input id="horizon" type="number" min="1" value=${horizon} onInput=${(e) => setHorizon(e.currentTarget.value)} required /></div>` : null}
          <div class="field">
            <label for="frequency">Frequency</label>
            <input id="frequency" list="frequencies" value=${frequency} onInput=${(e) => setFrequency(e.currentTarget.value.trim())} placeholder="MS, D, h…" />
            <datalist id="frequencies">${FREQUENCIES.map((f) => html`<option value=${f}></option>`)}</datalist>
          </div>
          ${
            mode === 'forecast' || mode === 'cv'
              ? html`<div class="field"><label for="levels">Quantile levels</label><input id="levels" value=${levels} onInput=${(e) => setLevels(e.currentTarget.value)} /></div>`
              : null
          }
        </div>
      </fieldset>
      <p id="pg-help" class="muted">${HELP[mode]}</p>
      <${ErrorBox} error=${error} />
      <div class="actions">
        <button type="submit" disabled=${busy}>${action}</button>
        ${mode === 'forecast' ? html`<button type="button" class="secondary" disabled=${busy} onClick=${ensemble}>Run an ensemble</button>` : null}
        ${busy ? html`<span class="muted" role="status">Running…</span>` : null}
      </div>
    </form>
    ${
      series.length > 1 && (results || ens || other)
        ? html`<div class="field narrow"><label for="pick">Series shown</label>
          <select id="pick" value=${pick} onChange=${(e) => setPick(Number(e.currentTarget.value))}>${series.map((s, i) => html`<option value=${i}>${s.id}</option>`)}</select></div>`
        : null
    }
    ${results ? html`<div class="results grid2">${results.map((r) => html`<${ResultCard} result=${r} series=${series} pick=${pick} />`)}</div>` : null}
    ${ens ? html`<${EnsembleCard} ens=${ens} series=${series} pick=${pick} />` : null}
    ${other?.mode === 'anomalies' ? html`<${AnomalyCard} r=${other.data} series=${series} pick=${pick} />` : null}
    ${other?.mode === 'impute' ? html`<${ImputeCard} r=${other.data} series=${series} pick=${pick} />` : null}
    ${other?.mode === 'cv' ? html`<${CvCard} r=${other.data} series=${series} pick=${pick} />` : null}`;
}
