import { useEffect, useState } from 'preact/hooks';
import { api } from '../api.js';
import { html } from '../html.js';
import { ErrorBox, fmt, Notice, SignInFirst, useAction } from '../ui.js';

function AccountSearch({ onPick }) {
  const [run, busy, error] = useAction();
  const [found, setFound] = useState(null);
  const submit = (e) => {
    e.preventDefault();
    const q = new FormData(e.currentTarget).get('q');
    run(async () => setFound((await api.get(`/api/admin/users?q=${encodeURIComponent(q)}`)).accounts));
  };
  return html`<section class="card">
    <h2>Find an account</h2>
    <form class="row" role="search" onSubmit=${submit}>
      <div class="field"><label for="admin-q">E-mail or account id</label><input id="admin-q" name="q" required /></div>
      <div class="field"><button type="submit" disabled=${busy}>Search</button></div>
    </form>
    <${ErrorBox} error=${error} />
    ${
      found
        ? found.length === 0
          ? html`<p role="status">No account matches.</p>`
          : html`<div class="table-wrap"><table>
            <caption>${found.length} account${found.length === 1 ? '' : 's'}</caption>
            <thead><tr><th scope="col">e-mail</th><th scope="col">id</th><th scope="col">role</th><th scope="col">credits</th><th scope="col">billing</th><th scope="col"><span class="sr-only">action</span></th></tr></thead>
            <tbody>${found.map(
              (
                a,
              ) => html`<tr><td>${a.email}</td><td class="mono">${a.id}</td><td>${a.role}</td><td>${fmt.int(a.balance)}</td><td>${a.billing_active ? 'active' : 'off'}</td>
                <td><button type="button" onClick=${() => onPick(a)}>Select</button></td></tr>`,
            )}</tbody></table></div>`
        : null
    }
  </section>`;
}

function Writes({ target, onDone }) {
  const [run, busy, error] = useAction();
  const [done, setDone] = useState('');
  const grant = (e) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    run(async () => {
      const r = await api.post('/api/admin/billing/credits', {
        target_user_id: f.get('target'),
        amount: Number(f.get('amount')),
        reason: f.get('reason'),
        note: f.get('note') || null,
        idempotency_key: crypto.randomUUID(),
      });
      setDone(`Granted ${fmt.int(r.adjustment.amount)} credits: balance ${fmt.int(r.balance)}.`);
      onDone();
    });
  };
  const reset = (e) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    if (!confirm(`Delete the usage history of ${f.get('target')}?`)) return;
    run(async () => {
      const r = await api.post('/api/admin/billing/usage/reset', {
        target_user_id: f.get('target'),
        reason: f.get('reason'),
        idempotency_key: crypto.randomUUID(),
      });
      setDone(`Deleted ${r.usage_events_deleted} usage events, restored ${fmt.int(r.credits_restored)} credits: balance ${fmt.int(r.balance)}.`);
      onDone();
    });
  };
  const id = target?.id ?? '';
  return html`<div class="grid2">
    <form class="card" onSubmit=${grant} key=${`g${id}`}>
      <h2>Grant credits</h2>
      <div class="field"><label for="g-target">Account id</label><input id="g-target" name="target" required value=${id} /></div>
      <div class="field"><label for="g-amount">Credits (negative to remove)</label><input id="g-amount" name="amount" type="number" step="1" required /></div>
      <div class="field"><label for="g-reason">Reason</label><input id="g-reason" name="reason" required maxlength="500" /></div>
      <div class="field"><label for="g-note">Note (optional)</label><input id="g-note" name="note" maxlength="2000" /></div>
      <button type="submit" disabled=${busy}>Grant</button>
    </form>
    <form class="card" onSubmit=${reset} key=${`r${id}`}>
      <h2>Reset usage</h2>
      <p class="muted">Deletes the account's usage events and gives back the free credits they used.</p>
      <div class="field"><label for="r-target">Account id</label><input id="r-target" name="target" required value=${id} /></div>
      <div class="field"><label for="r-reason">Reason</label><input id="r-reason" name="reason" required maxlength="500" /></div>
      <button type="submit" class="danger" disabled=${busy}>Reset usage</button>
    </form>
  </div>
  <${ErrorBox} error=${error} />
  <${Notice} text=${done} />`;
}

function Audit({ target, version }) {
  const [rows, setRows] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    const q = target ? `?target_user_id=${encodeURIComponent(target.id)}` : '';
    api.get(`/api/admin/billing/adjustments${q}`).then((r) => setRows(r.adjustments), setError);
  }, [target, version]);
  return html`<section class="card">
    <h2>Audit list${target ? ` for ${target.email}` : ''}</h2>
    <${ErrorBox} error=${error} />
    <div class="table-wrap" tabindex="0" role="region" aria-label="Adjustments">
      <table>
        <caption>Administrator adjustments, newest first (records cannot be changed)</caption>
        <thead><tr><th scope="col">when</th><th scope="col">action</th><th scope="col">target</th><th scope="col">amount</th><th scope="col">balance</th><th scope="col">reason</th><th scope="col">by</th></tr></thead>
        <tbody>${(rows ?? []).map(
          (a) => html`<tr><td>${fmt.date(a.created_at)}</td><td>${a.action}</td><td class="mono">${a.target_user_id}</td><td>${fmt.int(a.amount)}</td>
            <td>${fmt.int(a.balance_before)} → ${fmt.int(a.balance_after)}</td><td>${a.reason}</td><td class="mono">${a.actor_user_id}</td></tr>`,
        )}</tbody>
      </table>
    </div>
  </section>`;
}

export function AdminPage({ user }) {
  const [target, setTarget] = useState(null);
  const [version, setVersion] = useState(0);
  if (!user) return html`<h1>Administration</h1><${SignInFirst} what="Administration" />`;
  if (user.role !== 'admin') return html`<h1>Administration</h1><p class="error" role="alert">This page needs the administrator role.</p>`;
  return html`<h1>Administration</h1>
    <${AccountSearch} onPick=${setTarget} />
    ${target ? html`<p role="status">Selected: <strong>${target.email}</strong> (<span class="mono">${target.id}</span>)</p>` : null}
    <${Writes} target=${target} onDone=${() => setVersion((v) => v + 1)} />
    <${Audit} target=${target} version=${version} />`;
}
