// The one durable job mechanism for background work (mail, digests, webhooks, ...): jobs are rows
// of the Job table. A worker claims a due job with one conditional UPDATE whose target row is
// chosen FOR UPDATE SKIP LOCKED, taking a lease (a fresh token and an expiry) that it renews while
// the handler runs. Every later write is conditional on that token, so a worker that lost its lease
// changes nothing; a job whose lease ran out (its process was SIGKILLed) is due again and claimed
// by any process. Several processes on one database never run a job twice at the same time.
// Delivery is at least once: a handler may run again after a crash, so handlers are idempotent.
// The same statements run on PGlite and PostgreSQL (the generalised certificate-job design; see
// README "Background jobs").
import { randomBytes, randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { Prisma, type PrismaClient } from "../../generated/prisma/client.ts";
import { logAtLevelOf, waits } from "../db/waits.ts";
import { type Logger, redact } from "../logging.ts";

export interface Job {
  id: bigint;
  kind: string;
  payload: unknown;
  /** 1-based: the attempt this run is. */
  attempt: number;
}
export type JobHandler = (job: Job) => Promise<void>;

/** Run the job again at `at` (a Retry-After); counts as an attempt. */
export class RetryAt extends Error {
  constructor(
    public at: Date,
    message?: string,
  ) {
    super(message ?? `retry at ${at.toISOString()}`);
    this.name = "RetryAt";
  }
}

/** No more attempts: the job is dead at once (a webhook answered 410). */
export class GiveUp extends Error {
  constructor(message?: string) {
    super(message ?? "gave up");
    this.name = "GiveUp";
  }
}

export interface JobKindOptions {
  maxAttempts: number;
  /** Delay after failed attempt n (1-based); the queue adds ±20 % jitter unless `jitter` is false. */
  backoffMs: (attempt: number) => number;
  jitter?: boolean;
  /** How long a claim holds the job without renewal (default 60 s; renewed every third of it). */
  leaseMs?: number;
  /** Jobs of this kind one queue runs at the same time (default 1). */
  concurrency?: number;
  /** Replace the payload by null once the job is done or dead (it holds addresses, links, bodies). */
  forgetPayload?: boolean;
  /**
   * Called once the job is dead, whether its handler failed for the last time or the queue gave
   * up on it without running it again (its last attempt died with its process): where the kind
   * keeps state of its own (a webhook delivery), it settles it here.
   */
  onDead?: (job: { id: bigint; kind: string; payload: unknown }) => Promise<void>;
}

/** A job to queue: its kind's handler gets `payload`; not before `runAt` (default now); at most one per `dedupeKey`. */
export interface NewJob {
  kind: string;
  payload: unknown;
  runAt?: Date;
  dedupeKey?: string;
}

export type JobState = "queued" | "running" | "done" | "dead";
type Client = Prisma.TransactionClient | PrismaClient;

interface Registered {
  handler: JobHandler;
  options: Required<Omit<JobKindOptions, "onDead">> & Pick<JobKindOptions, "onDead">;
  inFlight: number;
}

interface Claimed {
  id: bigint;
  kind: string;
  payload: string;
  attempts: number;
  leaseToken: string;
}

const DEFAULT_LEASE_MS = 60_000;
const ERROR_LIMIT = 500;

/** A failure's message for the lastError column and the log: no addresses, bounded. */
export function errorText(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return redact(text).slice(0, ERROR_LIMIT);
}

/** Deletes at most `limit` finished jobs (done or dead) that finished before `before` (the retention job); how many. */
export function purgeFinishedJobs(db: Pick<PrismaClient, "$executeRaw">, before: Date, limit: number): Promise<number> {
  return db.$executeRaw`DELETE FROM "Job" WHERE id IN (
    SELECT id FROM "Job" WHERE state IN ('done', 'dead') AND "finishedAt" < ${before} LIMIT ${limit})`;
}


/**
 * The only code that reads or writes the Job table is here (and the retention job of server/tracking/privacy/retention.ts).
 * It is not pg-boss 10: no lease renewal there (test/jobs-pgboss.test.ts, docs/jobs-mail-webhooks.md).
 */
export class JobQueue {
  /** How often an idle queue looks for due jobs (JOB_POLL_MS, server/config.ts). */
  private readonly pollMs: number;
  private readonly now: () => Date;
  private readonly workerId = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  private readonly kinds = new Map<string, Registered>();
  private readonly inHand = new Set<Promise<void>>();
  private started = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private again = false;
  // a database that does not answer (the embedded one busy starting, a restart) is waited out
  private readonly claimWait: ReturnType<typeof waits>;

  constructor(
    private readonly db: PrismaClient,
    private readonly logger: Logger,
    options: { pollMs: number; now?: () => Date },
  ) {
    this.pollMs = options.pollMs;
    this.now = options.now ?? (() => new Date());
    this.claimWait = waits(logger, "job queue", "job queue could not claim");
  }

  register(kind: string, handler: JobHandler, kindOptions: JobKindOptions): void {
    this.kinds.set(kind, {
      handler,
      options: {
        maxAttempts: kindOptions.maxAttempts,
        backoffMs: kindOptions.backoffMs,
        jitter: kindOptions.jitter ?? true,
        leaseMs: kindOptions.leaseMs ?? DEFAULT_LEASE_MS,
        concurrency: kindOptions.concurrency ?? 1,
        onDead: kindOptions.onDead,
        forgetPayload: kindOptions.forgetPayload ?? false,
      },
      inFlight: 0,
    });
  }

  /**
   * Inside the caller's transaction when `tx` is one: the job exists iff the caller's write
   * commits, and the caller calls `wake()` after its commit (on the queue's own client the job
   * is committed at once and the queue wakes itself). dedupeKey unique: a second enqueue with the
   * same key is a no-op.
   */
  async enqueue(tx: Client, job: NewJob): Promise<void> {
    await this.enqueueMany(tx, [job]);
  }

  /** As `enqueue`, many jobs in one statement; how many were new (not already queued under their dedupeKey). */
  async enqueueMany(tx: Client, jobs: readonly NewJob[]): Promise<number> {
    if (!jobs.length) return 0;
    const at = this.now();
    const rows = jobs.map(
      (job) => Prisma.sql`(${job.kind}, ${JSON.stringify(job.payload ?? null)}::jsonb, ${job.runAt ?? at}, ${job.dedupeKey ?? null})`,
    );
    const inserted = await tx.$executeRaw(Prisma.sql`
      INSERT INTO "Job" ("kind", "payload", "runAfter", "dedupeKey") VALUES ${Prisma.join(rows)}
      ON CONFLICT ("dedupeKey") DO NOTHING`);
    // On the queue's own client the jobs are committed now. A transaction client (which has a
    // `$transaction` too, so that cannot tell them apart) is the caller's: it wakes after its commit.
    if (tx === this.db) this.wake();
    return inserted;
  }

  /** The state of the job queued under `dedupeKey`; undefined when there is none (never queued, or deleted by retention). */
  async stateOf(tx: Client, dedupeKey: string): Promise<JobState | undefined> {
    const rows = await tx.$queryRaw<{ state: JobState }[]>(Prisma.sql`SELECT "state"::text AS "state" FROM "Job" WHERE "dedupeKey" = ${dedupeKey}`);
    return rows[0]?.state;
  }

  /**
   * Whether attempt `attempt` of job `id` is still running; when it is, the job's row stays locked
   * until `tx` ends, so that no other worker can claim the job meanwhile (a handler's writes made
   * conditional on holding its attempt).
   */
  async holdsAttempt(tx: Prisma.TransactionClient, id: bigint, attempt: number): Promise<boolean> {
    const held = await tx.$queryRaw<unknown[]>(Prisma.sql`
      SELECT 1 FROM "Job" WHERE "id" = ${id} AND "state" = 'running' AND "attempts" = ${attempt} FOR UPDATE`);
    return held.length > 0;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.stopped = false;
    this.logger.info("job queue started", { workerId: this.workerId, kinds: [...this.kinds.keys()] });
    this.schedule(0);
  }

  /** Claim now: after the commit of a transaction that enqueued (an enqueue on the queue's own client wakes by itself). */
  wake(): void {
    this.schedule(0);
  }

  /** Stops claiming, finishes the jobs in hand (at most `graceMs`, default 10 s), then resolves. */
  async stop(graceMs = 10_000): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.ticking;
    // a job still running after the grace is left to its lease: another process takes it over
    let grace: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.inHand]), new Promise((resolve) => (grace = setTimeout(resolve, graceMs)))]);
    clearTimeout(grace);
    this.started = false;
  }

  /** Tests: claims and runs (one at a time) until nothing registered is due. */
  async drain(): Promise<void> {
    for (;;) {
      let claimed = 0;
      for (const [kind, registered] of this.kinds) {
        const job = await this.claim(kind, registered.options.leaseMs);
        if (!job) continue;
        claimed++;
        await this.run(job, registered);
      }
      if (!claimed) {
        await Promise.allSettled([...this.inHand]);
        return;
      }
    }
  }

  private async claim(kind: string, leaseMs: number): Promise<Claimed | undefined> {
    const at = this.now();
    const leaseToken = `${this.workerId}/${randomUUID()}`;
    const until = new Date(at.getTime() + leaseMs);
    // Due: queued and its time has come, or running under a lease that ran out (a dead worker).
    const rows = await this.db.$queryRaw<Omit<Claimed, "leaseToken">[]>(Prisma.sql`
      UPDATE "Job" SET "state" = 'running', "leaseToken" = ${leaseToken}, "leaseUntil" = ${until},
        "attempts" = "attempts" + 1, "startedAt" = ${at}
      WHERE "id" = (
        SELECT "id" FROM "Job"
        WHERE "kind" = ${kind}
          AND (("state" = 'queued' AND "runAfter" <= ${at}) OR ("state" = 'running' AND "leaseUntil" < ${at}))
        ORDER BY "runAfter", "id"
        LIMIT 1
        FOR UPDATE SKIP LOCKED)
      AND (("state" = 'queued' AND "runAfter" <= ${at}) OR ("state" = 'running' AND "leaseUntil" < ${at}))
      RETURNING "id", "kind", "payload"::text AS "payload", "attempts"`);
    const row = rows[0];
    return row ? { ...row, id: BigInt(row.id), attempts: Number(row.attempts), leaseToken } : undefined;
  }

  /** A write of the lease holder; false when the job is no longer this worker's. */
  private async asHolder(job: Claimed, set: Prisma.Sql): Promise<boolean> {
    const count = await this.db.$executeRaw(Prisma.sql`UPDATE "Job" SET ${set} WHERE "id" = ${job.id} AND "leaseToken" = ${job.leaseToken}`);
    return count === 1;
  }

  private finished(state: "done" | "dead", lastError: string | null, registered: Registered): Prisma.Sql {
    return Prisma.sql`"state" = ${state}::"JobState", "leaseToken" = NULL, "leaseUntil" = NULL, "finishedAt" = ${this.now()}, "lastError" = ${lastError}${
      registered.options.forgetPayload ? Prisma.sql`, "payload" = 'null'::jsonb` : Prisma.empty
    }`;
  }

  private async markDead(job: Claimed, registered: Registered, message: string): Promise<void> {
    if (!(await this.asHolder(job, this.finished("dead", message, registered)))) return; // no longer ours
    this.logger.warn("job dead", { jobId: String(job.id), kind: job.kind, attempt: job.attempts, error: message });
    await registered.options.onDead?.({ id: job.id, kind: job.kind, payload: JSON.parse(job.payload) });
  }

  private async settle(job: Claimed, registered: Registered, error: unknown): Promise<void> {
    const fields = { jobId: String(job.id), kind: job.kind, attempt: job.attempts };
    const message = errorText(error);
    const last = job.attempts >= registered.options.maxAttempts;
    if (error instanceof GiveUp || last) {
      await this.markDead(job, registered, message);
      return;
    }
    let runAfter: Date;
    if (error instanceof RetryAt) runAfter = error.at;
    else {
      const base = Math.max(0, registered.options.backoffMs(job.attempts));
      const factor = registered.options.jitter ? 0.8 + Math.random() * 0.4 : 1;
      runAfter = new Date(this.now().getTime() + Math.round(base * factor));
    }
    await this.asHolder(job, Prisma.sql`"state" = 'queued', "leaseToken" = NULL, "leaseUntil" = NULL, "runAfter" = ${runAfter}, "lastError" = ${message}`);
    this.logger.warn("job will be retried", { ...fields, runAfter: runAfter.toISOString(), error: message });
  }

  private async run(job: Claimed, registered: Registered): Promise<void> {
    const { leaseMs, maxAttempts } = registered.options;
    const fields = { jobId: String(job.id), kind: job.kind, attempt: job.attempts };
    if (job.attempts > maxAttempts) {
      // its last attempt died with its process
      await this.markDead(job, registered, "interrupted too often");
      return;
    }
    const heartbeat = setInterval(() => {
      const until = new Date(this.now().getTime() + leaseMs);
      this.asHolder(job, Prisma.sql`"leaseUntil" = ${until}`).then(
        (held) => held || this.logger.warn("job lease lost", fields),
        (error: unknown) => logAtLevelOf(error, this.logger, "job lease renewal failed", { ...fields, error: errorText(error) }),
      );
    }, Math.max(leaseMs / 3, 10));
    try {
      await registered.handler({ id: job.id, kind: job.kind, payload: JSON.parse(job.payload), attempt: job.attempts });
      clearInterval(heartbeat);
      if (await this.asHolder(job, this.finished("done", null, registered))) this.logger.debug("job done", fields);
      else this.logger.warn("job finished after its lease was lost", fields);
    } catch (error) {
      clearInterval(heartbeat);
      await this.settle(job, registered, error);
    } finally {
      clearInterval(heartbeat);
    }
  }

  /** One pass: claims what the free slots allow and starts it; returns the number claimed. */
  private async claimRound(): Promise<number> {
    let claimed = 0;
    for (const [kind, registered] of this.kinds) {
      while (!this.stopped && registered.inFlight < registered.options.concurrency) {
        const job = await this.claim(kind, registered.options.leaseMs);
        if (!job) break;
        claimed++;
        registered.inFlight++;
        const done: Promise<void> = this.run(job, registered)
          .catch((error: unknown) =>
            logAtLevelOf(error, this.logger, "job could not record its outcome", { jobId: String(job.id), kind, error: errorText(error) }),
          )
          .finally(() => {
            registered.inFlight--;
            this.inHand.delete(done);
            if (this.started && !this.stopped) this.wake();
          });
        this.inHand.add(done);
      }
    }
    return claimed;
  }

  private schedule(delay: number): void {
    if (this.stopped || !this.started) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(this.tick, delay);
  }

  /** An arrow property: setTimeout calls it unbound. */
  private readonly tick = (): void => {
    if (this.stopped) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = this.claimRound()
      .then(
        () => this.claimWait.succeeded(),
        (error: unknown) => this.claimWait.failed(error),
      )
      .then(() => {
        this.ticking = undefined;
        if (this.again) {
          this.again = false;
          this.schedule(0);
        } else this.schedule(this.pollMs);
      });
  };
}
