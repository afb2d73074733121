import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { html } from '../html.js';
import { CopyButton, ErrorBox } from '../ui.js';

export function ModelsPage() {
  const [models, setModels] = useState(null);
  const [error, setError] = useState(null);
  const [q, setQ] = useState('');
  const [kind, setKind] = useState('');
  const [onlyAvailable, setOnlyAvailable] = useState(false);

  useEffect(() => {
    const params = new URLSearchParams();
    if (q.trim()) params.set('q', q.trim());
    if (onlyAvailable) params.set('available', 'true');
    api.get(`/api/models?${params}`).then((r) => {
      setModels(r.models);
      setError(null);
    }, setError);
  }, [q, onlyAvailable]);

  const shown = (models ?? []).filter((m) => !kind || m.kind === kind);
  return html`<h1>Models</h1>
    <form class="card row filters" role="search" onSubmit=${(e) => e.preventDefault()}>
      <div class="field"><label for="q">Search</label><input id="q" type="search" value=${q} onInput=${(e) => setQ(e.currentTarget.value)} placeholder="ets, chronos…" /></div>
      <div class="field">
        <label for="kind">Kind</label>
        <select id="kind" value=${kind} onChange=${(e) => setKind(e.currentTarget.value)}>
          <option value="">all</option><option value="statistical">statistical</option><option value="neural">neural</option>
        </select>
      </div>
      <div class="field check"><input id="avail" type="checkbox" checked=${onlyAvailable} onChange=${(e) => setOnlyAvailable(e.currentTarget.checked)} /><label for="avail">Installed only</label></div>
    </form>
    <${ErrorBox} error=${error} />
    <p role="status" class="muted">${models ? `${shown.length} model${shown.length === 1 ? '' : 's'}` : 'Loading…'}</p>
    <div class="table-wrap" tabindex="0" role="region" aria-label="Model catalog">
      <table>
        <caption>Prices are credits per 1000 tokens; latency is the measured average on this server.</caption>
        <thead><tr><th scope="col">model</th><th scope="col">kind</th><th scope="col">price in / out</th><th scope="col">latency</th><th scope="col">context</th><th scope="col">access</th><th scope="col">availability</th></tr></thead>
        <tbody>
          ${shown.map(
            (m) => html`<tr>
              <th scope="row"><span class="mono">${m.id}</span><br /><small class="muted">${m.description}</small></th>
              <td>${m.kind}</td>
              <td>${m.pricing.input_credits_per_1k_tokens} / ${m.pricing.output_credits_per_1k_tokens}</td>
              <td>${m.latency_samples > 0 ? `${Math.round(m.avg_latency_ms)} ms` : '—'}</td>
              <td>${m.min_points}–${m.max_context_length}</td>
              <td>${m.access === 'billing' ? 'billing only' : 'everyone'}</td>
              <td>${
                m.available
                  ? html`<span class="ok">installed</span>`
                  : html`<span class="warn">not installed</span>${m.pull_command ? html`<br /><code>${m.pull_command}</code> <${CopyButton} text=${m.pull_command} />` : null}`
              }</td>
            </tr>`,
          )}
        </tbody>
      </table>
    </div>`;
}
