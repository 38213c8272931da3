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
import type { DeadLetterNotice } from "./log-interface.ts";
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

export interface IngestWriter {
  /** Writes until the queue is empty and pending enrichments are settled; what it wrote. */
  drain(): Promise<IngestResult[]>;
  /** Asks for a drain soon (the collector calls it after queueing). */
  wake(): void;
  /** Finishes the batch in hand, then stops. */
  stop(): Promise<void>;
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
function outages(logger: Logger, pollMs: number) {
  let since: number | undefined;
  let failures = 0;
  return {
    get ongoing() {
      return since !== undefined;
    },
    failed(error: unknown): number {
      failures++;
      if (since === undefined) {
        since = Date.now();
        const fields = { error: faultText(error) };
        if (isTransientFault(error) || error instanceof Unavailable) logger.warn("ingest writer waits: the database or the ingest log is unavailable; the events stay queued and are retried", fields);
        else logger.error("ingest writer failed; the events stay queued and are retried", fields);
      }
      return Math.min(pollMs * 2 ** failures, MAX_BACKOFF_MS);
    },
    succeeded(): void {
      if (since === undefined) return;
      logger.info("ingest writer writes again", { afterSeconds: Math.round((Date.now() - since) / 1000), failedTries: failures });
      since = undefined;
      failures = 0;
    },
  };
}

// Why long: a factory whose loop and methods share the writer's state (batch running, timer, stop, outage); issue 37 item 4 makes it a module.
export function createIngestWriter(db: Db, deps: EnrichmentDeps, logger: Logger, options: WriterOptions = {}): IngestWriter {
  const { batchSize = 1000, pollMs = 250, transactions = 1, onIngested, identify, onEnriched, evidence, onCommitted, log = tableLog(db), maxAttempts, pending } = options;
  const enrich = enrichment(db, deps);
  let running: Promise<IngestResult[]> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  const outage = outages(logger, pollMs);

  // the gauges ask the log and the database when /metrics is scraped (other writers' batches in hand included)
  reportWriterGauges({ oldestUnwritten: () => log.oldestUnwritten(), deadLetters: () => countDeadLetters(db) });

  function deadLettered(letter: DeadLetterNotice): void {
    trackingMetrics.deadLetteredEvents.inc(letter.events);
    logger.error("ingest batch set aside into the dead-letter table: replay or drop it (npm run admin -- dead-letters list)", { ...letter });
  }
  const writeOptions = { onIngested, identify, maxAttempts, onDeadLettered: deadLettered };

  // Domain evidence (reverse DNS look-ups of up to seconds each) is off the write path: the
  // batches' evidence waits, merged, for the one settling under way, and writing never waits
  // for it; drain() (tests, the CLI) ends once it has settled.
  const settling = offWritePath(mergedEvidence, (next: IngestResult) =>
    evidence!.settle(next).catch((error: Error) => logger.warn("domain evidence of written batches failed", { error: error.message })));
  const settleLater = (result: IngestResult) => {
    if (evidence) settling.add(result);
  };
  // Identity evidence of the batches' shared-network events and the backfill it allows: off the
  // write path as well, the notes of several batches merged while one learning step runs.
  const learning = offWritePath(mergedNotes, (next: PendingNote[]) =>
    pending!.learn(next).catch((error: Error) => logger.warn("identity evidence of written batches failed", { error: error.message })));
  const learnLater = (result: IngestResult) => {
    if (pending && result.pending.length) learning.add(result.pending);
  };
  async function evidenceSettled(): Promise<void> {
    while (settling.running || learning.running) await (settling.running ?? learning.running);
  }

  /** Writes batches until the log is empty; the first lane settles pending enrichments after each of its batches. */
  async function writeLane(results: IngestResult[], enriches: boolean): Promise<void> {
    let limit = batchSize;
    for (;;) {
      const started = performance.now();
      const result = await log.writeBatch(limit, writeOptions);
      // a full batch means a backlog: fewer, bigger transactions until it is gone
      limit = result && result.events >= limit ? Math.min(limit * 2, batchSize * MAX_BATCH_GROWTH) : batchSize;
      if (result) {
        trackingMetrics.writerBatchDuration.observe((performance.now() - started) / 1000);
        trackingMetrics.writerBatchEvents.observe(result.events);
        results.push(result);
        onCommitted?.();
        settleLater(result);
        learnLater(result);
      }
      const outcomes = enriches ? await enrich.enrichPending() : [];
      if (outcomes.length) await onEnriched?.(outcomes);
      if (!result && !outcomes.length) return;
    }
  }

  async function writeUntilEmpty(): Promise<IngestResult[]> {
    const results: IngestResult[] = [];
    const lanes = await Promise.allSettled(Array.from({ length: transactions }, (_, lane) => writeLane(results, lane === 0)));
    const failed = lanes.find((lane) => lane.status === "rejected");
    if (failed) throw failed.reason;
    return results;
  }

  /** One writer loop at a time in this process: a second caller waits for the one running, then writes again. */
  async function write(): Promise<IngestResult[]> {
    while (running) await running.catch(() => {});
    running = writeUntilEmpty();
    try {
      return await running;
    } finally {
      running = undefined;
    }
  }

  async function drain(): Promise<IngestResult[]> {
    const results = await write();
    await evidenceSettled();
    return results;
  }

  function schedule(delay: number): void {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      write().then(
        () => {
          outage.succeeded();
          schedule(pollMs);
        },
        (error: unknown) => schedule(outage.failed(error)),
      );
    }, delay);
    timer.unref();
  }

  return {
    drain,
    wake: () => {
      // during an outage the backoff's pause holds: the collector's wake-ups would not shorten it
      if (!running && !outage.ongoing) schedule(0);
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running?.catch(() => {});
      await evidenceSettled();
      reportWriterGauges(undefined);
    },
  };
}

/**
 * Work that runs after the write, one step at a time: what arrives while a step runs is merged
 * and waits for the next step; `running` is the steps under way (undefined when idle).
 */
function offWritePath<T>(merge: (a: T, b: T) => T, step: (next: T) => Promise<unknown>) {
  let waiting: T | undefined;
  let running: Promise<void> | undefined;
  async function runAll(): Promise<void> {
    while (waiting !== undefined) {
      const next = waiting;
      waiting = undefined;
      await step(next);
    }
  }
  return {
    add(item: T): void {
      waiting = waiting === undefined ? item : merge(waiting, item);
      running ??= runAll().finally(() => (running = undefined));
    },
    get running() {
      return running;
    },
  };
}
