import nodemailer from 'nodemailer';
import type { Mailer } from '../../engine/ports.js';

/** E-mail through the SMTP server of CHAINPOST_SMTP_URL (nodemailer). */
export function smtpMailer(url: string, from = 'chainpost <chainpost@localhost>'): Mailer {
  const transport = nodemailer.createTransport(url);
  return {
    async send(mail) {
      await transport.sendMail({ from, to: mail.to, subject: mail.subject, text: mail.text });
    },
  };
}
