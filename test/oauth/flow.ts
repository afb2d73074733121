import { createHash, randomBytes } from 'node:crypto';

/** Test helpers that play an OAuth client and the user at the browser. */

export const pkcePair = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

export async function registerClientAt(baseUrl: string, redirectUris = ['http://127.0.0.1:9/callback'], extra: Record<string, unknown> = {}) {
  const r = await fetch(`${baseUrl}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Test client', redirect_uris: redirectUris, ...extra }),
  });
  if (r.status !== 201) throw new Error(`register: ${r.status} ${await r.text()}`);
  return (await r.json()) as { client_id: string; client_secret?: string; redirect_uris: string[] };
}

/**
 * Posts the authorize form (the user approving or denying) and returns the redirect. Sent with
 * this site's `Origin`, as a browser posting the consent page does (override it to play another site).
 */
export async function submitAuthorize(
  baseUrl: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<{ status: number; location: string | null; text: string; setCookie: string | null }> {
  const r = await fetch(`${baseUrl}/oauth/authorize`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: baseUrl, ...headers },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  });
  return { status: r.status, location: r.headers.get('location'), text: await r.text(), setCookie: r.headers.get('set-cookie') };
}

/** The "Return to the application" link of an authorization error page (null when there is none). */
export function returnLink(html: string): URL | null {
  const m = /<a href="([^"]+)" rel="noreferrer">Return to the application<\/a>/.exec(html);
  return m?.[1] ? new URL(m[1].replaceAll('&amp;', '&')) : null;
}

export async function tokenRequest(baseUrl: string, fields: Record<string, string>) {
  const r = await fetch(`${baseUrl}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: r.status, body: (await r.json()) as Record<string, any>, headers: r.headers };
}

/** One whole authorization (approve with e-mail and password) up to the code. */
export async function authorizeCode(
  baseUrl: string,
  client: { client_id: string; redirect_uris: string[] },
  user: { email: string; password: string },
  opts: { challenge: string; state?: string; resource?: string },
): Promise<string> {
  const redirect_uri = client.redirect_uris[0] as string;
  const res = await submitAuthorize(baseUrl, {
    client_id: client.client_id,
    redirect_uri,
    code_challenge: opts.challenge,
    code_challenge_method: 'S256',
    scope: 'mcp',
    state: opts.state ?? 'st',
    resource: opts.resource ?? `${baseUrl}/mcp`,
    action: 'approve',
    email: user.email,
    password: user.password,
  });
  if (res.status !== 303 || !res.location) throw new Error(`authorize: ${res.status} ${res.text.slice(0, 300)}`);
  const code = new URL(res.location).searchParams.get('code');
  if (!code) throw new Error(`no code in ${res.location}`);
  return code;
}
