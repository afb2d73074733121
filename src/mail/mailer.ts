import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import { newId } from '../shared/ids.ts';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  send(msg: MailMessage): Promise<void>;
}

/**
 * SMTP through nodemailer when SMTP_URL is set; otherwise each message is rendered to a real
 * RFC 822 `.eml` file under the outbox directory (nodemailer's stream transport), so a laptop
 * install needs no mail server and the operator can still open every mail that was sent (a
 * `.txt` copy of the plain text sits beside each `.eml`, so links can be copied or grepped).
 */
export function createMailer(opts: { smtpUrl: string | null; from: string; outboxDir: string }): Mailer {
  if (opts.smtpUrl) {
    const transport = nodemailer.createTransport(opts.smtpUrl);
    return {
      async send(msg) {
        await transport.sendMail({ from: opts.from, ...msg });
      },
    };
  }
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    async send(msg) {
      const info = await transport.sendMail({ from: opts.from, ...msg });
      await mkdir(opts.outboxDir, { recursive: true });
      const name = newId('mail');
      await writeFile(join(opts.outboxDir, `${name}.eml`), info.message as Buffer);
      // The .eml body is quoted-printable (long links are split); the .txt beside it is the plain text.
      await writeFile(join(opts.outboxDir, `${name}.txt`), `To: ${msg.to}\nSubject: ${msg.subject}\n\n${msg.text}`);
    },
  };
}

/** Keeps messages in memory; for tests. */
export class MemoryMailer implements Mailer {
  readonly sent: MailMessage[] = [];
  async send(msg: MailMessage): Promise<void> {
    this.sent.push(msg);
  }
}
