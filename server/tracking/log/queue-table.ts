// The ingest log in the PostgreSQL queue table "IngestQueue" (the default, embedded or not). The
// collector answers once its batch is in the queue table (one row per request, grouped requests in
// one INSERT: durable); the writer drains the queue in transactions that each delete the batches
// they write, so an event is written exactly once even when a writer dies half-way (its
// transaction rolls back and the batches stay queued) or several writers run (FOR UPDATE SKIP
// LOCKED). What a batch writes: write/batch.ts. The only writer of "IngestQueue" (an erasure takes a
// subject's events out of it here too: eraseQueued).
import type { Db, Sql } from "../../db/database.ts";
import { faultText } from "../../db/errors.ts";
import { MalformedBatch, type QueuedBatch, type QueueRow, rowsOfEntry } from "../collect/events.ts";
import { writeEvents } from "../write/batch.ts";
import { jsonList, queuedFormOf, type Subject } from "../write/erasure.ts";
import { holdForWriting } from "../write/erasure-tombstones.ts";
import { EMPTY_RESULT, type IngestResult, mergedResults, type Tx, type WriterHooks } from "../write/write-result.ts";
import { insertDeadLetters, type NewDeadLetter } from "./dead-letters.ts";
import { DEFAULT_MAX_ATTEMPTS, eventsIn, failedWrite, isolate } from "./isolation.ts";
import { BATCH_TRANSACTION_MS, type DeadLetterNotice, type EntrySizer, type WriteOptions } from "./log-interface.ts";

const json = (value: unknown) => JSON.stringify(value);

const ENQUEUE = `
  INSERT INTO "IngestQueue" ("accountId", "datasetId", "receivedAt", "batch")
  SELECT b->>'accountId', b->>'datasetId', (b->>'at')::timestamptz, b FROM jsonb_array_elements($1::jsonb) AS b`;

/** Writes the collector's accepted batches into the queue in one statement (on the driver directly when given `sql`: the collector's hot path). */
export async function enqueue(db: Db, batches: readonly QueuedBatch[], sql?: Sql): Promise<void> {
  if (!batches.length) return;
  const values = [JSON.stringify(batches)];
  if (sql) await sql({ text: ENQUEUE, values });
  else await db.$executeRawUnsafe(ENQUEUE, ...values);
}

/** A queue row a writer took. */
interface ClaimedRow {
  id: string;
  receivedAt: Date;
  batch: unknown;
}

/** Claims up to `limit` queued batches (deleting them: the transaction's rollback puts them back). */
function claim(tx: Tx, limit: number): Promise<ClaimedRow[]> {
  return tx.$queryRaw<ClaimedRow[]>`
    DELETE FROM "IngestQueue" WHERE id IN (
      SELECT id FROM "IngestQueue" ORDER BY id LIMIT ${limit} FOR UPDATE SKIP LOCKED)
    RETURNING id::text AS id, "receivedAt", "batch"`;
}

/** Claims the queued batches of `ids` that no other writer holds (a part of a failed claim). */
function claimIds(tx: Tx, ids: readonly string[]): Promise<ClaimedRow[]> {
  return tx.$queryRaw<ClaimedRow[]>`
    DELETE FROM "IngestQueue" WHERE id IN (
      SELECT id FROM "IngestQueue" WHERE id IN (SELECT jsonb_array_elements_text(${json(ids)}::jsonb)::bigint)
      ORDER BY id FOR UPDATE SKIP LOCKED)
    RETURNING id::text AS id, "receivedAt", "batch"`;
}

/**
 * Writes claimed queue rows in the caller's transaction; a row that cannot be read as a batch is
 * set aside in the same transaction (it left the queue with the claim). The dead letters to
 * report once the transaction commits.
 */
async function writeClaimed(tx: Tx, claimed: readonly ClaimedRow[], hooks: WriterHooks): Promise<{ result: IngestResult; letters: DeadLetterNotice[] }> {
  const rows: QueueRow[] = [];
  const malformed: NewDeadLetter[] = [];
  for (const row of claimed) {
    try {
      rows.push(...rowsOfEntry(row.batch));
    } catch (error) {
      if (!(error instanceof MalformedBatch)) throw error;
      malformed.push(queueDeadLetter(row, 1, error.message));
    }
  }
  const letters = await insertDeadLetters(tx, malformed);
  return { result: rows.length ? await writeEvents(tx, rows, hooks) : EMPTY_RESULT, letters };
}

/** A queue row as a dead letter. */
function queueDeadLetter(row: ClaimedRow, attempts: number, error: string): NewDeadLetter {
  const batch = row.batch as Partial<Record<"accountId" | "datasetId", unknown>> | null;
  const text = (value: unknown) => (typeof value === "string" ? value : null);
  return {
    log: "postgres",
    messageId: null,
    accountId: text(batch?.accountId),
    datasetId: text(batch?.datasetId),
    receivedAt: row.receivedAt.toISOString(),
    attempts,
    error,
    payload: row.batch,
    events: eventsIn(row.batch),
  };
}

