import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Bearer secrets are 256 random bits with a recognisable prefix (so secret scanners can spot
 * leaks) and are stored only as SHA-256 digests. A fast digest is right here, unlike for
 * passwords: the secret has full entropy, so there is nothing to brute-force.
 */
export const SECRET_PREFIX = {
  apiKey: 'tsfm_',
  session: 'tsfs_',
  reset: 'tsfr_',
  oauthAccess: 'tsfo_',
  oauthRefresh: 'tsfrt_',
  oauthCode: 'tsfc_',
  emailVerification: 'tsfv_',
} as const;

export function newSecret(prefix: string): string {
  return prefix + randomBytes(32).toString('base64url');
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** Constant-time check that `secret` hashes to `storedHash`. */
export function secretMatches(secret: string, storedHash: string): boolean {
  const a = Buffer.from(hashSecret(secret), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}
