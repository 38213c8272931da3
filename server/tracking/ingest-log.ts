// The ingest log: where the collector puts the events it accepted (it answers 202 only once the
// log has acknowledged them) and where the writers take them from. Two implementations:
// - the PostgreSQL queue table "IngestEvent" (the default, embedded or not): an append is one
//   multi-row INSERT; a writer's batch deletes what it writes in its own transaction (ingest.ts);
// - NATS JetStream (INGEST_LOG_URL=nats://...): an append is one publish acknowledged by the
//   stream; writers share one durable pull consumer and acknowledge after their commit
//   (jetstream-log.ts).
import type { Db } from "../db/database.ts";
import type { Logger } from "../logging.ts";
import { enqueue, type IngestResult, type QueueRow, writeBatch, type WriterHooks } from "./ingest.ts";

/** The JetStream stream and consumer (server/config.ts reads them from INGEST_LOG_*). */
export interface IngestLogConfig {
  /** INGEST_LOG_URL: the NATS servers (`nats://host:port`, several for a cluster). */
  servers: string[];
  /** INGEST_LOG_STREAM: the stream's name (created when missing). */
  stream: string;
  /** INGEST_LOG_SUBJECT: the one subject the collectors publish to. */
  subject: string;
  /** INGEST_LOG_CONSUMER: the writers' durable pull consumer. */
  consumer: string;
  /** INGEST_LOG_REPLICAS: copies of each message in a JetStream cluster (3 in production). */
  replicas: number;
  /** INGEST_LOG_MAX_AGE_HOURS: a message not written within this is dropped by the stream. */
  maxAgeHours: number;
  /** INGEST_LOG_MAX_BYTES: the stream's size bound; a full stream refuses new batches (503). */
  maxBytes: number;
  /** INGEST_LOG_ACK_WAIT_SECONDS: a batch not acknowledged within this goes to another writer. */
  ackWaitSeconds: number;
  /** INGEST_LOG_TIMEOUT_MS: the longest a collector waits for the stream's acknowledgement. */
  timeoutMs: number;
}

export interface IngestLog {
  readonly kind: "postgres" | "jetstream";
  /** Stores the rows durably; resolves once the log acknowledged them, else throws (Unavailable: a 503). */
  append(rows: readonly QueueRow[]): Promise<void>;
  /**
   * Writes up to about `limit` events in one transaction and only then acknowledges them to the
   * log; undefined when none was waiting. A batch written before is not written again.
   */
  writeBatch(limit: number, hooks: WriterHooks): Promise<IngestResult | undefined>;
  /** When the oldest event not yet written was accepted; undefined when none waits. */
  oldestUnwritten(): Promise<Date | undefined>;
  close(): Promise<void>;
}

/** The PostgreSQL queue table of `db`. */
export function tableLog(db: Db): IngestLog {
  return {
    kind: "postgres",
    append: (rows) => enqueue(db, rows),
    writeBatch: (limit, hooks) => writeBatch(db, limit, hooks),
    async oldestUnwritten() {
      // the queue's order (its key) is the order of acceptance
      const [row] = await db.$queryRaw<{ at: Date }[]>`SELECT "receivedAt" AS at FROM "IngestEvent" ORDER BY id LIMIT 1`;
      return row?.at;
    },
    close: async () => {},
  };
}

/** The log `config` names (JetStream), or the queue table of `db` when it names none. */
export async function openIngestLog(db: Db, config: IngestLogConfig | undefined, logger: Logger): Promise<IngestLog> {
  if (!config) return tableLog(db);
  const { openJetStreamLog } = await import("./jetstream-log.ts");
  return openJetStreamLog(db, config, logger);
}
