import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Webhook signing secrets. Standard Webhooks secrets are symmetric (the receiver verifies with the
 * same secret), so the service must read them back to sign: they are stored encrypted with
 * AES-256-GCM under SCHEDULE_SECRET_KEY when the operator sets one, else as they are (ADR 0020).
 */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

const ENC = 'enc:v1:';

export function sealSecret(secret: string, key: Buffer | null): string {
  if (!key) return secret;
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ct = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return `${ENC}${iv.toString('base64url')}:${cipher.getAuthTag().toString('base64url')}:${ct.toString('base64url')}`;
}

export function openSecret(stored: string, key: Buffer | null): string {
  if (!stored.startsWith(ENC)) return stored;
  if (!key) throw new Error('a webhook secret is encrypted but SCHEDULE_SECRET_KEY is not set');
  const [iv, tag, ct] = stored.slice(ENC.length).split(':');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv ?? '', 'base64url'));
  decipher.setAuthTag(Buffer.from(tag ?? '', 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ct ?? '', 'base64url')), decipher.final()]).toString('utf8');
}
