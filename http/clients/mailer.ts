import type { Transporter } from 'nodemailer';
import type { Mailer } from '../../engine/ports.js';

/**
 * E-mail through the SMTP server of CHAINPOST_SMTP_URL (nodemailer). nodemailer is loaded at the first e-mail,
 * not at the server's start: alerts are rare, and every start paid for it.
 */
export function smtpMailer(url: string, from = 'chainpost <chainpost@localhost>'): Mailer {
  let transport: Promise<Transporter> | undefined;
  return {
    async send(mail) {
      transport ??= import('nodemailer').then(({ default: nodemailer }) => nodemailer.createTransport(url));
      await (await transport).sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text });
    },
  };
}
