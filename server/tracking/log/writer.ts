// The ingest writer of this process: drains the queue in batches (one transaction each), then
// settles pending contact enrichments. It runs on a timer and when the collector wakes it; any
// number of processes may run one against the same database. A transient fault (the database or
// the log unavailable) is a wait: logged once per outage at warn, retried with a bounded backoff;
// a batch the database refuses is isolated and, after its tries, set aside (isolation.ts): an error
// for an operator to act on.
import type { Db } from "../../db/database.ts";
import { faultText, isTransientFault } from "../../db/errors.ts";
import { Unavailable } from "../../domain/errors.ts";
import type { Logger } from "../../logging.ts";
import { countDeadLetters } from "./dead-letters.ts";
import { type DomainEvidence, mergedEvidence } from "../write/domain-evidence.ts";
import { enrichment, type EnrichmentDeps, type EnrichmentOutcome } from "../write/enrichment.ts";
import type { IngestResult, WriterHooks } from "../write/write-result.ts";
import { mergedNotes, type PendingAttribution } from "../write/pending.ts";
import type { PendingNote } from "../write/write-result.ts";
import { type IngestLog, tableLog } from "./ingest-log.ts";
import type { DeadLetterNotice, WriteOptions } from "./log-interface.ts";
import { reportWriterGauges, trackingMetrics } from "../collect/metrics.ts";

export interface WriterOptions extends WriterHooks {
  /** Events per transaction. */
  batchSize?: number;
  /** How often an idle writer looks at the queue. */
  pollMs?: number;
  /**
   * Batches written at once, each in its own transaction: the database's work for a batch runs on
   * one of its cores, so more than one keeps up with collectors that use several (the queue's
   * SKIP LOCKED and JetStream's consumer hand each a different batch; rows are locked in one order).
   */
  transactions?: number;
  /** Called after each batch's enrichment step with what it settled (contact.enriched events). */
  onEnriched?: (outcomes: EnrichmentOutcome[]) => Promise<void>;
  /** Organisation domains from each batch's evidence (e-mail domains, reverse DNS), after it commits. */
  evidence?: DomainEvidence;
  /** After each batch's transaction committed: what onIngested queued may run now (wakes the job queue). */
  onCommitted?: () => void;
  /** Where the events wait (default: the queue table of `db`). */
  log?: IngestLog;
  /** Tries of a batch the database refuses before it is set aside (INGEST_MAX_ATTEMPTS). */
  maxAttempts?: number;
  /** Identity evidence from each batch's events of shared networks, and the backfill of pending events, after it commits (pending.ts). */
  pending?: PendingAttribution;
}

/** How many times INGEST_BATCH_SIZE a batch may grow to while the log holds a backlog. */
const MAX_BATCH_GROWTH = 8;
/** The longest pause between tries while the database or the log is unavailable. */
const MAX_BACKOFF_MS = 5_000;

/**
 * Failed writes of one outage (from the first failure to the next success): logged once when it
 * begins (warn for a known transient fault, error for one not understood) and once when it ends,
 * with the pause before the next try doubling from `pollMs` up to MAX_BACKOFF_MS.
 */
class Outage {
  private since: number | undefined;
  private failures = 0;

  constructor(
    private readonly logger: Logger,
    private readonly pollMs: number,
  ) {}

  get ongoing(): boolean {
    return this.since !== undefined;
  }

  /** Counts a failed write; the pause before the next try. */
  failed(error: unknown): number {
    this.failures++;
    if (this.since === undefined) {
      this.since = Date.now();
      const fields = { error: faultText(error) };
      if (isTransientFault(error) || error instanceof Unavailable) this.logger.warn("ingest writer waits: the database or the ingest log is unavailable; the events stay queued and are retried", fields);
      else this.logger.error("ingest writer failed; the events stay queued and are retried", fields);
    }
    return Math.min(this.pollMs * 2 ** this.failures, MAX_BACKOFF_MS);
  }

  succeeded(): void {
    if (this.since === undefined) return;
    this.logger.info("ingest writer writes again", { afterSeconds: Math.round((Date.now() - this.since) / 1000), failedTries: this.failures });
    this.since = undefined;
    this.failures = 0;
  }
}

/**
 * Work that runs after the write, one step at a time: what arrives while a step runs is merged
 * and waits for the next step; `running` is the steps under way (undefined when idle).
 */
class OffWritePath<T> {
  private waiting: T | undefined;
  running: Promise<void> | undefined;

  constructor(
    private readonly merge: (a: T, b: T) => T,
    private readonly step: (next: T) => Promise<unknown>,
  ) {}

  add(item: T): void {
    this.waiting = this.waiting === undefined ? item : this.merge(this.waiting, item);
    this.running ??= this.runAll().finally(() => (this.running = undefined));
  }

  private async runAll(): Promise<void> {
    while (this.waiting !== undefined) {
      const next = this.waiting;
      this.waiting = undefined;
      await this.step(next);
    }
  }
}

/**
 * This process's writer of the ingest log `options.log` (default: the queue table of `db`), not
 * yet polling: `wake()` starts it, `drain()` writes what waits, `stop()` ends it.
 */
