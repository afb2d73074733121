import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { DailyBars } from '../chart.js';
import { html } from '../html.js';
import { config, CopyButton, ErrorBox, fmt, Notice, SignInFirst, useAction } from '../ui.js';

/** Loads `path` once (and again when `version` changes): [data, error]. */
function useLoad(path, version = 0) {
  const [state, setState] = useState([null, null]);
  useEffect(() => {
    api.get(path).then(
      (d) => setState([d, null]),
      (e) => setState([null, e]),
    );
  }, [path, version]);
  return state;
}

const DEFAULT_SCOPES = ['forecast', 'usage:read', 'billing:read'];

/** A key's scopes beyond the default and its limits, in a few words (docs/keys.md). */
function keyLimits(k) {
  const parts = [];
  const extra = (k.scopes ?? []).filter((s) => !DEFAULT_SCOPES.includes(s));
  const missing = DEFAULT_SCOPES.filter((s) => k.scopes && !k.scopes.includes(s));
  if (extra.length > 0) parts.push(`+${extra.join(' +')}`);
  if (missing.length > 0) parts.push(`no ${missing.join(', ')}`);
  if (k.monthly_credit_limit != null) parts.push(`≤ ${fmt.int(k.monthly_credit_limit)} credits/month`);
  if (k.rate_limit_per_minute != null) parts.push(`${fmt.int(k.rate_limit_per_minute)}/min`);
  if (k.allowed_models) parts.push(`models: ${k.allowed_models.join(', ')}`);
  if (k.expires_at) parts.push(`expires ${fmt.date(k.expires_at)}`);
  return parts.length > 0 ? parts.join('; ') : '—';
}

function KeysSection() {
  const [version, setVersion] = useState(0);
  const [list, loadError] = useLoad('/api/account/keys', version);
  const [created, setCreated] = useState(null);
  const [run, busy, error] = useAction();
  const create = (e) => {
    e.preventDefault();
    const form = e.currentTarget;
    const label = new FormData(form).get('label');
    run(async () => {
      setCreated(await api.post('/api/account/keys', { label }));
      form.reset();
      setVersion((v) => v + 1);
    });
  };
  const revoke = (k) => {
    if (!confirm(`Revoke the key "${k.label}"? Programs using it will stop working.`)) return;
    run(async () => {
      await api.del(`/api/account/keys/${encodeURIComponent(k.id)}`);
      setVersion((v) => v + 1);
    });
  };
  return html`<h2>API keys</h2>
    <form class="card row" onSubmit=${create}>
      <div class="field"><label for="key-label">Label of a new key</label><input id="key-label" name="label" required maxlength="100" placeholder="laptop" /></div>
      <div class="field"><button type="submit" disabled=${busy}>Create a key</button></div>
    </form>
    ${
      created
        ? html`<section class="card secret" aria-labelledby="secret-title">
          <h3 id="secret-title">Your new key "${created.label}"</h3>
          <p>Copy it now: it is shown this once and cannot be shown again.</p>
          <p><code class="mono" data-testid="secret">${created.key}</code></p>
          <${CopyButton} text=${created.key} label="Copy the key" />
        </section>`
        : null
    }
    <${ErrorBox} error=${error ?? loadError} />
    <div class="table-wrap" tabindex="0" role="region" aria-label="API keys">
      <table>
        <caption>${list ? `${list.keys.length} key${list.keys.length === 1 ? '' : 's'}` : 'Loading…'}</caption>
        <thead><tr><th scope="col">label</th><th scope="col">key</th><th scope="col">created</th><th scope="col">last used</th><th scope="col">credits this month</th><th scope="col">limits</th><th scope="col"><span class="sr-only">action</span></th></tr></thead>
        <tbody>${(list?.keys ?? []).map(
          (k) => html`<tr><td>${k.label}</td><td class="mono">${k.prefix}…</td><td>${fmt.date(k.created_at)}</td><td>${fmt.date(k.last_used_at)}</td>
            <td>${fmt.int(k.spend_this_month ?? 0)}</td><td>${keyLimits(k)}</td>
            <td><button type="button" class="danger" onClick=${() => revoke(k)} aria-label=${`Revoke ${k.label}`}>Revoke</button></td></tr>`,
        )}</tbody>
      </table>
    </div>`;
}

const MEASURES = (row) =>
  html`<td>${fmt.int(row.requests)}</td><td>${fmt.int(row.total_tokens)}</td><td>${fmt.int(row.credits)}</td><td>${fmt.usd(row.cost_nano_usd)}</td>`;
const MEASURE_HEAD = html`<th scope="col">requests</th><th scope="col">tokens</th><th scope="col">credits</th><th scope="col">cost</th>`;

/** One row per UTC day of the window (days without calls count zero), so the bars keep their dates. */
function everyDay(sum) {
  const byDate = new Map(sum.daily.map((d) => [d.date, d]));
  const out = [];
  const day = 86_400_000;
  const end = Date.parse(sum.end);
  for (let t = Math.floor(Date.parse(sum.start) / day) * day; t < end; t += day) {
    const date = new Date(t).toISOString().slice(0, 10);
    out.push(byDate.get(date) ?? { date, credits: 0, requests: 0 });
  }
  return out;
}

