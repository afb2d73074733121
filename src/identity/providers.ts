import * as oidc from 'openid-client';
import type { IdentityProviderConfig } from '../config.ts';

/** What the service needs to know about a person after a provider sign-in. */
export interface ProviderProfile {
  subject: string;
  email: string | null;
  emailVerified: boolean;
  name: string | null;
}

const GITHUB = {
  issuer: 'https://github.com',
  authorization_endpoint: 'https://github.com/login/oauth/authorize',
  token_endpoint: 'https://github.com/login/oauth/access_token',
};
const GITHUB_API = 'https://api.github.com';

const isLoopbackHttp = (u: URL) => u.protocol === 'http:' && ['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname);

/**
 * One provider, driven by openid-client: discovery for OIDC issuers (Google and any configured
 * issuer), fixed endpoints for GitHub (plain OAuth 2.0 plus its REST API for the e-mail).
 * Metadata is fetched once per process and retried after a failure.
 */
export class IdentityProvider {
  readonly cfg: IdentityProviderConfig;
  private configuration: Promise<oidc.Configuration> | null = null;

  constructor(cfg: IdentityProviderConfig) {
    this.cfg = cfg;
  }

  private async config(): Promise<oidc.Configuration> {
    if (!this.configuration) {
      this.configuration = this.load().catch((err: unknown) => {
        this.configuration = null;
        throw err;
      });
    }
    return this.configuration;
  }

  private async load(): Promise<oidc.Configuration> {
    if (this.cfg.kind === 'github') return new oidc.Configuration(GITHUB, this.cfg.clientId, this.cfg.clientSecret);
    const issuer = new URL(this.cfg.issuer as string);
    // Plain http is accepted only for an issuer on this machine (development and tests).
    const options = isLoopbackHttp(issuer) ? { execute: [oidc.allowInsecureRequests] } : undefined;
    return oidc.discovery(issuer, this.cfg.clientId, this.cfg.clientSecret, undefined, options);
  }

  get scope(): string {
    return this.cfg.kind === 'github' ? 'read:user user:email' : 'openid email profile';
  }

  async authorizationUrl(p: { redirectUri: string; state: string; codeVerifier: string }): Promise<URL> {
    const config = await this.config();
    return oidc.buildAuthorizationUrl(config, {
      redirect_uri: p.redirectUri,
      scope: this.scope,
      state: p.state,
      code_challenge: await oidc.calculatePKCECodeChallenge(p.codeVerifier),
      code_challenge_method: 'S256',
    });
  }

  /** Exchanges the code (state and PKCE checked by openid-client) and reads who signed in. */
  async complete(p: { callbackUrl: URL; state: string; codeVerifier: string; redirectUri: string }): Promise<ProviderProfile> {
    const config = await this.config();
    const tokens = await oidc.authorizationCodeGrant(
      config,
      p.callbackUrl,
      { pkceCodeVerifier: p.codeVerifier, expectedState: p.state },
      { redirect_uri: p.redirectUri },
    );
    if (this.cfg.kind === 'github') return this.githubProfile(config, tokens.access_token);
    const claims = tokens.claims();
    if (!claims) throw new Error('the provider returned no ID token');
    let email = typeof claims.email === 'string' ? claims.email : null;
    let verified = claims.email_verified === true;
    let name = typeof claims.name === 'string' ? claims.name : null;
    if (!email) {
      const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
      email = typeof info.email === 'string' ? info.email : null;
      verified = info.email_verified === true;
      name ??= typeof info.name === 'string' ? info.name : null;
    }
    return { subject: claims.sub, email, emailVerified: verified, name };
  }

  private async githubProfile(config: oidc.Configuration, accessToken: string): Promise<ProviderProfile> {
    const get = async (path: string) => {
      const r = await oidc.fetchProtectedResource(
        config,
        accessToken,
        new URL(GITHUB_API + path),
        'GET',
        undefined,
        new Headers({ accept: 'application/vnd.github+json' }),
      );
      if (!r.ok) throw new Error(`GitHub API ${path}: ${r.status}`);
      return r.json() as Promise<unknown>;
    };
    const user = (await get('/user')) as { id: number; name?: string | null; login: string };
    const emails = (await get('/user/emails')) as { email: string; primary: boolean; verified: boolean }[];
    const primary = emails.find((e) => e.primary && e.verified) ?? emails.find((e) => e.verified) ?? null;
    return { subject: String(user.id), email: primary?.email ?? null, emailVerified: primary !== null, name: user.name ?? user.login };
  }
}

export function buildProviders(cfgs: IdentityProviderConfig[]): Map<string, IdentityProvider> {
  return new Map(cfgs.map((c) => [c.name, new IdentityProvider(c)]));
}
