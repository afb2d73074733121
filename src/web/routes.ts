import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyReply } from 'fastify';
import type { Deps } from '../deps-types.ts';
import { SESSION_COOKIE } from '../http/cookies.ts';
import type { ZApp } from '../http/types.ts';
import { CONTENT_SECURITY_POLICY, shellHtml } from './shell.ts';

/** Paths the browser app renders; each answers the same shell page. */
export const PAGE_PATHS = [
  '/',
  '/login',
  '/register',
  '/forgot-password',
  '/reset-password',
  '/playground',
  '/models',
  '/account',
  '/account/keys',
  '/account/usage',
  '/account/billing',
  '/account/settings',
  '/account/mcp',
  '/admin',
] as const;

const dirOf = (specifier: string) => dirname(fileURLToPath(import.meta.resolve(specifier)));

/** Only these folders of node_modules are served, each under its own prefix. */
const VENDOR: Record<string, string> = {
  preact: dirOf('preact'),
  'preact-hooks': dirOf('preact/hooks'),
  htm: dirOf('htm'),
  uplot: dirOf('uplot'),
  'd3-dsv': dirOf('d3-dsv'),
};

export const STATIC_DIR = join(dirname(fileURLToPath(import.meta.url)), 'static');

export async function registerWebRoutes(app: ZApp, deps: Deps): Promise<void> {
  const base = {
    publicBaseUrl: deps.config.publicBaseUrl,
    identityProviders: deps.config.identityProviders.map((p) => ({ name: p.name, label: p.label })),
    paymentsProvider: deps.config.billing.provider,
  };
  // Two shells, made once: for a request with a session cookie (which may still have expired) and without.
  const shells = { signedIn: shellHtml({ ...base, session: true }), visitor: shellHtml({ ...base, session: false }) };
  const securityHeaders = {
    'content-security-policy': CONTENT_SECURITY_POLICY,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'same-origin',
  };

  for (const path of PAGE_PATHS) {
    app.get(path, { schema: { hide: true } }, async (req, reply) =>
      reply
        .type('text/html; charset=utf-8')
        .headers({ ...securityHeaders, 'cache-control': 'no-cache', vary: 'cookie' })
        .send(typeof req.cookies?.[SESSION_COOKIE] === 'string' ? shells.signedIn : shells.visitor),
    );
  }
  // Pages without an icon link of their own (the e-mail confirmation page, JSON opened in a tab)
  // make the browser ask for /favicon.ico: an empty answer instead of a 404 in the console.
  app.get('/favicon.ico', { schema: { hide: true } }, async (_req, reply) => reply.code(204).header('cache-control', 'public, max-age=86400').send());

  const staticOptions = {
    decorateReply: false,
    index: false as const,
    wildcard: true,
    schemaHide: true,
    setHeaders: (reply: FastifyReply) => {
      reply.header('x-content-type-options', 'nosniff');
    },
  };
  await app.register(fastifyStatic, { ...staticOptions, root: STATIC_DIR, prefix: '/static/' });
  for (const [name, root] of Object.entries(VENDOR)) {
    await app.register(fastifyStatic, { ...staticOptions, root, prefix: `/vendor/${name}/` });
  }
}
