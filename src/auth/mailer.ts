import { Injectable, Logger } from '@nestjs/common';
import { createTransport, type Transporter } from 'nodemailer';
import { AppConfig } from '../config/app-config.js';

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
  private readonly transport: Transporter | null;
  private readonly from: string;

  constructor(config: AppConfig) {
    this.transport = config.env.SMTP_URL ? createTransport(config.env.SMTP_URL) : null;
    this.from = config.env.SMTP_FROM ?? `LicenseGate <no-reply@${new URL(config.publicUrl).hostname}>`;
  }

  get enabled(): boolean {
    return this.transport !== null;
  }

  /**
   * Sends a mail; false when there is no SMTP server or it refused. A failure is logged, not thrown:
   * the write that asked for the mail has already happened, and its answer says what to do without it.
   */
  async send(mail: Mail): Promise<boolean> {
    if (!this.transport) return false;
    try {
      await this.transport.sendMail({ from: this.from, ...mail });
      return true;
    } catch (error) {
      this.logger.warn(`Could not mail ${mail.subject.toLowerCase()}: ${(error as Error).message}`);
      return false;
    }
  }
}
