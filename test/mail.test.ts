// The mail transport: .eml files without SMTP_URL; over SMTP (a real server on loopback) a
// permanent refusal ends the mail job at once, a temporary one is retried.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { SMTPServer } from "smtp-server";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JobQueue } from "../server/jobs/queue.ts";
import { createLogger } from "../server/logging.ts";
import { createMailer, enqueueMail, registerMailJobs } from "../server/notify/mail.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { parseMail } from "./support/smtp.ts";

let db: TestDatabase;
const logs: string[] = [];
const logger = createLogger("info", (line) => logs.push(line));
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.close());

describe("mail transport", () => {
  it("when no SMTP_URL is set, then each message is an .eml file in the outbox directory", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "outbox-"));
    try {
      const mailer = createMailer({ from: "Lead Intelligence <no-reply@leadintel.example>", outboxDir: path.join(dir, "mail") });
      expect(mailer.destination).toContain(path.join(dir, "mail"));
      const jobs = new JobQueue(db.prisma, logger, { pollMs: 1_000 });
      registerMailJobs(jobs, mailer, logger);
      await enqueueMail(jobs, db.prisma, { to: "reader@example.test", subject: "Hello", text: "Body text", attachments: [{ filename: "a.csv", content: "x,y\r\n", contentType: "text/csv" }] });
      await jobs.drain();
      const files = readdirSync(path.join(dir, "mail"));
      expect(files).toHaveLength(1);
      expect(files[0]).toMatch(/\.eml$/);
      const mail = parseMail(readFileSync(path.join(dir, "mail", files[0]!), "utf8"));
      expect(mail.headers.get("to")).toBe("reader@example.test");
      expect(mail.subject).toBe("Hello");
      expect(mail.text.trim()).toBe("Body text");
      expect(mail.attachments[0]).toMatchObject({ filename: "a.csv", content: "x,y\r\n" });
      expect(logs.join("\n")).not.toContain("reader@example.test");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("when the SMTP server refuses the recipient permanently, then the job is dead after one attempt; a temporary refusal is retried", async () => {
    let tries = 0;
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ["STARTTLS"],
      logger: false,
      onRcptTo(address, _session, callback) {
        tries++;
        const error = Object.assign(new Error(address.address.startsWith("gone") ? "No such user" : "Try later"), {
          responseCode: address.address.startsWith("gone") ? 550 : 451,
        });
        callback(error);
      },
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    try {
      const url = `smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}`;
      let clock = new Date("2026-11-23T10:00:00Z");
      const jobs = new JobQueue(db.prisma, logger, { pollMs: 1_000, now: () => clock });
      registerMailJobs(jobs, createMailer({ smtpUrl: url, from: "x@leadintel.example", outboxDir: "/nonexistent" }), logger);
      await enqueueMail(jobs, db.prisma, { to: "gone@example.test", subject: "s", text: "t" }, "gone");
      await enqueueMail(jobs, db.prisma, { to: "busy@example.test", subject: "s", text: "t" }, "busy");
      await jobs.drain();
      const gone = await db.prisma.job.findUniqueOrThrow({ where: { dedupeKey: "gone" } });
      expect(gone).toMatchObject({ state: "dead", attempts: 1, payload: null });
      expect(gone.lastError).toContain("550");
      const busy = await db.prisma.job.findUniqueOrThrow({ where: { dedupeKey: "busy" } });
      expect(busy).toMatchObject({ state: "queued", attempts: 1 });
      expect(busy.lastError).not.toContain("busy@example.test");
      clock = new Date(clock.getTime() + 2 * 60_000);
      await jobs.drain();
      expect(await db.prisma.job.findUniqueOrThrow({ where: { dedupeKey: "busy" } })).toMatchObject({ attempts: 2 });
      expect(tries).toBe(3);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
