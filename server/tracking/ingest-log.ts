// The ingest log: where the collector puts the events it accepted (it answers 202 only once the
// log has acknowledged them) and where the writers take them from. Two implementations:
// - the PostgreSQL queue table "IngestEvent" (the default, embedded or not): an append is one
//   multi-row INSERT; a writer's batch deletes what it writes in its own transaction (ingest.ts);
// - NATS JetStream (INGEST_LOG_URL=nats://...): an append is one publish acknowledged by the
//   stream; writers share one durable pull consumer and acknowledge after their commit
//   (jetstream-log.ts).
import type { IngestLogConfig } from "../config.ts";
import type { Db } from "../db/database.ts";
import type { Logger } from "../logging.ts";
import { enqueue, type IngestLog, writeBatch } from "./ingest.ts";


export type { IngestLog };

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
