// A batch the database refuses, on either ingest log. A transaction of several batches that fails
// for the data (a constraint or a data exception: db/errors.ts writeFault) is not retried whole:
// its batches are written in halves, each half in a transaction of its own, down to the batches
// that fail alone, so the others are written (each exactly once: every half claims what it
// writes). A batch that fails alone is tried again up to INGEST_MAX_ATTEMPTS times in all (its
// count survives a restart: a column of the queue table, the delivery count of a JetStream
// message), then set aside whole into the dead-letter table "IngestDeadLetter" (dead-letters.ts,
// the table's only writer), for an operator to replay or drop. A transient fault (the database or
// the log unavailable, a lock timeout) is never counted: the writer waits it out.
import { writeFault, type WriteFault } from "../../db/errors.ts";
import { trackingMetrics } from "../collect/metrics.ts";

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