function UsageSection() {
  const [version, setVersion] = useState(0);
  const [sum, loadError] = useLoad('/api/account/usage/summary', version);
  const [run, busy, error] = useAction();
  const [done, setDone] = useState('');
  const wipe = () => {
    if (!confirm('Delete your whole usage history? Credits already used are not given back.')) return;
    run(async () => {
      const r = await api.del('/api/account/usage');
      setDone(`Deleted ${r.deleted} usage events.`);
      setVersion((v) => v + 1);
    });
  };
  const table = (caption, key, rows) => html`<div class="table-wrap" tabindex="0" role="region" aria-label=${caption}><table>
      <caption>${caption}</caption>
      <thead><tr><th scope="col">${key}</th>${MEASURE_HEAD}</tr></thead>
      <tbody>${rows.map((r) => html`<tr><th scope="row">${r[key]}</th>${MEASURES(r)}</tr>`)}</tbody>
    </table></div>`;
  return html`<h2>Usage</h2>
    <${ErrorBox} error=${error ?? loadError} />
    ${
      sum
        ? html`<p class="facts"><span>${fmt.date(sum.start)} – ${fmt.date(sum.end)}</span><span><strong>${fmt.int(sum.totals.requests)}</strong> requests</span>
            <span><strong>${fmt.int(sum.totals.credits)}</strong> credits</span><span>${fmt.usd(sum.totals.cost_nano_usd)}</span></p>
          <${DailyBars} days=${everyDay(sum)} measure="credits" label="Credits" />
          <div class="grid2">${table('By model', 'model', sum.by_model)} ${table('By source', 'source', sum.by_source)}</div>
          <h3>Recent calls</h3>
          <div class="table-wrap" tabindex="0" role="region" aria-label="Recent calls"><table>
            <caption>Newest first</caption>
            <thead><tr><th scope="col">when</th><th scope="col">model</th><th scope="col">source</th><th scope="col">credential</th><th scope="col">tokens</th><th scope="col">credits</th><th scope="col">latency</th></tr></thead>
            <tbody>${sum.recent.map(
              (e) =>
                html`<tr><td>${fmt.date(e.created_at)}</td><td>${e.model}</td><td>${e.source}</td><td>${e.credential_kind}</td><td>${fmt.int(e.total_tokens)}</td><td>${fmt.int(e.credits)}</td><td>${Math.round(e.latency_ms)} ms</td></tr>`,
            )}</tbody>
          </table></div>
          <p><button type="button" class="danger" disabled=${busy} onClick=${wipe}>Delete my usage history</button></p>
          <${Notice} text=${done} />`
        : html`<p class="muted">Loading…</p>`
    }`;
}

function BillingSection() {
  const [sum, e1] = useLoad('/api/account/billing');
  const [profile, e2] = useLoad('/api/account/billing/payments');
  const [run, busy, error] = useAction();
  const open = (action) =>
    run(async () => {
      const back = `${location.origin}/account/billing`;
      const s = await api.post('/api/account/billing/payments', { action, success_url: back, cancel_url: back, return_url: back });
      location.href = s.url;
    });
  return html`<h2>Billing</h2>
    <${ErrorBox} error=${error ?? e1 ?? e2} />
    ${
      sum
        ? html`<div class="grid2">
          <section class="card">
            <h3>Free credits</h3>
            <p class="big">${fmt.int(sum.free_credits.remaining)}</p>
            <p class="muted">left of ${fmt.int(sum.free_credits.granted)} granted (${fmt.int(sum.free_credits.used)} used)</p>
          </section>
          <section class="card">
            <h3>Metered billing: ${sum.billing_active ? 'active' : 'off'}</h3>
            <p>${
              sum.billing_active
                ? 'When free credits run out, calls are billed as metered usage.'
                : 'When free credits run out, calls answer 402 billing_required until billing is turned on.'
            }</p>
            <p class="muted">This period (${fmt.date(sum.metered.period_start)} – ${fmt.date(sum.metered.period_end)}): ${fmt.int(sum.metered.credits)} credits, ${fmt.usd(sum.metered.cost_nano_usd)}.
              One credit costs ${fmt.usd(sum.credit_price_nano_usd)}. Provider: ${sum.provider}. Rate limit: ${fmt.int(sum.rate_limit.requests_per_minute)} requests per minute.</p>
            ${sum.provider === 'none' ? html`<p class="muted">Payments are not set up on this server (PAYMENTS_PROVIDER).</p>` : null}
            ${profile?.available_actions.map(
              (a) => html`<button type="button" disabled=${busy} onClick=${() => open(a)}>${a === 'checkout' ? 'Turn billing on' : 'Manage billing'}</button> `,
            )}
          </section>
        </div>`
        : html`<p class="muted">Loading…</p>`
    }`;
}

