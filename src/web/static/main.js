// The browser app: one shell page, a page component per path, plain links between pages.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';
import { html } from './html.js';
import { AccountPage } from './pages/account.js';
import { AdminPage } from './pages/admin.js';
import { ForgotPage, LoginPage, RegisterPage, ResetPage } from './pages/auth.js';
import { HomePage } from './pages/home.js';
import { ModelsPage } from './pages/models.js';
import { PlaygroundPage } from './pages/playground.js';
import { config, ErrorBox, Notice, useAction } from './ui.js';

const PAGES = {
  '/': ['Home', HomePage],
  '/login': ['Sign in', LoginPage],
  '/register': ['Create an account', RegisterPage],
  '/forgot-password': ['Forgot password', ForgotPage],
  '/reset-password': ['Choose a new password', ResetPage],
  '/playground': ['Playground', PlaygroundPage],
  '/models': ['Models', ModelsPage],
  '/admin': ['Administration', AdminPage],
};

function pageFor(path) {
  if (path === '/account' || path.startsWith('/account/')) return ['Account', AccountPage];
  return PAGES[path] ?? ['Not found', () => html`<p>No page here. <a href="/">Go home</a>.</p>`];
}

function Nav({ user, path }) {
  const link = (href, text) =>
    html`<li><a href=${href} aria-current=${path === href || (href !== '/' && path.startsWith(`${href}/`)) ? 'page' : undefined}>${text}</a></li>`;
  const signOut = async () => {
    try {
      await api.post('/api/auth/logout');
    } finally {
      location.href = '/';
    }
  };
  return html`<header class="top">
    <a class="brand" href="/">TSFM</a>
    <nav aria-label="Main">
      <ul>
        ${link('/playground', 'Playground')} ${link('/models', 'Models')}
        ${user ? link('/account', 'Account') : null} ${user?.role === 'admin' ? link('/admin', 'Admin') : null}
      </ul>
    </nav>
    <div class="who">
      ${
        user
          ? html`<span class="muted">${user.email}</span> <button type="button" onClick=${signOut}>Sign out</button>`
          : html`<a href="/login">Sign in</a> <a class="button" href="/register">Create an account</a>`
      }
    </div>
  </header>`;
}

/** Shown while the account's e-mail is not confirmed (free credits wait for it). */
function VerifyBanner({ user }) {
  const [run, busy, error] = useAction();
  const [sent, setSent] = useState('');
  if (user?.email_verified !== false) return null;
  const resend = () => run(async () => setSent((await api.post('/api/auth/verify-email/resend')).message));
  return html`<div class="banner" role="region" aria-label="E-mail confirmation">
    <p>Confirm your e-mail address: open the link we sent to <strong>${user.email}</strong>. Your free credits are granted once it is confirmed.
      <button type="button" class="secondary" disabled=${busy} onClick=${resend}>Send a new link</button></p>
    <${Notice} text=${sent} /><${ErrorBox} error=${error} />
  </div>`;
}

function App() {
  const path = location.pathname.replace(/\/+$/, '') || '/';
  const [user, setUser] = useState(undefined);
  useEffect(() => {
    // Without a session cookie (the server says so in the config) there is nobody to ask about.
    if (config.session === false) setUser(null);
    else api.get('/api/account/me').then(setUser, () => setUser(null));
  }, []);
  const [title, Page] = pageFor(path);
  useEffect(() => {
    document.title = `${title} — TSFM`;
  }, [title]);
  return html`<a class="skip" href="#main">Skip to content</a>
    <${Nav} user=${user} path=${path} />
    <${VerifyBanner} user=${user} />
    <main id="main" tabindex="-1">
      ${user === undefined ? html`<p class="muted" aria-busy="true">Loading…</p>` : html`<${Page} user=${user} path=${path} />`}
    </main>
    <footer><a href="/openapi.json">OpenAPI</a> · <a href="/api/system/status">Status</a> · <a href="/account/mcp">MCP</a></footer>`;
}

render(html`<${App} />`, document.getElementById('app'));