/** One transaction of the queue table: `take` claims the rows it writes. */
async function writeQueued(db: Db, take: (tx: Tx) => Promise<ClaimedRow[]>, options: WriteOptions, seen?: (rows: ClaimedRow[]) => void) {
  const { result, letters } = await db.$transaction(
    async (tx) => {
      // before the claim: an erasure (which deletes queued events) holds the lock first or waits for this batch
      await holdForWriting(tx);
      const claimed = await take(tx);
      seen?.(claimed);
      return claimed.length ? writeClaimed(tx, claimed, options) : { result: undefined, letters: [] };
    },
    { timeout: BATCH_TRANSACTION_MS },
  );
  letters.forEach((letter) => options.onDeadLettered?.(letter));
  return result;
}

/**
 * A queue row that failed alone for its data: the try counted on the row (its own statement,
 * after the rollback: every writer counts on the same row), and the row set aside whole once it
 * has failed `maxAttempts` times; until then the next claim tries it again.
 */
async function refusedQueued(db: Db, row: ClaimedRow, error: unknown, options: WriteOptions): Promise<void> {
  const [counted] = await db.$queryRaw<{ attempts: number }[]>`
    UPDATE "IngestQueue" SET attempts = attempts + 1 WHERE id = ${row.id}::bigint RETURNING attempts`;
  if (!counted || counted.attempts < (options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS)) return;
  const letter = queueDeadLetter(row, counted.attempts, faultText(error));
  // the row leaves the queue in the transaction that sets it aside; one another writer holds is left to it
  const [notice] = await db.$transaction(async (tx) => {
    const moved = await tx.$queryRaw<{ id: string }[]>`
      DELETE FROM "IngestQueue" WHERE id IN (SELECT id FROM "IngestQueue" WHERE id = ${row.id}::bigint FOR UPDATE SKIP LOCKED) RETURNING id`;
    return moved.length ? insertDeadLetters(tx, [letter]) : [];
  });
  if (notice) options.onDeadLettered?.(notice);
}

/**
 * Writes about `limit` queued events (whole batches) in one transaction; undefined when the queue
 * was empty. When the database refuses the data, the batches taken are written apart and the
 * culprit's try counted (isolation.ts); a transient fault is thrown, everything left queued.
 */
export async function writeBatch(db: Db, sizer: EntrySizer, limit: number, options: WriteOptions = {}): Promise<IngestResult | undefined> {
  let claimed: ClaimedRow[] = [];
  try {
    return await writeQueued(db, (tx) => claim(tx, sizer.entriesFor(limit)), options, (rows) => {
      claimed = rows;
      sizer.observe(rows.length, eventsIn(rows.map((r) => r.batch)));
    });
  } catch (error) {
    if (failedWrite(error) !== "permanent" || !claimed.length) throw error;
    const parts = await isolate(
      [...claimed].sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1)),
      (part) => writeQueued(db, (tx) => claimIds(tx, part.map((r) => r.id)), options),
      (row, cause) => refusedQueued(db, row, cause, options),
      error,
    );
    return mergedResults(parts) ?? EMPTY_RESULT;
  }
}

/**
 * Takes the subject's events out of the dataset's queued batches (a batch left without events
 * goes); how many events were taken.
 */
export async function eraseQueued(tx: Pick<Tx, "$queryRaw">, datasetId: string, visitorIds: string[], subject: Subject): Promise<number> {
  const [row] = await tx.$queryRaw<{ n: bigint }[]>`
    WITH hit AS (
      SELECT q.id, jsonb_agg(e ORDER BY i) FILTER (WHERE NOT erased) AS kept, count(*) FILTER (WHERE erased) AS n
      FROM "IngestQueue" q, jsonb_array_elements(q.batch->'events') WITH ORDINALITY AS x(e, i),
        LATERAL (SELECT (e->>'visitorId' IN ${jsonList(visitorIds)} OR ${queuedFormOf(subject)}) AS erased) m
      WHERE q."datasetId" = ${datasetId}
      GROUP BY q.id HAVING count(*) FILTER (WHERE erased) > 0),
    kept AS (UPDATE "IngestQueue" q SET batch = jsonb_set(q.batch, '{events}', hit.kept) FROM hit WHERE q.id = hit.id AND hit.kept IS NOT NULL),
    gone AS (DELETE FROM "IngestQueue" q USING hit WHERE q.id = hit.id AND hit.kept IS NULL)
    SELECT coalesce(sum(n), 0) AS n FROM hit`;
  return Number(row!.n);
}
