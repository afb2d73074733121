import type { AuthorizationRequest } from './grants.ts';

const esc = (s: string): string => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

export interface ConsentPageInput {
  req: AuthorizationRequest;
  action: string;
  /** The signed-in account when a browser session exists: sign-in is skipped. */
  signedInAs: string | null;
  error: string | null;
  email: string;
  /** Identity providers offered as another way to sign in (label, start URL). */
  providers: { label: string; href: string }[];
  /** The captcha widget to render in the sign-in form (when CAPTCHA_VERIFIER and CAPTCHA_SITE_KEY are set). */
  captcha: { kind: 'hcaptcha' | 'turnstile'; siteKey: string } | null;
}

const CAPTCHA_WIDGET = {
  hcaptcha: { script: 'https://js.hcaptcha.com/1/api.js', className: 'h-captcha', origins: 'https://hcaptcha.com https://*.hcaptcha.com' },
  turnstile: { script: 'https://challenges.cloudflare.com/turnstile/v0/api.js', className: 'cf-turnstile', origins: 'https://challenges.cloudflare.com' },
} as const;

/**
 * Headers of every page the authorization server shows: never cached, never framed. The referrer
 * policy is `same-origin` so that the browser sends this site's `Origin` with the consent form
 * (under `no-referrer` it would send `Origin: null`, which the form refuses). The captcha
 * provider's script and frame are allowed only when a captcha is configured.
 */
export function pageHeaders(captcha: { kind: 'off' | 'hcaptcha' | 'turnstile' }): Record<string, string> {
  const widget = captcha.kind === 'off' ? null : CAPTCHA_WIDGET[captcha.kind];
  const csp = widget
    ? `default-src 'none'; style-src 'unsafe-inline' ${widget.origins}; script-src ${widget.origins}; frame-src ${widget.origins}; connect-src ${widget.origins}; frame-ancestors 'none'; base-uri 'none'; form-action 'self'`
    : "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";
  return {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'x-frame-options': 'DENY',
    'content-security-policy': csp,
    'referrer-policy': 'same-origin',
  };
}

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem;color:#1a1a1a}
h1{font-size:1.3rem}label{display:block;margin:.6rem 0 .2rem}input[type=email],input[type=password]{width:100%;padding:.45rem;box-sizing:border-box}
.row{display:flex;gap:.6rem;margin-top:1.2rem}button{padding:.5rem 1rem;font-size:1rem;cursor:pointer}
.err{background:#fde8e8;border:1px solid #f5b5b5;padding:.5rem .7rem;border-radius:4px}.muted{color:#555;font-size:.9rem}`;

function shell(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>`;
}

/** Sign-in (when needed) and consent for an MCP client; posts the spec's authorize form. */
export function consentPage(p: ConsentPageInput): string {
  const r = p.req;
  const hidden: [string, string][] = [
    ['client_id', r.client.id],
    ['redirect_uri', r.redirectUri],
    ['code_challenge', r.codeChallenge],
    ['code_challenge_method', 'S256'],
    ['scope', r.scope],
    ['state', r.state],
    ['resource', r.resource],
  ];
  const fields = hidden.map(([k, v]) => `<input type="hidden" name="${k}" value="${esc(v)}">`).join('');
  const who = p.signedInAs
    ? `<p>Signed in as <strong>${esc(p.signedInAs)}</strong>.</p>`
    : `<label for="email">E-mail</label><input id="email" name="email" type="email" autocomplete="username" required value="${esc(p.email)}">
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>${
        p.captcha ? `<div class="${CAPTCHA_WIDGET[p.captcha.kind].className}" data-sitekey="${esc(p.captcha.siteKey)}"></div>` : ''
      }`;
  const others =
    !p.signedInAs && p.providers.length > 0
      ? `<p class="muted">Or sign in with ${p.providers.map((x) => `<a href="${esc(x.href)}">${esc(x.label)}</a>`).join(' · ')}, then come back here.</p>`
      : '';
  let redirectHost = r.redirectUri;
  try {
    redirectHost = new URL(r.redirectUri).host || r.redirectUri;
  } catch {
    /* shown as is */
  }
  const script = p.captcha && !p.signedInAs ? `<script src="${CAPTCHA_WIDGET[p.captcha.kind].script}" async defer></script>` : '';
  return shell(
    'Authorize MCP access',
    `<h1>Allow ${r.client.client_name ? `<em>${esc(r.client.client_name)}</em>` : `an application at <em>${esc(redirectHost)}</em>`} to use your forecasting account?</h1>
<p>It will be able to run forecasts (which use your credits), list models and read your usage and billing summary through the MCP endpoint <code>${esc(r.resource)}</code>. You will be sent back to <code>${esc(redirectHost)}</code>.</p>
${p.error ? `<p class="err" role="alert">${esc(p.error)}</p>` : ''}
<form method="post" action="${esc(p.action)}">${fields}${who}
<div class="row"><button type="submit" name="action" value="approve">Allow</button><button type="submit" name="action" value="deny" formnovalidate>Deny</button></div></form>${others}${script}`,
  );
}

/**
 * An authorization request that failed. With `returnTo` (a known client's registered redirect URI
 * carrying `error=…`), the user may follow a link back to the application; the server never
 * redirects there by itself (RFC 9700 §4.11.2).
 */
export function errorPage(error: string, description: string, returnTo?: string): string {
  let back = '';
  if (returnTo) {
    const host = URL.parse(returnTo)?.host || returnTo.split('?')[0] || returnTo;
    back = `<p>You can go back to the application at <code>${esc(host)}</code>, which will be told about this error.</p>
<p><a href="${esc(returnTo)}" rel="noreferrer">Return to the application</a></p>`;
  }
  return shell('Authorization error', `<h1>This authorization request cannot be completed</h1><p class="err">${esc(error)}: ${esc(description)}</p>${back}`);
}
