import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { html } from '../html.js';
import { config, ErrorBox, Notice, useAction } from '../ui.js';

/** Only a path on this site is followed after sign-in (never another origin). */
function nextPath() {
  const n = new URLSearchParams(location.search).get('next');
  return n?.startsWith('/') && !n.startsWith('//') && !n.startsWith('/\\') ? n : '/account/keys';
}

const OAUTH_ERRORS = {
  email_not_verified: 'The provider did not confirm an e-mail address for this account.',
  identity_in_use: 'This provider account is already linked to another account.',
  access_denied: 'The sign-in was cancelled at the provider.',
  invalid_state: 'The sign-in expired or was already used: start again.',
  state_mismatch: 'This sign-in was not started in this browser: start again.',
};

function Providers() {
  if (!config.identityProviders?.length) return null;
  const next = encodeURIComponent(nextPath());
  return html`<div class="providers">
    <p>Or continue with</p>
    ${config.identityProviders.map(
      (p) => html`<a class="button secondary" href=${`/api/auth/oauth/start?provider=${encodeURIComponent(p.name)}&next=${next}`}>${p.label}</a> `,
    )}
  </div>`;
}

function field(id, label, props) {
  return html`<div class="field"><label for=${id}>${label}</label><input id=${id} name=${id} ...${props} /></div>`;
}

export function LoginPage({ user }) {
  const [run, busy, error] = useAction();
  const oauthError = new URLSearchParams(location.search).get('oauth_error');
  const submit = (e) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    run(async () => {
      await api.post('/api/auth/login', { email: f.get('email'), password: f.get('password') });
      location.href = nextPath();
    });
  };
  return html`<h1>Sign in</h1>
    ${user ? html`<p>You are signed in as ${user.email}. <a href=${nextPath()}>Continue</a></p>` : null}
    ${oauthError ? html`<p class="error" role="alert">${OAUTH_ERRORS[oauthError] ?? 'The sign-in with the provider failed.'} (${oauthError})</p>` : null}
    <form class="card narrow" onSubmit=${submit}>
      ${field('email', 'E-mail', { type: 'email', required: true, autocomplete: 'email' })}
      ${field('password', 'Password', { type: 'password', required: true, minlength: 8, autocomplete: 'current-password' })}
      <${ErrorBox} error=${error} />
      <button type="submit" disabled=${busy}>Sign in</button>
      <p><a href="/forgot-password">Forgot your password?</a> · <a href=${`/register${location.search}`}>Create an account</a></p>
      <${Providers} />
    </form>`;
}

export function RegisterPage() {
  const [run, busy, error] = useAction();
  const submit = (e) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const ref = new URLSearchParams(location.search).get('ref');
    run(async () => {
      await api.post('/api/auth/register', {
        email: f.get('email'),
        password: f.get('password'),
        name: f.get('name') || null,
        ...(ref ? { ref } : {}),
        accepted_free_tier_data_terms: f.get('terms') === 'on',
      });
      location.href = new URLSearchParams(location.search).get('next') ? nextPath() : '/playground';
    });
  };
  return html`<h1>Create an account</h1>
    <form class="card narrow" onSubmit=${submit}>
      ${field('name', 'Name (optional)', { autocomplete: 'name', maxlength: 200 })}
      ${field('email', 'E-mail', { type: 'email', required: true, autocomplete: 'email' })}
      ${field('password', 'Password (at least 8 characters)', { type: 'password', required: true, minlength: 8, autocomplete: 'new-password' })}
      <div class="field check"><input type="checkbox" id="terms" name="terms" /><label for="terms">I accept the free tier's data terms</label></div>
      <${ErrorBox} error=${error} />
      <button type="submit" disabled=${busy}>Create the account</button>
      <p>Already registered? <a href=${`/login${location.search}`}>Sign in</a></p>
      <${Providers} />
    </form>`;
}

export function ForgotPage() {
  const [run, busy, error] = useAction();
  const [done, setDone] = useState('');
  const submit = (e) => {
    e.preventDefault();
    const email = new FormData(e.currentTarget).get('email');
    run(async () => setDone((await api.post('/api/auth/forgot-password', { email })).message));
  };
  return html`<h1>Forgot your password?</h1>
    <form class="card narrow" onSubmit=${submit}>
      ${field('email', 'E-mail', { type: 'email', required: true, autocomplete: 'email' })}
      <${ErrorBox} error=${error} />
      <button type="submit" disabled=${busy}>Send a reset link</button>
      <${Notice} text=${done} />
    </form>`;
}

export function ResetPage() {
  const [run, busy, error] = useAction();
  const [done, setDone] = useState('');
  const token = new URLSearchParams(location.search).get('token') ?? '';
  const submit = (e) => {
    e.preventDefault();
    const password = new FormData(e.currentTarget).get('password');
    run(async () => setDone((await api.post('/api/auth/reset-password', { token, password })).message));
  };
  return html`<h1>Choose a new password</h1>
    <form class="card narrow" onSubmit=${submit}>
      ${field('password', 'New password (at least 8 characters)', { type: 'password', required: true, minlength: 8, autocomplete: 'new-password' })}
      <${ErrorBox} error=${error} />
      <button type="submit" disabled=${busy || !token}>Change the password</button>
      ${token ? null : html`<p class="error" role="alert">This page needs the link from the e-mail.</p>`}
      ${done ? html`<${Notice} text=${done} /><p><a href="/login">Sign in</a></p>` : null}
    </form>`;
}
