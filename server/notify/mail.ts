// E-mail: nodemailer over SMTP when SMTP_URL is set; otherwise (outside production) each message
// is written as an .eml file to the outbox directory. Mail is always sent from a job of kind
// `mail` (durable, retried): callers enqueue it, inside their transaction when they have one.
// No address, subject or body is ever logged; only the job id and the outcome.
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import nodemailer from "nodemailer";
import type { PrismaClient, Prisma } from "../../generated/prisma/client.ts";
import type { MailConfig } from "../config.ts";
import { GiveUp, type JobQueue } from "../jobs/queue.ts";
import type { Logger } from "../logging.ts";

export interface MailAttachment {
  filename: string;
  content: string;
  contentType: string;
}

export interface Mail {
  to: string;
  subject: string;
  text: string;
  html?: string;
  attachments?: MailAttachment[];
}

export interface Mailer {
  /** Sends one message; `messageId` makes a repeated send recognisable as the same message. */
  send(mail: Mail, messageId: string): Promise<void>;
  /** Where mail goes, for the start-up message (never the SMTP credentials). */
  readonly destination: string;
  close(): void;
}

export const MAIL_JOB = "mail";

export function createMailer(config: MailConfig): Mailer {
  const from = config.from;
  if (config.smtpUrl) {
    const transport = nodemailer.createTransport(config.smtpUrl);
    const url = new URL(config.smtpUrl);
    return {
      destination: `SMTP ${url.protocol}//${url.host}`,
      async send(mail, messageId) {
        await transport.sendMail({ ...mail, from, messageId });
      },
      close: () => transport.close(),
    };
  }
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: "unix" });
  return {
    destination: `.eml files in ${config.outboxDir}`,
    async send(mail, messageId) {
      const info = await transport.sendMail({ ...mail, from, messageId });
      await mkdir(config.outboxDir, { recursive: true });
      const name = `${new Date().toISOString().replace(/[:.]/g, "-")}-${messageId.replace(/[^A-Za-z0-9.-]/g, "_")}.eml`;
      await writeFile(path.join(config.outboxDir, name), info.message as Buffer);
    },
    close: () => {},
  };
}

const MINUTE = 60_000;

/** Registers the `mail` job kind: 8 attempts over about 4 hours; an SMTP 5xx answer is final. */
export function registerMailJobs(jobs: JobQueue, mailer: Mailer, logger: Logger): void {
  jobs.register(
    MAIL_JOB,
    async (job) => {
      try {
        await mailer.send(job.payload as Mail, `<job-${job.id}@lead-intel>`);
      } catch (error) {
        const code = (error as { responseCode?: number }).responseCode;
        if (code !== undefined && code >= 500) throw new GiveUp(`SMTP refused the message (${code})`);
        throw new Error(`mail not sent: ${(error as { code?: string }).code ?? "error"}${code ? ` ${code}` : ""}`);
      }
      logger.info("mail sent", { jobId: String(job.id), attempt: job.attempt });
    },
    { maxAttempts: 8, backoffMs: (n) => Math.min(MINUTE * 2 ** (n - 1), 2 * 60 * MINUTE), concurrency: 4, forgetPayload: true },
  );
}

/** Queues a mail (in the caller's transaction when `tx` is one: sent iff it commits). */
export function enqueueMail(jobs: JobQueue, tx: Prisma.TransactionClient | PrismaClient, mail: Mail, dedupeKey?: string): Promise<void> {
  return jobs.enqueue(tx, { kind: MAIL_JOB, payload: mail, dedupeKey });
}
