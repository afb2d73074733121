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
}

/** Headers of every page the authorization server shows: never cached, never framed. */
export const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
  'referrer-policy': 'no-referrer',
} as const;

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
<label for="password">Password</label><input id="password" name="password" type="password" autocomplete="current-password" required>`;
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
  return shell(
    'Authorize MCP access',
    `<h1>Allow <em>${esc(r.client.client_name)}</em> to use your forecasting account?</h1>
<p>It will be able to run forecasts (which use your credits), list models and read your usage and billing summary through the MCP endpoint <code>${esc(r.resource)}</code>. You will be sent back to <code>${esc(redirectHost)}</code>.</p>
${p.error ? `<p class="err" role="alert">${esc(p.error)}</p>` : ''}
<form method="post" action="${esc(p.action)}">${fields}${who}
<div class="row"><button type="submit" name="action" value="approve">Allow</button><button type="submit" name="action" value="deny" formnovalidate>Deny</button></div></form>${others}`,
  );
}

/** An authorization request that cannot be sent back to the client (unknown client, bad redirect URI). */
export function errorPage(error: string, description: string): string {
  return shell('Authorization error', `<h1>This authorization request cannot be completed</h1><p class="err">${esc(error)}: ${esc(description)}</p>`);
}
