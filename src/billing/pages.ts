/** The local provider's built-in checkout and portal pages (plain HTML, no script). */
const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function localPage(kind: 'checkout' | 'portal', email: string, action: string): string {
  const title = kind === 'checkout' ? 'Activate metered billing' : 'Manage billing';
  const text =
    kind === 'checkout'
      ? 'When your free credits run out, further calls are billed as metered usage. This self-hosted service uses the built-in local provider: no payment details are needed and no money moves.'
      : 'Turning billing off stops metered usage: once your free credits are used up, calls answer 402 billing_required.';
  const confirm = kind === 'checkout' ? 'Activate billing' : 'Turn billing off';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: system-ui, sans-serif; max-width: 36rem; margin: 3rem auto; line-height: 1.5">
<h1>${title}</h1>
<p>Account: <strong>${esc(email)}</strong></p>
<p>${text}</p>
<form method="post" action="${esc(action)}">
  <button type="submit" name="decision" value="confirm">${confirm}</button>
  <button type="submit" name="decision" value="cancel">Cancel</button>
</form>
</body></html>`;
}

export function donePage(message: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Billing</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 36rem; margin: 3rem auto"><p>${esc(message)}</p></body></html>`;
}
