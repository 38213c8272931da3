// Segment alerts: the mail made from segment entries (server/services/segment-entries.ts records
// them). `instant` segments get a mail job in the entries' transaction (instantAlerts, a listener
// of the entries), `daily` and `weekly` ones a digest per period at a fixed UTC hour (weekly on
// Monday), made once per (segment, period) by its job's dedupe key.
import { type Lead, Prisma, type PrismaClient } from "../../generated/prisma/client.ts";
import type { Db } from "../db/database.ts";
import { notExcluded } from "../domain/exclusions.ts";
import type { JobQueue } from "../jobs/queue.ts";
import type { Logger } from "../logging.ts";
import { runPeriodically } from "../jobs/periodic.ts";
import { escapeHtml } from "./invitations.ts";
import type { Mailer } from "./mail.ts";

type Tx = Prisma.TransactionClient | PrismaClient;

/** What an alert needs of a new segment entry (server/services/segment-entries.ts SegmentEntered). */
export interface EnteredLead {
  segmentId: number;
  leadId: string;
  /** The segment's alert mail when the lead entered. */
  mail: "instant" | "daily" | "weekly" | null;
}

export const INSTANT_JOB = "segment-alert";
export const DIGEST_JOB = "segment-digest";
/** The job that queues the digests of the periods ending at its time (one per daily period end). */
export const DIGEST_SCHEDULE_JOB = "segment-digest-schedule";
const DAY = 86_400_000;
/** Leads named in one instant mail (the rest are counted). */
const INSTANT_LIST = 20;
/** Rows in one digest's CSV. */
const DIGEST_ROWS = 10_000;

/** The digest period that ended last at or before `now`: [start, end). */
export function lastPeriod(frequency: "daily" | "weekly", now: Date, hourUtc: number): { start: Date; end: Date } {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate(), hourUtc);
  let end = today <= now.getTime() ? today : today - DAY;
  if (frequency === "weekly") {
    const weekday = (new Date(end).getUTCDay() + 6) % 7; // Monday 0
    end -= weekday * DAY;
  }
  const length = frequency === "daily" ? DAY : 7 * DAY;
  return { start: new Date(end - length), end: new Date(end) };
}

export function segmentAlertService(db: Db, jobs: JobQueue, { now, digestHourUtc }: { now: () => Date; digestHourUtc: number }) {
  /** A listener of segment entries: one instant mail job per `instant` segment that got entries (in their transaction). */
  async function instantAlerts(entries: readonly EnteredLead[], tx: Tx): Promise<void> {
    const bySegment = new Map<number, string[]>();
    for (const entry of entries) if (entry.mail === "instant") bySegment.set(entry.segmentId, [...(bySegment.get(entry.segmentId) ?? []), entry.leadId]);
    await jobs.enqueueMany(
      tx,
      [...bySegment].map(([segmentId, leadIds]) => ({ kind: INSTANT_JOB, payload: { segmentId, leadIds: leadIds.slice(0, INSTANT_LIST), total: leadIds.length } })),
    );
  }

  /**
   * Queues the digest of every segment with daily or weekly mail whose last period (ended at
   * `digestHourUtc`) has entries; one job per (segment, period) however often and wherever this
   * runs. Returns how many new jobs were queued.
   */
  async function scheduleDigests(at: Date = now()): Promise<number> {
    const digests = [];
    for (const frequency of ["daily", "weekly"] as const) {
      const { start, end } = lastPeriod(frequency, at, digestHourUtc);
      const segments = await db.$queryRaw<{ id: number }[]>(Prisma.sql`
        SELECT s."id" FROM "Segment" s
        WHERE s."emailEnabled" AND s."emailFrequency" = ${frequency}::"EmailFrequency"
          AND EXISTS (SELECT 1 FROM "SegmentEntry" e WHERE e."segmentId" = s."id" AND e."enteredAt" >= ${start} AND e."enteredAt" < ${end})`);
      for (const { id } of segments) {
        digests.push({
          kind: DIGEST_JOB,
          payload: { segmentId: id, frequency, start: start.toISOString(), end: end.toISOString() },
          runAt: at,
          dedupeKey: `digest:${id}:${start.toISOString()}`,
        });
      }
    }
    return jobs.enqueueMany(db, digests);
  }

  jobs.register(
    DIGEST_SCHEDULE_JOB,
    async (job) => {
      await scheduleDigests(new Date((job.payload as { at: string }).at));
    },
    { maxAttempts: 8, backoffMs: (n) => Math.min(60_000 * 2 ** (n - 1), 3_600_000) },
  );

  /**
   * Queues the scheduling job of the period that ended last (it runs at once if it has not yet)
   * and of the next one (it waits for its time): every period end (a weekly one is a daily one
   * too) is scheduled once, by its dedupe key, however many processes call this and however long
   * they were down. Returns how many were new.
   */
  async function queueScheduling(at: Date = now()): Promise<number> {
    const last = lastPeriod("daily", at, digestHourUtc).end;
    const ends = [last, new Date(last.getTime() + DAY)];
    return jobs.enqueueMany(
      db,
      ends.map((end) => ({ kind: DIGEST_SCHEDULE_JOB, payload: { at: end.toISOString() }, runAt: end, dedupeKey: `${DIGEST_SCHEDULE_JOB}:${end.toISOString()}` })),
    );
  }

  return { instantAlerts, scheduleDigests, queueScheduling };
}

