// The dead-letter table "IngestDeadLetter" (this file is the only one that writes it): the writers
// set batches aside here (when: isolation.ts); an operator lists what waits, replays a batch into
// the ingest log once its cause is gone (a dataset restored, a bug fixed), or drops it (the
// commands: dead-letter-command.ts, `npm run admin -- dead-letters list|replay|drop`).
// A dead letter holds visitors' events: an erasure takes the subject's out of it, an export lists
// them, and the retention job deletes it after RETENTION_DEAD_LETTER_DAYS or its dataset's retention.
import type { Db } from "../../db/database.ts";
import { Conflict, Invalid, NotFound } from "../../domain/errors.ts";
import { type AcceptedEvent, MalformedBatch, NOT_JSON, type QueuedBatch, type QueueRow, rowsOf, rowsOfEntry, rowsOfLogged } from "../collect/events.ts";
import type { Subject } from "../write/erasure.ts";
import type { Tx } from "../write/write-result.ts";
import type { DeadLetterNotice, IngestLog } from "./log-interface.ts";

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

const DEAD_LETTER_COLUMNS = `"log", "messageId", "accountId", "datasetId", "receivedAt", "attempts", "error", "payload", "events"`;

/** Sets batches aside: inserts dead letters in the caller's transaction (with what took them from the log); what was inserted. */
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