function PrivacyCard() {
  const [p, loadError] = useLoad('/api/account/privacy');
  const [value, setValue] = useState(null);
  const [run, busy, error] = useAction();
  const on = value ?? p?.service_improvement_opt_in ?? false;
  const toggle = (e) => {
    const want = e.currentTarget.checked;
    run(async () => setValue((await api.patch('/api/account/privacy', { service_improvement_opt_in: want })).service_improvement_opt_in));
  };
  return html`<section class="card">
    <h3>Privacy</h3>
    <div class="field check"><input id="opt-in" type="checkbox" checked=${on} disabled=${busy || !p} onChange=${toggle} /><label for="opt-in">Let my requests help improve the service</label></div>
    <${ErrorBox} error=${error ?? loadError} />
  </section>`;
}

function IdentitiesCard() {
  const [version, setVersion] = useState(0);
  const [data, loadError] = useLoad('/api/account/oauth/identities', version);
  const [run, busy, error] = useAction();
  const unlink = (provider) =>
    run(async () => {
      await api.del(`/api/account/oauth/identities/${encodeURIComponent(provider)}`);
      setVersion((v) => v + 1);
    });
  const linked = new Set((data?.identities ?? []).map((i) => i.provider));
  return html`<section class="card">
    <h3>Linked sign-in providers</h3>
    <${ErrorBox} error=${error ?? loadError} />
    ${data && data.identities.length === 0 ? html`<p class="muted">None linked.</p>` : null}
    <ul>${(data?.identities ?? []).map(
      (i) =>
        html`<li>${i.provider} (${i.email ?? 'no e-mail'}) <button type="button" disabled=${busy} onClick=${() => unlink(i.provider)}>Unlink</button></li>`,
    )}</ul>
    ${(data?.providers ?? [])
      .filter((p) => !linked.has(p.name))
      .map(
        (p) =>
          html`<a class="button secondary" href=${`/api/auth/oauth/start?provider=${encodeURIComponent(p.name)}&next=/account/settings`}>Link ${p.label}</a> `,
      )}
  </section>`;
}

function DeleteCard({ user }) {
  const [run, busy, error] = useAction();
  const [typed, setTyped] = useState('');
  const remove = (e) => {
    e.preventDefault();
    run(async () => {
      await api.del('/api/account/me');
      location.href = '/';
    });
  };
  return html`<form class="card danger-zone" onSubmit=${remove}>
    <h3>Delete the account</h3>
    <p>This removes the account, its keys, usage and billing state at once. It cannot be undone.</p>
    <div class="field"><label for="confirm-email">Type your e-mail (${user.email}) to confirm</label><input id="confirm-email" value=${typed} onInput=${(e) => setTyped(e.currentTarget.value)} autocomplete="off" /></div>
    <${ErrorBox} error=${error} />
    <button type="submit" class="danger" disabled=${busy || typed.trim().toLowerCase() !== user.email.toLowerCase()}>Delete my account</button>
  </form>`;
}

function SettingsSection({ user }) {
  return html`<h2>Settings</h2>
    <div class="grid2"><${PrivacyCard} /><${IdentitiesCard} /></div>
    <${DeleteCard} user=${user} />`;
}

function McpSection() {
  const url = `${config.publicBaseUrl ?? location.origin}/mcp`;
  const claude = `claude mcp add --transport http tsfm ${url}`;
  const json = JSON.stringify({ mcpServers: { tsfm: { url, headers: { Authorization: 'Bearer tsfm_…' } } } }, null, 2);
  return html`<h2>Connect an AI assistant (MCP)</h2>
    <section class="card">
      <p>The server URL is</p>
      <p><code class="mono" data-testid="mcp-url">${url}</code> <${CopyButton} text=${url} label="Copy the URL" /></p>
      <p>Clients that speak OAuth need only this URL: they register, open the sign-in and consent page, and get a token. For example Claude Code:</p>
      <pre><code>${claude}</code></pre>
      <${CopyButton} text=${claude} label="Copy the command" />
      <p>Or skip OAuth with an <a href="/account/keys">API key</a>:</p>
      <pre><code>${json}</code></pre>
      <p class="muted">Tools: forecast, forecastBatch, forecastEnsemble, listModels, getModelById, getUsageSummary, getBillingSummary, validateCredential. Their usage is recorded with the source <code>mcp</code>.</p>
    </section>`;
}

const SECTIONS = [
  ['keys', 'API keys', KeysSection],
  ['usage', 'Usage', UsageSection],
  ['billing', 'Billing', BillingSection],
  ['settings', 'Settings', SettingsSection],
  ['mcp', 'MCP', McpSection],
];

export function AccountPage({ user, path }) {
  if (!user) return html`<h1>Account</h1><${SignInFirst} sentence="Sign in to see your API keys, usage and billing." />`;
  const key = path.split('/')[2] ?? 'keys';
  const [, , Section] = SECTIONS.find(([k]) => k === key) ?? SECTIONS[0];
  return html`<h1>Account</h1>
    <nav aria-label="Account" class="tabs"><ul>
      ${SECTIONS.map(([k, label]) => html`<li><a href=${`/account/${k}`} aria-current=${k === key ? 'page' : undefined}>${label}</a></li>`)}
    </ul></nav>
    <${Section} user=${user} />`;
}