export type SegmentAlertService = ReturnType<typeof segmentAlertService>;

/** A lead as an alert lists it: its columns, and when it entered the segment. */
type LeadLine = Pick<Lead, "organizationName" | "organizationDomain" | "industry" | "employeeCount" | "country" | "city" | "lastVisitAt"> & {
  leadId: Lead["id"];
  enteredAt: Date;
};

/** A CSV field: quoted when needed; a leading = + - @ is neutralised (spreadsheet formulas). */
function csvField(value: unknown): string {
  let text = value === null || value === undefined ? "" : value instanceof Date ? value.toISOString() : String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

const CSV_COLUMNS = ["leadId", "organizationName", "organizationDomain", "industry", "employeeCount", "country", "city", "lastVisitAt", "enteredAt"] as const;

export function leadsCsv(leads: LeadLine[]): string {
  return [CSV_COLUMNS.join(","), ...leads.map((lead) => CSV_COLUMNS.map((c) => csvField(lead[c])).join(","))].join("\r\n") + "\r\n";
}

function leadTable(leads: LeadLine[]): string {
  const rows = leads
    .map((l) => `<tr><td>${escapeHtml(l.organizationName)}</td><td>${escapeHtml(l.organizationDomain ?? "")}</td><td>${escapeHtml([l.city, l.country].filter(Boolean).join(", "))}</td><td>${l.lastVisitAt.toISOString().slice(0, 16).replace("T", " ")}</td></tr>`)
    .join("");
  return `<table><thead><tr><th>Organisation</th><th>Domain</th><th>Location</th><th>Last visit (UTC)</th></tr></thead><tbody>${rows}</tbody></table>`;
}

/** The instant and digest mail jobs (they send through `mailer` themselves: one job, one message). */
export function registerSegmentAlertJobs(db: Db, jobs: JobQueue, mailer: Mailer, logger: Logger): void {
  async function recipient(segmentId: number) {
    return db.segment.findUnique({
      where: { id: segmentId },
      select: { id: true, name: true, datasetId: true, emailEnabled: true, emailFrequency: true, user: { select: { state: true, user: { select: { email: true } } } } },
    });
  }

  // a lead hidden by an exclusion rule since it entered is left out of the mail, as of every listing
  const leadLines = (segmentId: number, where: Prisma.Sql, limit: number) =>
    db.$queryRaw<LeadLine[]>(Prisma.sql`
      SELECT l."id" AS "leadId", l."organizationName", l."organizationDomain", l."industry", l."employeeCount", l."country", l."city", l."lastVisitAt", e."enteredAt"
      FROM "SegmentEntry" e JOIN "Lead" l ON l."datasetId" = e."datasetId" AND l."id" = e."leadId"
      WHERE e."segmentId" = ${segmentId} AND ${where} AND ${notExcluded}
      ORDER BY e."enteredAt", l."id"
      LIMIT ${limit}`);

  jobs.register(
    INSTANT_JOB,
    async (job) => {
      const { segmentId, leadIds, total } = job.payload as { segmentId: number; leadIds: string[]; total: number };
      const segment = await recipient(segmentId);
      // deleted, switched off or changed since: nothing to send
      if (!segment || !segment.emailEnabled || segment.emailFrequency !== "instant") return;
      const leads = await leadLines(segmentId, Prisma.sql`e."leadId" = ANY(${leadIds}::text[])`, INSTANT_LIST);
      if (!leads.length) return;
      const more = total - leads.length;
      const subject = total === 1 ? `New lead in "${segment.name}": ${leads[0]!.organizationName}` : `${total} new leads in "${segment.name}"`;
      await mailer.send(
        {
          to: segment.user.user.email,
          subject,
          text: `${leads.map((l) => `- ${l.organizationName}${l.organizationDomain ? ` (${l.organizationDomain})` : ""}`).join("\n")}${more > 0 ? `\n…and ${more} more` : ""}\n`,
          html: `<p>New in segment <b>${escapeHtml(segment.name)}</b>:</p>${leadTable(leads)}${more > 0 ? `<p>…and ${more} more.</p>` : ""}`,
        },
        `<job-${job.id}@lead-intel>`,
      );
      logger.info("segment alert sent", { jobId: String(job.id), segmentId, leads: leads.length });
    },
    { maxAttempts: 8, backoffMs: (n) => Math.min(60_000 * 2 ** (n - 1), 7_200_000), concurrency: 2 },
  );

  jobs.register(
    DIGEST_JOB,
    async (job) => {
      const { segmentId, frequency, start, end } = job.payload as { segmentId: number; frequency: string; start: string; end: string };
      const segment = await recipient(segmentId);
      if (!segment || !segment.emailEnabled || segment.emailFrequency !== frequency) return;
      const leads = await leadLines(segmentId, Prisma.sql`e."enteredAt" >= ${new Date(start)} AND e."enteredAt" < ${new Date(end)}`, DIGEST_ROWS);
      if (!leads.length) return; // an empty period sends nothing
      const day = start.slice(0, 10);
      await mailer.send(
        {
          to: segment.user.user.email,
          subject: `${frequency === "daily" ? "Daily" : "Weekly"} digest of "${segment.name}": ${leads.length} new lead${leads.length === 1 ? "" : "s"}`,
          text: `${leads.length} leads entered the segment between ${start} and ${end}; the attached CSV lists them.\n`,
          html: `<p>${leads.length} lead${leads.length === 1 ? "" : "s"} entered segment <b>${escapeHtml(segment.name)}</b> between ${start} and ${end} (UTC).</p>${leadTable(leads.slice(0, 50))}${leads.length > 50 ? "<p>All of them are in the attached CSV.</p>" : ""}`,
          attachments: [{ filename: `segment-${segmentId}-${day}.csv`, content: leadsCsv(leads), contentType: "text/csv" }],
        },
        `<digest-${segmentId}-${day}-${frequency}@lead-intel>`,
      );
      logger.info("segment digest sent", { jobId: String(job.id), segmentId, leads: leads.length });
    },
    { maxAttempts: 8, backoffMs: (n) => Math.min(60_000 * 2 ** (n - 1), 7_200_000) },
  );
}

/** Queues the digest-scheduling jobs every hour (each instance; the dedupe keys make each once). */
export function startDigestScheduler(alerts: SegmentAlertService, logger: Logger, everyMs = 3_600_000): { stop(): void } {
  return runPeriodically("digest scheduling", alerts.queueScheduling, everyMs, logger);
}
