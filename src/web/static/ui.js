// Small building blocks shared by the pages.
import { useState } from 'preact/hooks';
import { describeError } from './api.js';
import { html } from './html.js';

export const config = JSON.parse(document.getElementById('tsfm-config')?.textContent ?? '{}');

/** An error from the API, announced to screen readers. */
export function ErrorBox({ error }) {
  if (!error) return null;
  return html`<p class="error" role="alert">${describeError(error)}</p>`;
}

/** A success message, announced politely. */
export function Notice({ text }) {
  return html`<p class="notice" role="status" aria-live="polite">${text ?? ''}</p>`;
}

/** Runs an async action with busy and error state: const [run, busy, error] = useAction(). */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const run = async (fn) => {
    setBusy(true);
    setError(null);
    try {
      return await fn();
    } catch (err) {
      setError(err);
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  return [run, busy, error, setError];
}

export const fmt = {
  int: (n) => Number(n).toLocaleString('en-US'),
  num: (n) => (Math.abs(n) >= 1000 ? n.toFixed(1) : Number(n.toPrecision(4)).toString()),
  date: (s) => (s ? `${new Date(s).toISOString().replace('T', ' ').slice(0, 16)} UTC` : '—'),
  usd: (nano) => `$${(Number(nano) / 1e9).toFixed(4)}`,
};

/** The same page for a visitor who is not signed in: `what` needs an account, or a whole `sentence`. */
export function SignInFirst({ what, sentence }) {
  const next = encodeURIComponent(location.pathname + location.search);
  return html`<section class="card">
    <p>${sentence ?? `${what} needs an account.`}</p>
    <p><a class="button" href=${`/login?next=${next}`}>Sign in</a> or <a href=${`/register?next=${next}`}>create an account</a>.</p>
  </section>`;
}

/** Copies text to the clipboard; says so next to the button. */
export function CopyButton({ text, label = 'Copy' }) {
  const [done, setDone] = useState('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setDone('Copied');
    } catch {
      setDone('Select the text and copy it by hand');
    }
  };
  return html`<button type="button" onClick=${copy}>${label}</button> <span role="status" class="muted">${done}</span>`;
}