export class IngestWriter {
  private readonly log: IngestLog;
  private readonly batchSize: number;
  private readonly pollMs: number;
  private readonly enrich: ReturnType<typeof enrichment>;
  private readonly writeOptions: WriteOptions;
  private readonly outage: Outage;
  /** Domain evidence (reverse DNS look-ups of up to seconds each) of the written batches, merged, off the write path. */
  private readonly settling: OffWritePath<IngestResult>;
  /** Identity evidence of the batches' shared-network events and the backfill it allows, off the write path as well. */
  private readonly learning: OffWritePath<PendingNote[]>;
  /** The writer loop under way in this process. */
  private running: Promise<IngestResult[]> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    db: Db,
    deps: EnrichmentDeps,
    private readonly logger: Logger,
    private readonly options: WriterOptions = {},
  ) {
    const { batchSize = 1000, pollMs = 250, onIngested, identify, log = tableLog(db), maxAttempts, evidence, pending } = options;
    this.log = log;
    this.batchSize = batchSize;
    this.pollMs = pollMs;
    this.enrich = enrichment(db, deps);
    this.outage = new Outage(logger, pollMs);
    this.writeOptions = { onIngested, identify, maxAttempts, onDeadLettered: (letter) => this.deadLettered(letter) };
    this.settling = new OffWritePath(mergedEvidence, (next: IngestResult) =>
      evidence!.settle(next).catch((error: Error) => logger.warn("domain evidence of written batches failed", { error: error.message })));
    this.learning = new OffWritePath(mergedNotes, (next: PendingNote[]) =>
      pending!.learn(next).catch((error: Error) => logger.warn("identity evidence of written batches failed", { error: error.message })));
    // the gauges ask the log and the database when /metrics is scraped (other writers' batches in hand included)
    reportWriterGauges({ oldestUnwritten: () => log.oldestUnwritten(), deadLetters: () => countDeadLetters(db) });
  }

  /** Writes until the queue is empty and pending enrichments are settled, then waits for the evidence steps; what it wrote. */
  async drain(): Promise<IngestResult[]> {
    const results = await this.write();
    await this.evidenceSettled();
    return results;
  }

  /**
   * Asks for a drain soon (the collector calls it after queueing). A bound function: main.ts hands
   * it to the collector as it is. During an outage the backoff's pause holds: the collector's
   * wake-ups would not shorten it.
   */
  readonly wake = (): void => {
    if (!this.running && !this.outage.ongoing) this.schedule(0);
  };

  /** Finishes the batch in hand, then stops. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running?.catch(() => {});
    await this.evidenceSettled();
    reportWriterGauges(undefined);
  }

  private deadLettered(letter: DeadLetterNotice): void {
    trackingMetrics.deadLetteredEvents.inc(letter.events);
    this.logger.error("ingest batch set aside into the dead-letter table: replay or drop it (npm run admin -- dead-letters list)", { ...letter });
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.write().then(
        () => {
          this.outage.succeeded();
          this.schedule(this.pollMs);
        },
        (error: unknown) => this.schedule(this.outage.failed(error)),
      );
    }, delay);
    this.timer.unref();
  }

  /** One writer loop at a time in this process: a second caller waits for the one running, then writes again. */
  private async write(): Promise<IngestResult[]> {
    while (this.running) await this.running.catch(() => {});
    this.running = this.writeUntilEmpty();
    try {
      return await this.running;
    } finally {
      this.running = undefined;
    }
  }

  /** INGEST_WRITER_TRANSACTIONS lanes, each writing batches until the log is empty. */
  private async writeUntilEmpty(): Promise<IngestResult[]> {
    const results: IngestResult[] = [];
    const lanes = await Promise.allSettled(Array.from({ length: this.options.transactions ?? 1 }, (_, lane) => this.writeLane(results, lane === 0)));
    const failed = lanes.find((lane) => lane.status === "rejected");
    if (failed) throw failed.reason;
    return results;
  }

  /** Writes batches until the log is empty; the first lane settles pending enrichments after each of its batches. */
  private async writeLane(results: IngestResult[], enriches: boolean): Promise<void> {
    let limit = this.batchSize;
    for (;;) {
      const started = performance.now();
      const result = await this.log.writeBatch(limit, this.writeOptions);
      // a full batch means a backlog: fewer, bigger transactions until it is gone
      limit = result && result.events >= limit ? Math.min(limit * 2, this.batchSize * MAX_BATCH_GROWTH) : this.batchSize;
      if (result) {
        trackingMetrics.writerBatchDuration.observe((performance.now() - started) / 1000);
        trackingMetrics.writerBatchEvents.observe(result.events);
        results.push(result);
        this.committed(result);
      }
      const outcomes = enriches ? await this.enrich.enrichPending() : [];
      if (outcomes.length) await this.options.onEnriched?.(outcomes);
      if (!result && !outcomes.length) return;
    }
  }

  /** After a batch's commit: the job queue woken, the batch's evidence handed to the steps off the write path. */
  private committed(result: IngestResult): void {
    this.options.onCommitted?.();
    if (this.options.evidence) this.settling.add(result);
    if (this.options.pending && result.pending.length) this.learning.add(result.pending);
  }

  /** Waits until no evidence step runs (drain() ends there: tests, the CLI). */
  private async evidenceSettled(): Promise<void> {
    while (this.settling.running || this.learning.running) await (this.settling.running ?? this.learning.running);
  }
}
