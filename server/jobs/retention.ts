// Retention: a daily job on the one queue (kind `retention`, one per UTC day by its dedupe key)
// deletes what is past its time, in bounded batches (one short DELETE each): visits, form
// submissions and visitors not seen since their dataset's `retentionDays`; finished jobs and
// settled webhook deliveries after their own retention (RetentionConfig); salts of past days;
// erasure tombstones after the ingest log's max age (server/tracking/erasure-tombstones.ts).
// The visits are partitioned by month (server/jobs/partitions.ts): first the job makes the months
// ahead and drops each past month whose visits are all past retention, then deletes the rest.
// Leads (organisations) keep their counters: retention drops raw data, not the aggregate.
import { Prisma } from "../../generated/prisma/client.ts";
import type { RetentionConfig } from "../config.ts";
import type { Db } from "../db/database.ts";
import type { Logger } from "../logging.ts";
import { type PartitionResult, visitPartitions } from "./partitions.ts";
import { runPeriodically } from "./periodic.ts";
import { purgeTombstones } from "../tracking/erasure-tombstones.ts";
import type { JobQueue } from "./queue.ts";

export const RETENTION_JOB = "retention";
const DAY_MS = 86_400_000;

export interface RetentionResult {
  visits: number;
  formSubmissions: number;
  visitors: number;
  jobs: number;
  webhookDeliveries: number;
  /** Erasure tombstones older than the ingest log's max age. */
  tombstones: number;
  /** DELETE statements run (each at most `batchSize` rows). */
  batches: number;
  /** The visits' month partitions made and dropped (a dropped month's visits are not in `visits`). */
  partitions: PartitionResult;
}

/** Rows of a dataset-kept table older than their dataset's retention: `id IN (...)` of one batch. */
const expiredOfDatasets = (table: string, at: string, now: Date, limit: number) => Prisma.sql`
  SELECT x.id FROM ${Prisma.raw(`"${table}"`)} x JOIN "Dataset" d ON d.id = x."datasetId"
  WHERE d."retentionDays" IS NOT NULL AND x.${Prisma.raw(`"${at}"`)} < ${now}::timestamptz - make_interval(days => d."retentionDays")
  LIMIT ${limit}`;

export function retention(db: Db, config: RetentionConfig, now: () => Date) {
  const partitions = visitPartitions(db);
  /** Runs `batch` until it deletes less than a full batch; the rows deleted. */
  async function inBatches(batch: () => Promise<number>, result: RetentionResult): Promise<number> {
    let total = 0;
    for (;;) {
      const deleted = await batch();
      result.batches += 1;
      total += deleted;
      if (deleted < config.batchSize) return total;
    }
  }

  return {
    /** Deletes everything past its retention at `now()`. */
    async purge(): Promise<RetentionResult> {
      const at = now();
      const n = config.batchSize;
      // whole months first: what they drop is not deleted row by row below
      const partitionResult = await partitions.maintain(at);
      const result: RetentionResult = { visits: 0, formSubmissions: 0, visitors: 0, jobs: 0, webhookDeliveries: 0, tombstones: 0, batches: 0, partitions: partitionResult };
      result.visits = await inBatches(() => db.$executeRaw`DELETE FROM "Visit" WHERE id IN (${expiredOfDatasets("Visit", "at", at, n)})`, result);
      result.formSubmissions = await inBatches(() => db.$executeRaw`DELETE FROM "FormSubmission" WHERE id IN (${expiredOfDatasets("FormSubmission", "at", at, n)})`, result);
      // a visitor not seen within the retention: its address and enrichment go too (its rows above are gone already)
      result.visitors = await inBatches(
        () => db.$executeRaw`DELETE FROM "Visitor" WHERE ("datasetId", id) IN (
          SELECT v."datasetId", v.id FROM "Visitor" v JOIN "Dataset" d ON d.id = v."datasetId"
          WHERE d."retentionDays" IS NOT NULL AND v."lastSeenAt" < ${at}::timestamptz - make_interval(days => d."retentionDays") LIMIT ${n})`,
        result,
      );
      const jobsBefore = new Date(at.getTime() - config.jobDays * DAY_MS);
      result.jobs = await inBatches(
        () => db.$executeRaw`DELETE FROM "Job" WHERE id IN (
          SELECT id FROM "Job" WHERE state IN ('done', 'dead') AND "finishedAt" < ${jobsBefore} LIMIT ${n})`,
        result,
      );
      const deliveriesBefore = new Date(at.getTime() - config.webhookDeliveryDays * DAY_MS);
      result.webhookDeliveries = await inBatches(
        () => db.$executeRaw`DELETE FROM "WebhookDelivery" WHERE seq IN (
          SELECT seq FROM "WebhookDelivery" WHERE state IN ('delivered', 'failed') AND "createdAt" < ${deliveriesBefore} LIMIT ${n})`,
        result,
      );
      const tombstonesBefore = new Date(at.getTime() - config.tombstoneHours * 3_600_000);
      result.tombstones = await inBatches(() => purgeTombstones(db, tombstonesBefore, n), result);
      await db.$executeRaw`DELETE FROM "VisitorSalt" WHERE day < ${at.toISOString().slice(0, 10)}::date`;
      return result;
    },
  };
}

/** The `retention` job kind; `schedule` queues the day's job (any number of processes: one job per day). */
export function registerRetentionJobs(db: Db, jobs: JobQueue, config: RetentionConfig, logger: Logger, now: () => Date) {
  const rules = retention(db, config, now);
  jobs.register(
    RETENTION_JOB,
    async () => {
      const result = await rules.purge();
      logger.info("retention purge", { ...result });
      if (result.partitions.failed.length) logger.warn("visit partitions: steps failed, the next run tries again", { failed: result.partitions.failed });
    },
    { maxAttempts: 5, backoffMs: (n) => 60_000 * 2 ** (n - 1) },
  );
  return {
    async schedule(): Promise<void> {
      await jobs.enqueue(db, { kind: RETENTION_JOB, payload: {}, dedupeKey: `${RETENTION_JOB}:${now().toISOString().slice(0, 10)}` });
      jobs.wake();
    },
  };
}

export type RetentionJobs = ReturnType<typeof registerRetentionJobs>;

/** Queues the day's retention job every hour (each instance; the dedupe key makes it once a day). */
export function startRetentionScheduler(retentionJobs: RetentionJobs, logger: Logger, everyMs = 3_600_000): { stop(): void } {
  return runPeriodically("retention scheduling", retentionJobs.schedule, everyMs, logger);
}
