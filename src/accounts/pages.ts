/**
 * The pages the confirmation mail opens (plain HTML, no script). Their URL carries the token, so
 * no full URL may leave in a Referer; but under `no-referrer` browsers post the form with
 * `Origin: null`, which the cross-site hook refuses (ADR 0011). `strict-origin` sends the origin
 * only (same-site form post included), never the path or query.
 */
export const PAGE_REFERRER_POLICY = 'strict-origin';

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const shell = (title: string, body: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><meta name="referrer" content="${PAGE_REFERRER_POLICY}"></head>
<body style="font-family: system-ui, sans-serif; max-width: 36rem; margin: 3rem auto; line-height: 1.5">
<h1>${esc(title)}</h1>
${body}
</body></html>`;

export function verifyPage(token: string, action: string): string {
  if (!token) return shell('Confirm your e-mail address', '<p>This link has no confirmation token. Open the link from the mail exactly as sent.</p>');
  return shell(
    'Confirm your e-mail address',
    `<p>Press the button to confirm that this address is yours.</p>
<form method="post" action="${esc(action)}">
  <input type="hidden" name="token" value="${esc(token)}">
  <button type="submit">Confirm my e-mail address</button>
</form>`,
  );
}

export function verifyResultPage(ok: boolean, message: string): string {
  return shell(ok ? 'E-mail address confirmed' : 'Confirmation failed', `<p>${esc(message)}</p>`);
}
