// What every ingest log implements (IngestLog: the queue table of log/queue-table.ts, JetStream
// of log/jetstream-log.ts) and what they share when they write (the transaction's bound, how many
// entries make a batch, what a writer does with a batch set aside): a leaf, so that the logs and their chooser (ingest-log.ts) import it
// without an import circle.
import type { QueuedBatch } from "../collect/events.ts";
import type { IngestResult, WriterHooks } from "../write/write-result.ts";

/** Where accepted events wait until written: the queue table or JetStream (ingest-log.ts opens the one configured). */
export interface IngestLog {
  readonly kind: "postgres" | "jetstream";
  /**
   * Stores the batches durably; resolves once the log acknowledged them, else throws (Unavailable:
   * a 503). `id` names the append so that a repeat is stored once (JetStream's duplicate window).
   */
  append(batches: readonly QueuedBatch[], id?: string): Promise<void>;
  /**
   * Writes up to about `limit` events in one transaction and only then acknowledges them to the
   * log; undefined when none was waiting. A batch written before is not written again; one the
   * database refuses is written apart from the others and set aside after `maxAttempts`.
   */
  writeBatch(limit: number, options: WriteOptions): Promise<IngestResult | undefined>;
  /** When the oldest event not yet written was accepted; undefined when none waits. */
  oldestUnwritten(): Promise<Date | undefined>;
  close(): Promise<void>;
}

/** How long one batch's transaction may take. */
export const BATCH_TRANSACTION_MS = 60_000;

/** Log entries (queue rows, messages) assumed to carry at least this many events each: a request's batch. */
const EVENTS_PER_ENTRY = 10;

/**
 * How many entries of a log (queue rows, JetStream messages) make about `events` events, from
 * what the last ones taken carried: a request's batch, or more when collectors grouped requests.
 */
export function entrySizer() {
  let eventsPerEntry = EVENTS_PER_ENTRY;
  return {
    entriesFor: (events: number) => Math.max(1, Math.floor(events / eventsPerEntry)),
    observe(entries: number, events: number): void {
      if (entries) eventsPerEntry = Math.max(EVENTS_PER_ENTRY, events / entries);
    },
  };
}
export type EntrySizer = ReturnType<typeof entrySizer>;

/** A batch set aside: what the writer logs (no e-mail or IP address in it) and counts. */
export interface DeadLetterNotice {
  id: string;
  log: "postgres" | "jetstream";
  datasetId: string | null;
  events: number;
  attempts: number;
  error: string;
}

/** How a writer handles a batch the database refuses. */
export interface RefusalPolicy {
  /** Tries of a batch alone before it is set aside (INGEST_MAX_ATTEMPTS); default 3. */
  maxAttempts?: number;
  /** After each batch set aside has committed. */
  onDeadLettered?: (notice: DeadLetterNotice) => void;
}

/** What a writer's call writes with: its hooks and how it treats a batch the database refuses. */
export type WriteOptions = WriterHooks & RefusalPolicy;
