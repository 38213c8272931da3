// What waits in the ingest log, for a data subject's export (services/privacy.ts): events the
// collector accepted and no writer has written yet, read without taking them from the log: the
// queue table (one query over the dataset's queued batches) and, with INGEST_LOG_URL, the
// JetStream stream (waiting-in-stream.ts, loaded only then), and the dead-letter table (set aside,
// waiting for an operator's replay: dead-letters.ts). Events an erasure reached are left
// out as the writers leave them out (erasure-tombstones.ts).
import type { IngestLogConfig } from "../../config.ts";
import type { Db } from "../../db/database.ts";
import { deadLetteredEventsOf } from "./dead-letters.ts";
import { notErased } from "../write/erasure-tombstones.ts";
import { jsonList, queuedFormOf, type Subject } from "../write/erasure.ts";
import { type QueuedBatch, rowsOf } from "../collect/events.ts";
import type { VisitorsByDataset, Waiting } from "./waiting-in-stream.ts";

export type { VisitorsByDataset, Waiting };

/**
 * The subject's events waiting in the log of the datasets in `visitors` (the queue table, and the
 * stream when `stream` is given), at most `limit`, oldest first.
 */
export async function waitingEventsOf(
  db: Db,
  stream: IngestLogConfig | undefined,
  accountId: string,
  visitors: VisitorsByDataset,
  subject: Subject,
  limit: number,
): Promise<Waiting> {
  const parts: Waiting[] = [];
  for (const [datasetId, ids] of visitors) parts.push(await queuedEventsOf(db, datasetId, [...ids], subject, limit));
  if (stream) {
    const { streamEventsOf } = await import("./waiting-in-stream.ts");
    parts.push(await streamEventsOf(db, stream, accountId, visitors, subject));
  }
  parts.push({ rows: await deadLetteredEventsOf(db, accountId, visitors, subject), complete: true });
  const rows = [...(await notErased(db, parts.flatMap((p) => p.rows)))].sort((a, b) => a.receivedAt.getTime() - b.receivedAt.getTime());
  return { rows: rows.slice(0, limit), complete: rows.length <= limit && parts.every((p) => p.complete) };
}

/** The subject's events in the dataset's queued batches (`visitorIds`: the subject's visitors), oldest first; at most `limit`. */
async function queuedEventsOf(db: Db, datasetId: string, visitorIds: string[], subject: Subject, limit: number): Promise<Waiting> {
  const batches = await db.$queryRaw<{ batch: QueuedBatch }[]>`
    SELECT jsonb_set(q.batch, '{events}', jsonb_agg(e ORDER BY i)) AS batch
    FROM "IngestQueue" q, jsonb_array_elements(q.batch->'events') WITH ORDINALITY AS x(e, i)
    WHERE q."datasetId" = ${datasetId} AND (e->>'visitorId' IN ${jsonList(visitorIds)} OR ${queuedFormOf(subject)})
    GROUP BY q.id ORDER BY q.id LIMIT ${limit + 1}`;
  const rows = batches.flatMap((b) => rowsOf(b.batch));
  return { rows: rows.slice(0, limit), complete: rows.length <= limit };
}
