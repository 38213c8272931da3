// The operator's side of the dead-letter table "IngestDeadLetter" (what sets batches aside:
// isolation.ts): list what waits there, replay a batch into the ingest log once its cause is gone
// (a dataset restored, a bug fixed), or drop it. `npm run admin -- dead-letters list|replay|drop`.
import type { Config } from "../config.ts";
import type { Db } from "../db/database.ts";
import { Conflict, Invalid, NotFound } from "../domain/errors.ts";
import { MalformedBatch, type QueuedBatch, rowsOfEntry } from "./events.ts";
import { createLogger } from "../logging.ts";
import type { IngestLog } from "./ingest.ts";
import { openIngestLog } from "./ingest-log.ts";

/** A dead letter as listed (not its events: they hold visitors' data). */
export interface DeadLetter {
  id: string;
  log: "postgres" | "jetstream";
  messageId: string | null;
  accountId: string | null;
  datasetId: string | null;
  receivedAt: Date | null;
  failedAt: Date;
  attempts: number;
  events: number;
  error: string;
}

/** Batches waiting in the dead-letter table (the ingest_dead_letters gauge). */
export async function countDeadLetters(db: Db): Promise<number> {
  const [row] = await db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM "IngestDeadLetter"`;
  return row?.n ?? 0;
}

/** The oldest `limit` dead letters, oldest first. */
export function listDeadLetters(db: Db, limit = 100): Promise<DeadLetter[]> {
  return db.$queryRaw<DeadLetter[]>`
    SELECT id::text AS id, "log"::text AS "log", "messageId", "accountId", "datasetId", "receivedAt", "failedAt", attempts, events, error
    FROM "IngestDeadLetter" ORDER BY id LIMIT ${limit}`;
}

/** The dead letters as lines for a terminal. */
export function formatDeadLetters(letters: readonly DeadLetter[]): string {
  if (!letters.length) return "no dead letters";
  return letters
    .map((l) => `${l.id}  ${l.log}  ${l.datasetId ?? "-"}  ${l.events} events  ${l.attempts} tries  failed ${l.failedAt.toISOString()}  ${l.error}`)
    .join("\n");
}

/** A logged entry as the batch the log takes now: an older version's single-event row becomes a batch of one. */
function asBatch(entry: unknown): QueuedBatch {
  const [row] = rowsOfEntry(entry); // MalformedBatch when it is neither
  if (!(entry as { event?: unknown }).event) return entry as QueuedBatch;
  const { at, enrich, network, ...event } = row!.event;
  return { accountId: row!.accountId, datasetId: row!.datasetId, at, enrich, network, events: [event] };
}

/** What a dead letter's payload holds, as batches; refused when it cannot be read (drop it instead). */
function batchesOf(id: string, payload: unknown): QueuedBatch[] {
  try {
    return (Array.isArray(payload) ? payload : [payload]).map(asBatch);
  } catch (error) {
    if (error instanceof MalformedBatch) throw new Conflict(`dead letter ${id} cannot be replayed (${error.message}): drop it`);
    throw error;
  }
}

async function payloadOf(db: Db, id: string): Promise<unknown> {
  const [letter] = await db.$queryRaw<{ payload: unknown }[]>`SELECT payload FROM "IngestDeadLetter" WHERE id = ${id}::bigint`;
  if (!letter) throw new NotFound(`no dead letter ${id}`);
  return letter.payload;
}

const wholeNumber = (id: string) => {
  if (!/^\d{1,18}$/.test(id)) throw new Invalid(`a dead letter id is a whole number, not ${JSON.stringify(id)}`);
  return id;
};

/** A batch of a dataset that no longer exists would only be set aside again. */
async function refuseGoneDatasets(db: Db, id: string, batches: readonly QueuedBatch[]): Promise<void> {
  const named = batches.map((b) => ({ accountId: b.accountId, datasetId: b.datasetId }));
  const gone = await db.$queryRaw<{ datasetId: string }[]>`
    SELECT DISTINCT r."datasetId" FROM jsonb_to_recordset(${JSON.stringify(named)}::jsonb) AS r("accountId" text, "datasetId" text)
    WHERE NOT EXISTS (SELECT 1 FROM "Dataset" d WHERE d."accountId" = r."accountId" AND d.id = r."datasetId")`;
  if (gone.length) throw new Conflict(`dead letter ${id} cannot be replayed: dataset ${gone.map((g) => g.datasetId).join(", ")} no longer exists; drop it`);
}

/**
 * Puts a dead letter's batches back into the ingest log `log` (the one the writers read now), then
 * removes it from the dead-letter table: in that order, so that nothing is lost. A repeated replay
 * of the same letter (the removal failed) is dropped by JetStream's duplicate window within 2 minutes.
 * What it put back: the batches and their events.
 */
export async function replayDeadLetter(db: Db, log: Pick<IngestLog, "append">, id: string): Promise<{ batches: number; events: number }> {
  const batches = batchesOf(id, await payloadOf(db, wholeNumber(id)));
  await refuseGoneDatasets(db, id, batches);
  await log.append(batches, `dead-letter-${id}`);
  await db.$executeRaw`DELETE FROM "IngestDeadLetter" WHERE id = ${id}::bigint`;
  return { batches: batches.length, events: batches.reduce((n, b) => n + b.events.length, 0) };
}

/** Deletes a dead letter for good; false when there was none. */
export async function dropDeadLetter(db: Db, id: string): Promise<boolean> {
  return (await db.$executeRaw`DELETE FROM "IngestDeadLetter" WHERE id = ${wholeNumber(id)}::bigint`) > 0;
}

export type DeadLetterAction = "list" | "replay" | "drop";

/** An operator command (scripts/admin.ts): its data (for --json) and its text. */
export async function deadLetterCommand(
  db: Db,
  config: Pick<Config, "ingestLog" | "logLevel">,
  action: DeadLetterAction,
  { id = "", limit }: { id?: string; limit?: number },
): Promise<{ data: unknown; text: string }> {
  if (action === "list") {
    const letters = await listDeadLetters(db, limit);
    return { data: letters, text: formatDeadLetters(letters) };
  }
  if (action === "drop") {
    if (!(await dropDeadLetter(db, id))) throw new NotFound(`no dead letter ${id}`);
    return { data: { id, dropped: true }, text: `dead letter ${id} dropped` };
  }
  // the log the writers read now (INGEST_LOG_URL), whichever log the batch came from
  const log = await openIngestLog(db, config.ingestLog, createLogger(config.logLevel === "silent" ? "silent" : "warn"));
  try {
    const replayed = await replayDeadLetter(db, log, id);
    return {
      data: { id, ...replayed, log: log.kind },
      text: `dead letter ${id}: ${replayed.events} events in ${replayed.batches} batches put back into the ingest log (${log.kind}) and removed from the dead-letter table`,
    };
  } finally {
    await log.close();
  }
}
