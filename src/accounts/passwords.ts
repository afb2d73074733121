import argon2 from 'argon2';

/**
 * Passwords are hashed with argon2id (node-argon2, an N-API addon with prebuilt binaries)
 * at the library's OWASP-aligned defaults (m=64 MiB, t=3, p=4).
 */
export function hashPassword(password: string): Promise<string> {
  return argon2.hash(password, { type: argon2.argon2id });
}

// A real hash of a random password, so a login for an unknown e-mail costs one verification too.
let dummyHash: Promise<string> | null = null;

export async function verifyPassword(hash: string | null, password: string): Promise<boolean> {
  if (hash === null) {
    dummyHash ??= hashPassword(`dummy-${Math.random()}`);
    await argon2.verify(await dummyHash, password).catch(() => false);
    return false;
  }
  try {
    return await argon2.verify(hash, password);
  } catch {
    return false;
  }
}
