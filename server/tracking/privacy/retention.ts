// Retention: a daily job on the one queue (kind `retention`, one per UTC day by its dedupe key)
// deletes what is past its time, in bounded batches (one short DELETE each): visits, form
// submissions and visitors not seen since their dataset's `retentionDays`; finished jobs and
// settled webhook deliveries after their own retention (RetentionConfig); salts of past days;
// erasure tombstones after the ingest log's max age (server/tracking/write/erasure-tombstones.ts);
// dead-lettered ingest batches after RETENTION_DEAD_LETTER_DAYS or their dataset's retention;
// pending events of shared networks after TRACKING_PENDING_DAYS, and identity evidence not
// renewed within TRACKING_IDENTITY_DAYS (server/identity/identities.ts expire).
// The visits are partitioned by month (server/tracking/privacy/visit-partitions.ts): first the job makes the months
// ahead and drops each past month whose visits are all past retention, then deletes the rest.
// Leads (organisations) keep their counters: retention drops raw data, not the aggregate.
// Each statement lives with the store of its table; this module only runs them in order.
import type { RetentionConfig } from "../../config.ts";
import type { Db } from "../../db/database.ts";
import type { Logger } from "../../logging.ts";
import { maintainVisitPartitions, type PartitionResult } from "./visit-partitions.ts";
import { runPeriodically } from "../../jobs/periodic.ts";
import { purgeFinishedJobs } from "../../jobs/queue.ts";
import { purgeSettledDeliveries } from "../../notify/webhook-store.ts";
import { purgePastSalts } from "../collect/cookieless.ts";
import { expireFormSubmissions, expireVisits } from "../write/visit-store.ts";
import { expireVisitors } from "../write/visitor-store.ts";
import { purgeDeadLetters } from "../log/dead-letters.ts";
import { purgeTombstones } from "../write/erasure-tombstones.ts";
import type { JobQueue } from "../../jobs/queue.ts";
import type { IdentityStore } from "../../identity/identities.ts";
import { purgePending, withdrawInRanges } from "../write/pending.ts";
import type { OnLeadsRemoved } from "../write/lead-store.ts";

/** Pending events' window (TRACKING_PENDING_DAYS) and the identity store whose evidence expires (TRACKING_IDENTITY_DAYS). */
export interface IdentityRetention {
  pendingDays: number;
  identities?: IdentityStore;
  /** The leads that lapsed identities left without visits (their lead.removed). */
  onLeadsRemoved?: OnLeadsRemoved;
}

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
  /** Dead-lettered ingest batches. */
  deadLetters: number;
  /** Events of shared networks that waited longer than TRACKING_PENDING_DAYS without an identity. */
  pendingEvents: number;
  /** Identity evidence not renewed within TRACKING_IDENTITY_DAYS, and identities past their expiry. */
  identityEvidence: number;
  identities: number;
  /** Visits whose identity lapsed (its evidence expired), taken back to pending. */
  withdrawnVisits: number;
  /** DELETE statements run (each at most `batchSize` rows). */
  batches: number;
  /** The visits' month partitions made and dropped (a dropped month's visits are not in `visits`). */
  partitions: PartitionResult;
}

export function retention(db: Db, config: RetentionConfig, now: () => Date, identity: IdentityRetention = { pendingDays: 30 }) {
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
      const partitionResult = await maintainVisitPartitions(db, at);
      const result: RetentionResult = {
        visits: 0, formSubmissions: 0, visitors: 0, jobs: 0, webhookDeliveries: 0, tombstones: 0, deadLetters: 0, pendingEvents: 0, identityEvidence: 0, identities: 0, withdrawnVisits: 0, batches: 0,
        partitions: partitionResult,
      };
      result.visits = await inBatches(() => expireVisits(db, at, n), result);
      result.formSubmissions = await inBatches(() => expireFormSubmissions(db, at, n), result);
      // a visitor not seen within the retention: its address and enrichment go too (its rows above are gone already)
      result.visitors = await inBatches(() => expireVisitors(db, at, n), result);
      const jobsBefore = new Date(at.getTime() - config.jobDays * DAY_MS);
      result.jobs = await inBatches(() => purgeFinishedJobs(db, jobsBefore, n), result);
      const deliveriesBefore = new Date(at.getTime() - config.webhookDeliveryDays * DAY_MS);
      result.webhookDeliveries = await inBatches(() => purgeSettledDeliveries(db, deliveriesBefore, n), result);
      const tombstonesBefore = new Date(at.getTime() - config.tombstoneHours * 3_600_000);
      result.tombstones = await inBatches(() => purgeTombstones(db, tombstonesBefore, n), result);
      const deadLettersBefore = new Date(at.getTime() - config.deadLetterDays * DAY_MS);
      result.deadLetters = await inBatches(() => purgeDeadLetters(db, deadLettersBefore, at, n), result);
      await purgePastSalts(db, at);
      // what stayed unidentified past its window goes; identity evidence not renewed lapses
      const pendingBefore = new Date(at.getTime() - identity.pendingDays * DAY_MS);
      result.pendingEvents = await inBatches(() => purgePending(db, pendingBefore, n), result);
      if (identity.identities) {
        // identities past their time stop attributing: the ranges of those rows, and of the evidence that lapses (recomputed)
        const lapsing = await db.$queryRaw<{ scope: string; range: string }[]>`SELECT DISTINCT scope, "range" FROM "NetworkIdentity" WHERE "expiresAt" <= ${at}`;
        const expired = await identity.identities.expire(n);
        result.identityEvidence = expired.evidence;
        result.identities = expired.identities;
        // what they attributed goes back to pending at once, wherever those visits are
        const withdrawn = await withdrawInRanges(db, identity.identities, [...lapsing, ...identity.identities.takeRecomputed()], identity.onLeadsRemoved);
        result.withdrawnVisits = withdrawn.visits;
      }
      return result;
    },
  };
}

/** The `retention` job kind; `schedule` queues the day's job (any number of processes: one job per day). */
export function registerRetentionJobs(db: Db, jobs: JobQueue, config: RetentionConfig, logger: Logger, now: () => Date, identity?: IdentityRetention) {
  const rules = retention(db, config, now, identity);
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
