import { html } from '../html.js';
import { config } from '../ui.js';

export function HomePage({ user }) {
  return html`<h1>Forecasts from time-series models, over HTTP</h1>
    <p class="lead">
      Send a series, get back a probabilistic forecast: means, quantiles and timestamps, from built-in
      statistical models (ETS, ARIMA, Theta, MSTL…) and pretrained foundation models (TinyTimeMixer,
      Chronos-2 and others through ONNX Runtime). Self-hosted: this server runs the models itself.
    </p>
    <div class="grid2">
      <section class="card">
        <h2>Try it</h2>
        <p>The <a href="/playground">playground</a> takes pasted numbers or a CSV, draws the forecast with its
          uncertainty band, compares two models and runs an ensemble.</p>
        ${
          user
            ? html`<p>Signed in as <strong>${user.email}</strong>. <a class="button" href="/playground">Open the playground</a></p>`
            : html`<p><a class="button" href="/register">Create an account</a> or <a href="/login">sign in</a>.
              New accounts get free credits.</p>
              ${
                config.identityProviders?.length
                  ? html`<p>Or sign in with ${config.identityProviders.map(
                      (p) =>
                        html` <a class="button secondary" href=${`/api/auth/oauth/start?provider=${encodeURIComponent(p.name)}&next=/playground`}>${p.label}</a>`,
                    )}</p>`
                  : null
              }`
        }
      </section>
      <section class="card">
        <h2>Use the API</h2>
        <p>Create an <a href="/account/keys">API key</a>, then call <code>POST /v1/forecast</code>. The contract is
          at <a href="/openapi.json">/openapi.json</a>; the <a href="/models">models page</a> lists every model with its price.</p>
        <p>AI assistants connect through MCP: <a href="/account/mcp">connection instructions</a>.</p>
      </section>
    </div>`;
}
