// The ingest writer of this process: drains the queue in batches (one transaction each), then
// settles pending contact enrichments. It runs on a timer and when the collector wakes it; any
// number of processes may run one against the same database.
import type { Db } from "../db/database.ts";
import type { Logger } from "../logging.ts";
import { type DomainEvidence, mergedEvidence } from "./domain-evidence.ts";
import { enrichment, type EnrichmentDeps, type EnrichmentOutcome } from "./enrichment.ts";
import { type IngestResult, type WriterHooks } from "./ingest.ts";
import { type IngestLog, tableLog } from "./ingest-log.ts";
import { reportWriterLag, trackingMetrics } from "./metrics.ts";

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

export function createIngestWriter(db: Db, deps: EnrichmentDeps, logger: Logger, options: WriterOptions = {}): IngestWriter {
  const { batchSize = 1000, pollMs = 250, transactions = 1, onIngested, onEnriched, evidence, onCommitted, log = tableLog(db) } = options;
  const enrich = enrichment(db, deps);
  let running: Promise<IngestResult[]> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  // the lag gauge asks the log when /metrics is scraped (other writers' batches in hand included)
  reportWriterLag(() => log.oldestUnwritten());

  // Domain evidence (reverse DNS look-ups of up to seconds each) is off the write path: the
  // batches' evidence waits, merged, for the one settling under way, and writing never waits
  // for it; drain() (tests, the CLI) ends once it has settled.
  let unsettled: IngestResult | undefined;
  let settling: Promise<void> | undefined;
  function settleLater(result: IngestResult): void {
    if (!evidence) return;
    unsettled = unsettled ? mergedEvidence(unsettled, result) : result;
    settling ??= settleAll().finally(() => (settling = undefined));
  }
  async function settleAll(): Promise<void> {
    while (unsettled) {
      const next = unsettled;
      unsettled = undefined;
      await evidence!.settle(next).catch((error: Error) => logger.warn("domain evidence of written batches failed", { error: error.message }));
    }
  }
  async function evidenceSettled(): Promise<void> {
    while (settling) await settling;
  }

  /** Writes batches until the log is empty; the first lane settles pending enrichments after each of its batches. */
  async function writeLane(results: IngestResult[], enriches: boolean): Promise<void> {
    let limit = batchSize;
    for (;;) {
      const started = performance.now();
      const result = await log.writeBatch(limit, { onIngested });
      // a full batch means a backlog: fewer, bigger transactions until it is gone
      limit = result && result.events >= limit ? Math.min(limit * 2, batchSize * MAX_BATCH_GROWTH) : batchSize;
      if (result) {
        trackingMetrics.writerBatchDuration.observe((performance.now() - started) / 1000);
        trackingMetrics.writerBatchEvents.observe(result.events);
        results.push(result);
        onCommitted?.();
        settleLater(result);
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
      write()
        .catch((error: Error) => logger.error("ingest writer failed; the events stay queued", { error: error.message }))
        .finally(() => schedule(pollMs));
    }, delay);
    timer.unref();
  }

  return {
    drain,
    wake: () => {
      if (!running) schedule(0);
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running?.catch(() => {});
      await evidenceSettled();
      reportWriterLag(undefined);
    },
  };
}

/** A writer that is already polling. */
export function startIngestWriter(db: Db, deps: EnrichmentDeps, logger: Logger, options: WriterOptions = {}): IngestWriter {
  const writer = createIngestWriter(db, deps, logger, options);
  writer.wake();
  return writer;
}