/** Batches waiting in the dead-letter table (the ingest_dead_letters gauge). */
export async function countDeadLetters(db: Db): Promise<number> {
  const [row] = await db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM "IngestDeadLetter"`;
  return row?.n ?? 0;
}

/** A database error's code as the dead letter's error begins with it (`SQLSTATE 23514: ...`): what `--code` selects. */
const SQLSTATE = /^[0-9A-Z]{5}$/;

/** Which dead letters a command takes: the oldest `limit` (by number), of one error code when `code` is given. */
export interface DeadLetterSelection {
  limit?: number;
  code?: string;
}

/**
 * The oldest `limit` dead letters (of the error code `code`), oldest first: by the id's number (the
 * table's column, not the text it is listed as, which would put 10 before 2).
 */
export function listDeadLetters(db: Db, { limit = 100, code }: DeadLetterSelection = {}): Promise<DeadLetter[]> {
  const errorPrefix = code === undefined ? null : `SQLSTATE ${sqlState(code)}:%`;
  return db.$queryRaw<DeadLetter[]>`
    SELECT x.id::text AS id, x."log"::text AS "log", x."messageId", x."accountId", x."datasetId", x."receivedAt", x."failedAt", x.attempts, x.events, x.error
    FROM "IngestDeadLetter" x WHERE (${errorPrefix}::text IS NULL OR x.error LIKE ${errorPrefix}::text)
    ORDER BY x.id LIMIT ${limit}`;
}

const sqlState = (code: string) => {
  if (!SQLSTATE.test(code)) throw new Invalid(`an error code is a SQLSTATE of five digits or capitals (23514), not ${JSON.stringify(code)}`);
  return code;
};

/** A logged entry as the batch the log takes now: an older version's single-event row becomes a batch of one. */
function asBatch(entry: unknown): QueuedBatch {
  const [row] = rowsOfEntry(entry); // MalformedBatch when it is neither
  if (!(entry as { event?: unknown }).event) return entry as QueuedBatch;
  const { at, enrich, network, ...event } = row!.event;
  return { accountId: row!.accountId, datasetId: row!.datasetId, at, enrich, network, events: [event] };
}

/**
 * What a dead letter's payload holds, as batches; refused when it cannot be read (drop it instead),
 * for the reason the writer gave when it set it aside (the error `list` shows).
 */
function batchesOf(id: string, letter: StoredLetter): QueuedBatch[] {
  const { log, payload } = letter;
  try {
    if (typeof payload === "string") throw new MalformedBatch(NOT_JSON); // a message's text, kept as it came
    if (log === "jetstream" && !Array.isArray(payload)) rowsOfLogged(payload); // the writer's reason: not a JSON array
    return (Array.isArray(payload) ? payload : [payload]).map(asBatch);
  } catch (error) {
    if (error instanceof MalformedBatch) throw new Conflict(`dead letter ${id} cannot be replayed (${error.message}): drop it`);
    throw error;
  }
}

/** A dead letter's payload and the log it came from. */
interface StoredLetter {
  log: DeadLetter["log"] | undefined;
  payload: unknown;
}

async function storedLetter(db: Db, id: string): Promise<StoredLetter> {
  const [letter] = await db.$queryRaw<{ log: DeadLetter["log"]; payload: unknown }[]>`
    SELECT "log"::text AS "log", payload FROM "IngestDeadLetter" WHERE id = ${id}::bigint`;
  if (!letter) throw new NotFound(`no dead letter ${id}`);
  return letter;
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
  const batches = batchesOf(id, await storedLetter(db, wholeNumber(id)));
  await refuseGoneDatasets(db, id, batches);
  await log.append(batches, `dead-letter-${id}`);
  await db.$executeRaw`DELETE FROM "IngestDeadLetter" WHERE id = ${id}::bigint`;
  return { batches: batches.length, events: batches.reduce((n, b) => n + b.events.length, 0) };
}

/** Deletes a dead letter for good; false when there was none. */
export async function dropDeadLetter(db: Db, id: string): Promise<boolean> {
  return (await db.$executeRaw`DELETE FROM "IngestDeadLetter" WHERE id = ${wholeNumber(id)}::bigint`) > 0;
}

/** What `replay --all` did: the letters put back, oldest first, and those it had to leave (with the reason). */
export interface ReplayedLetters {
  replayed: { id: string; batches: number; events: number }[];
  left: { id: string; reason: string }[];
}

/**
 * Replays the selected dead letters one by one, oldest first; one that cannot be replayed (its
 * dataset gone, unreadable, or replayed meanwhile by another command) is left with its reason and
 * the others go on. A fault of the log or the database stops it: what was replayed stays replayed.
 */
export async function replayDeadLetters(db: Db, log: Pick<IngestLog, "append">, selection: DeadLetterSelection): Promise<ReplayedLetters> {
  const result: ReplayedLetters = { replayed: [], left: [] };
  for (const { id } of await listDeadLetters(db, { ...selection, limit: selection.limit ?? Number.MAX_SAFE_INTEGER })) {
    try {
      result.replayed.push({ id, ...(await replayDeadLetter(db, log, id)) });
    } catch (error) {
      if (!(error instanceof Conflict || error instanceof NotFound)) throw error;
      result.left.push({ id, reason: error.message });
    }
  }
  return result;
}

// ---- a data subject's events in the dead-letter table (erasure, export) and its retention ----

/** The visitor ids of a data subject per dataset (the erasure's and the export's scope). */
export type SubjectVisitors = ReadonlyMap<string, ReadonlySet<string> | readonly string[]>;

interface LetterOfSubject {
  id: string;
  /** undefined: the payload cannot be read. */
  batches: QueuedBatch[] | undefined;
}

/** Dead letters of the account, or unreadable (no account known), whose payload's text holds one of `needles` (a superset). */
async function lettersHolding(db: Pick<Db, "$queryRaw">, accountId: string, needles: readonly string[]): Promise<LetterOfSubject[]> {
  if (!needles.length) return [];
  const rows = await db.$queryRaw<{ id: string; payload: unknown }[]>`
    SELECT id::text AS id, payload FROM "IngestDeadLetter"
    WHERE ("accountId" = ${accountId} OR "accountId" IS NULL)
      AND EXISTS (SELECT 1 FROM jsonb_array_elements_text(${JSON.stringify(needles)}::jsonb) n WHERE strpos(lower(payload::text), lower(n)) > 0)
    ORDER BY id`;
  return rows.map(({ id, payload }) => {
    try {
      return { id, batches: batchesOf(id, { log: undefined, payload }) };
    } catch {
      return { id, batches: undefined };
    }
  });
}

/**
 * The dead letters that may hold the subject's events, and a test of an event: a batch of the
 * account and of a dataset in scope, and a visitor of the subject or (a person) a form carrying the
 * address or a visitor whose form in the dead letters carries it (whose other letters are then read too).
 */
async function subjectInDeadLetters(db: Pick<Db, "$queryRaw">, accountId: string, visitors: SubjectVisitors, subject: Subject) {
  const ids = new Map([...visitors].map(([datasetId, v]) => [datasetId, new Set(v)]));
  const inScope = (b: QueuedBatch) => b.accountId === accountId && ids.has(b.datasetId);
  const known = [...ids.values()].flatMap((v) => [...v]);
  let letters = await lettersHolding(db, accountId, subject.type === "person" ? [...known, subject.email] : known);
  if (subject.type === "person") {
    const joined = new Set<string>();
    for (const b of letters.flatMap((l) => l.batches ?? []).filter(inScope))
      for (const e of b.events)
        if (carriesAddress(e, subject.email) && !ids.get(b.datasetId)!.has(e.visitorId)) {
          ids.get(b.datasetId)!.add(e.visitorId);
          joined.add(e.visitorId);
        }
    if (joined.size) letters = await lettersHolding(db, accountId, [...known, ...joined, subject.email]);
  }
  const isSubject = (b: QueuedBatch, e: AcceptedEvent) =>
    inScope(b) && (ids.get(b.datasetId)!.has(e.visitorId) || (subject.type === "person" && carriesAddress(e, subject.email)));
  return { letters, isSubject };
}

const carriesAddress = (event: AcceptedEvent, email: string) =>
  event.type === "form" && Object.values(event.fields ?? {}).some((v) => typeof v === "string" && v.trim().toLowerCase() === email);

/**
 * Takes the subject's events out of the dead letters of the account (a letter left without events
 * goes; an unreadable one that names the subject goes whole); how many events were taken.
 */
export async function eraseDeadLettered(db: Db, accountId: string, visitors: SubjectVisitors, subject: Subject): Promise<number> {
  const { letters, isSubject } = await subjectInDeadLetters(db, accountId, visitors, subject);
  let erased = 0;
  for (const { id, batches } of letters) {
    if (!batches) {
      await db.$executeRaw`DELETE FROM "IngestDeadLetter" WHERE id = ${id}::bigint`;
      continue;
    }
    const kept = batches.map((b) => ({ ...b, events: b.events.filter((e) => !isSubject(b, e)) })).filter((b) => b.events.length);
    const before = batches.reduce((n, b) => n + b.events.length, 0);
    const left = kept.reduce((n, b) => n + b.events.length, 0);
    if (left === before) continue;
    erased += before - left;
    if (!left) await db.$executeRaw`DELETE FROM "IngestDeadLetter" WHERE id = ${id}::bigint`;
    else await db.$executeRaw`UPDATE "IngestDeadLetter" SET payload = ${JSON.stringify(kept)}::jsonb, events = ${left} WHERE id = ${id}::bigint`;
  }
  return erased;
}

/** The subject's events in the dead letters of the account, as received (an export's queuedEvents). */
export async function deadLetteredEventsOf(db: Db, accountId: string, visitors: SubjectVisitors, subject: Subject): Promise<QueueRow[]> {
  const { letters, isSubject } = await subjectInDeadLetters(db, accountId, visitors, subject);
  return letters.flatMap(({ batches }) => (batches ?? []).flatMap((b) => rowsOf({ ...b, events: b.events.filter((e) => isSubject(b, e)) })));
}

/**
 * Deletes, at most `limit` at a time, the dead letters that failed before `before` or whose events
 * are past their dataset's retention (received before it); how many went.
 */
export function purgeDeadLetters(db: Db, before: Date, now: Date, limit: number): Promise<number> {
  return db.$executeRaw`DELETE FROM "IngestDeadLetter" WHERE id IN (
    SELECT x.id FROM "IngestDeadLetter" x LEFT JOIN "Dataset" d ON d.id = x."datasetId"
    WHERE x."failedAt" < ${before}
      OR (d."retentionDays" IS NOT NULL AND x."receivedAt" < ${now}::timestamptz - make_interval(days => d."retentionDays"))
    LIMIT ${limit})`;
}
