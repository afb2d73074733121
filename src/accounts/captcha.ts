/**
 * Pluggable captcha check for register and login. Off by default; hCaptcha and Cloudflare
 * Turnstile share the same siteverify protocol (form POST of secret + response → {success}).
 */
export interface CaptchaVerifier {
  verify(response: string | null | undefined, remoteIp: string): Promise<boolean>;
}

export const noCaptcha: CaptchaVerifier = { verify: async () => true };

const VERIFY_URL = {
  hcaptcha: 'https://api.hcaptcha.com/siteverify',
  turnstile: 'https://challenges.cloudflare.com/turnstile/v0/siteverify',
} as const;

export function createCaptchaVerifier(opts: { kind: 'off' | 'hcaptcha' | 'turnstile'; secret: string | null; verifyUrl?: string }): CaptchaVerifier {
  if (opts.kind === 'off' || !opts.secret) return noCaptcha;
  const url = opts.verifyUrl ?? VERIFY_URL[opts.kind];
  const secret = opts.secret;
  return {
    async verify(response, remoteIp) {
      if (!response) return false;
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ secret, response, remoteip: remoteIp }),
          signal: AbortSignal.timeout(5000),
        });
        const body = (await res.json()) as { success?: unknown };
        return body.success === true;
      } catch {
        return false;
      }
    },
  };
}
