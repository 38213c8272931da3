// A batch the database refuses, on either ingest log. A transaction of several batches that fails
// for the data (a constraint or a data exception: db/errors.ts writeFault) is not retried whole:
// its batches are written in halves, each half in a transaction of its own, down to the batches
// that fail alone, so the others are written (each exactly once: every half claims what it
// writes). A batch that fails alone is tried again up to INGEST_MAX_ATTEMPTS times in all (its
// count survives a restart: a column of the queue table, the delivery count of a JetStream
// message), then set aside whole into the dead-letter table "IngestDeadLetter", for an operator to
// replay or drop (dead-letters.ts). A transient fault (the database or the log unavailable, a lock
// timeout) is never counted: the writer waits it out.
import type { Prisma } from "../../../generated/prisma/client.ts";
import { writeFault, type WriteFault } from "../../db/errors.ts";
import { trackingMetrics } from "../collect/metrics.ts";

type Tx = Prisma.TransactionClient;

/** A batch set aside: what the writer logs (no e-mail or IP address in it) and counts. */
export interface DeadLetterNotice {
  id: string;
  log: "postgres" | "jetstream";
  datasetId: string | null;
  events: number;
  attempts: number;
  error: string;
}

/** A row of "IngestDeadLetter" to insert. */
export interface NewDeadLetter {
  log: "postgres" | "jetstream";
  messageId: string | null;
  accountId: string | null;
  datasetId: string | null;
  receivedAt: string | null;
  attempts: number;
  error: string;
  /** What the log held (any JSON value). */
  payload: unknown;
  events: number;
}

/** How a writer handles a batch the database refuses. */
export interface RefusalPolicy {
  /** Tries of a batch alone before it is set aside (INGEST_MAX_ATTEMPTS); default 3. */
  maxAttempts?: number;
  /** After each batch set aside has committed. */
  onDeadLettered?: (notice: DeadLetterNotice) => void;
}

export const DEFAULT_MAX_ATTEMPTS = 3;

/** The fault of a failed write transaction, counted on /metrics (ingest_writer_failed_batches_total). */
export function failedWrite(error: unknown): WriteFault {
  const fault = writeFault(error);
  trackingMetrics.failedBatches.inc({ fault });
  return fault;
}

/**
 * After `entries` failed together for the data: writes them in halves (`write`, one transaction
 * each), down to the entries that fail alone (`refused`, which counts the try and sets the entry
 * aside at the bound). Throws the first transient fault: what is not written stays in the log.
 */
export async function isolate<E, R>(
  entries: readonly E[],
  write: (part: readonly E[]) => Promise<R | undefined>,
  refused: (entry: E, error: unknown) => Promise<void>,
  error: unknown,
): Promise<R[]> {
  const written: R[] = [];
  async function split(part: readonly E[], cause: unknown): Promise<void> {
    if (part.length === 1) return refused(part[0]!, cause);
    const middle = Math.ceil(part.length / 2);
    for (const half of [part.slice(0, middle), part.slice(middle)]) {
      try {
        const result = await write(half);
        if (result !== undefined) written.push(result);
      } catch (failure) {
        if (failedWrite(failure) !== "permanent") throw failure;
        await split(half, failure);
      }
    }
  }
  await split(entries, error);
  return written;
}

const DEAD_LETTER_COLUMNS = `"log", "messageId", "accountId", "datasetId", "receivedAt", "attempts", "error", "payload", "events"`;

/** Inserts dead letters (in the caller's transaction, with what set them aside); what was inserted. */
export async function insertDeadLetters(tx: Pick<Tx, "$queryRawUnsafe">, letters: readonly NewDeadLetter[]): Promise<DeadLetterNotice[]> {
  if (!letters.length) return [];
  return tx.$queryRawUnsafe<DeadLetterNotice[]>(
    `INSERT INTO "IngestDeadLetter" (${DEAD_LETTER_COLUMNS})
     SELECT r."log"::"IngestLogKind", r."messageId", r."accountId", r."datasetId", r."receivedAt", r."attempts", r."error", r."payload", r."events"
     FROM jsonb_to_recordset($1::jsonb) AS r("log" text, "messageId" text, "accountId" text, "datasetId" text, "receivedAt" timestamptz,
       "attempts" int, "error" text, "payload" jsonb, "events" int)
     RETURNING id::text AS id, "log"::text AS "log", "datasetId", "events", "attempts", "error"`,
    JSON.stringify(letters),
  );
}

/** Events in a log entry as far as it can be read (0 when it cannot). */
export function eventsIn(payload: unknown): number {
  const entries = Array.isArray(payload) ? payload : [payload];
  return entries.reduce<number>((n, entry) => {
    if (typeof entry !== "object" || entry === null) return n;
    if ("event" in entry) return n + 1;
    const events = (entry as { events?: unknown }).events;
    return n + (Array.isArray(events) ? events.length : 0);
  }, 0);
}
