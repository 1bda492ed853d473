import { Injectable, Logger } from '@nestjs/common';
import type { Transporter } from 'nodemailer';
import { loadedWhenUsed } from '../common/lazy-module.js';
import { AppConfig } from '../config/app-config.js';

/**
 * The transport's options: every wait of nodemailer bounded by `timeoutMs` (its own defaults are 2
 * minutes to connect, 30 seconds for the greeting and 10 minutes of silence).
 */
export function smtpOptions(url: string, timeoutMs: number) {
  return {
    url,
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    dnsTimeout: timeoutMs,
  };
}

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

/**
 * Mails invitations and password-reset links through SMTP_URL (docs/security.md#members-and-invitations).
 * Without it nothing is mailed: the invitation URL is shown to the inviter, and the CLI resets passwords.
 */
@Injectable()
export class Mailer {
  private readonly logger = new Logger('Mailer');
  /** nodemailer, loaded at start with SMTP_URL only; a load that failed is tried again at the next mail. */
  private readonly transport: (() => Promise<Transporter>) | null;
  private readonly from: string;
  private readonly timeoutMs: number;

  constructor(config: AppConfig) {
    this.timeoutMs = config.env.SMTP_TIMEOUT_MS;
    const url = config.env.SMTP_URL;
    this.transport = url
      ? loadedWhenUsed(async () =>
          (await import('nodemailer')).createTransport(smtpOptions(url, this.timeoutMs)),
        )
      : null;
    // Said at start; each send then tries again, and logs its failure as for an unreachable server.
    this.transport?.().catch((error: unknown) =>
      this.logger.error(`nodemailer could not be loaded, so nothing is mailed: ${(error as Error).message}`),
    );
    this.from = config.env.SMTP_FROM ?? `LicenseGate <no-reply@${new URL(config.publicUrl).hostname}>`;
  }

  get enabled(): boolean {
    return this.transport !== null;
  }

  /**
   * Sends a mail; false when there is no SMTP server, it refused, or it took longer than SMTP_TIMEOUT_MS.
   * A failure is logged, not thrown: the write that asked for the mail has already happened, and its
   * answer says what to do without it.
   */
  async send(mail: Mail): Promise<boolean> {
    if (!this.transport) return false;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer from the SMTP server within ${this.timeoutMs} ms`)),
        this.timeoutMs,
      );
      timer.unref();
    });
    try {
      await Promise.race([this.transport().then((t) => t.sendMail({ from: this.from, ...mail })), deadline]);
      return true;
    } catch (error) {
      this.logger.warn(`Could not mail ${mail.subject.toLowerCase()}: ${(error as Error).message}`);
      return false;
    } finally {
      clearTimeout(timer);
    }
  }
}
