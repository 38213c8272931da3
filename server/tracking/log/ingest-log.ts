// The ingest log: where the collector puts the events it accepted (it answers 202 only once the
// log has acknowledged them) and where the writers take them from. Two implementations:
// - the PostgreSQL queue table "IngestQueue" (the default, embedded or not): an append is one
//   INSERT of a row per request's batch; a writer's batch deletes what it writes in its own
//   transaction (queue-table.ts);
// - NATS JetStream (INGEST_LOG_URL=nats://...): an append is one publish acknowledged by the
//   stream; writers share one durable pull consumer and acknowledge after their commit
//   (jetstream-log.ts).
import type { IngestLogConfig } from "../../config.ts";
import type { Db, Sql } from "../../db/database.ts";
import type { Logger } from "../../logging.ts";
import type { QueuedBatch } from "../collect/events.ts";
import { entrySizer, type IngestLog } from "./log-interface.ts";
import { enqueue, writeBatch } from "./queue-table.ts";


export type { IngestLog };

/** Appends at once at most (more wait for one to finish), and events per grouped append. */
const APPENDS_IN_FLIGHT = 4;
const EVENTS_PER_APPEND = 1000;

/**
 * Group commit: requests that arrive while APPENDS_IN_FLIGHT appends are under way wait and go
 * to the log together, in one append (one INSERT, one published message), and each is answered
 * by that append's outcome: stored all together or not at all. Under load this spares the log a
 * round trip and a commit per request; a lone request goes at once.
 */
export function groupedAppends(append: IngestLog["append"]): (batch: QueuedBatch) => Promise<void> {
  interface Waiting {
    batch: QueuedBatch;
    settle: (error?: unknown) => void;
  }
  const waiting: Waiting[] = [];
  let inFlight = 0;

  function flush(): void {
    while (waiting.length && inFlight < APPENDS_IN_FLIGHT) {
      const group: Waiting[] = [];
      let events = 0;
      while (waiting.length && (!group.length || events + waiting[0]!.batch.events.length <= EVENTS_PER_APPEND)) {
        const next = waiting.shift()!;
        group.push(next);
        events += next.batch.events.length;
      }
      inFlight++;
      append(group.map((w) => w.batch)).then(
        () => group.forEach((w) => w.settle()),
        (error: unknown) => group.forEach((w) => w.settle(error ?? new Error("append failed"))),
      ).finally(() => {
        inFlight--;
        flush();
      });
    }
  }

  return (batch) =>
    new Promise<void>((resolve, reject) => {
      waiting.push({ batch, settle: (error) => (error ? reject(error) : resolve()) });
      flush();
    });
}

/** The PostgreSQL queue table of `db`; appends through `sql` (the driver, without Prisma) when given. */
export function tableLog(db: Db, sql?: Sql): IngestLog {
  const sizer = entrySizer();
  return {
    kind: "postgres",
    append: (batches) => enqueue(db, batches, sql),
    writeBatch: (limit, options) => writeBatch(db, sizer, limit, options),
    async oldestUnwritten() {
      // the queue's order (its key) is the order of acceptance
      const [row] = await db.$queryRaw<{ at: Date }[]>`SELECT "receivedAt" AS at FROM "IngestQueue" ORDER BY id LIMIT 1`;
      return row?.at;
    },
    close: async () => {},
  };
}

/** The log `config` names (JetStream), or the queue table of `db` when it names none. */
export async function openIngestLog(db: Db, config: IngestLogConfig | undefined, logger: Logger, sql?: Sql): Promise<IngestLog> {
  if (!config) return tableLog(db, sql);
  const { openJetStreamLog } = await import("./jetstream-log.ts");
  return openJetStreamLog(db, config, logger);
}
