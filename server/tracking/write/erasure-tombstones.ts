// Erasure tombstones: how a data-subject erasure reaches events still in the ingest log. The
// queue table's events are deleted by the erasure itself, but JetStream keeps a batch until a
// writer has written it, so an erasure leaves a short-lived tombstone per subject (its scope, a
// keyed hash of the visitor id or of the address, erasedAt) and every writer, on both logs, drops
// the events that match one and were received before its erasedAt:
// - a visitor tombstone drops the visitor's page views and forms;
// - an e-mail tombstone drops every form carrying the address, and its visitor becomes part of
//   the subject (a visitor tombstone of its own, as the erasure treats visitors whose queued form
//   carries the address), so its other events in the log are dropped too and what earlier
//   batches wrote of it is erased (tracking/write/erasure.ts).
// The hashes are HMAC-SHA256 with the deployment's ErasureKey (server/identity/erasure-key.ts, one
// row, made on first use): the tombstone never holds the data it erases. An advisory lock orders erasures and writer batches
// without holding the writers up: an erasure commits its tombstones first (batches begun after
// that drop the subject's events), then takes the lock exclusively for one short transaction,
// which waits for the batches in hand (what they wrote is erased in it) while new batches wait
// for that transaction only. The retention job purges tombstones after the log's max age
// (INGEST_LOG_MAX_AGE_HOURS): no message older than that is left to write.
import type { Prisma } from "../../../generated/prisma/client.ts";
import type { Db } from "../../db/database.ts";
import { databaseFault } from "../../db/errors.ts";
import { Unavailable } from "../../domain/errors.ts";
import { existingKey, hasher, keyOf } from "../../identity/erasure-key.ts";
import { eraseWrittenVisitors } from "./erasure.ts";
import type { QueueRow } from "../collect/events.ts";

type Tx = Prisma.TransactionClient;
/** A transaction or the client itself (statements committed one by one). */
type Client = Pick<Tx, "$queryRaw" | "$executeRaw">;

/** The advisory lock (one 64-bit key) of erasures (exclusive) and writer batches (shared). */
export const ERASURE_LOCK = 0x6572617375726531n; // "erasure1"

export type TombstoneKind = "visitor" | "email";

export interface Tombstone {
  accountId: string;
  /** null: every dataset of the account. */
  datasetId: string | null;
  kind: TombstoneKind;
  hash: string;
  erasedAt: Date;
}

/** How long one try of an erasure's hold waits for the batches in hand (server-side: lock_timeout). */
const HOLD_WAIT_MS = 2_000;
/** Tries of the hold before the erasure gives up with a 503 (a writer batch longer than all of them). */
const HOLD_TRIES = 5;
/** How long the hold's transaction may wait for a connection (the embedded database runs one transaction at a time). */
const HOLD_MAX_WAIT_MS = 30_000;

/** The hold each database client's erasures last asked for in this process (settled or not). */
const lastHold = new WeakMap<Db, Promise<unknown>>();

/**
 * Runs `work` in a short transaction that holds the erasure lock exclusively: the writer batches in
 * hand commit first, and batches begun meanwhile wait for this commit. The wait is bounded per try
 * (`lock_timeout`: queued behind the erasure, new batches wait no longer than that either) and
 * tried again, so that a long batch delays an erasure rather than failing it. This process's
 * erasures take the hold one after the other: a writer's batch waits for one of them at most,
 * not for every erasure queued at the lock.
 */
export function withErasureHold<T>(db: Db, work: (tx: Tx) => Promise<T>): Promise<T> {
  const turn = (lastHold.get(db) ?? Promise.resolve()).catch(() => {}).then(() => hold(db, work));
  lastHold.set(db, turn);
  return turn;
}

async function hold<T>(db: Db, work: (tx: Tx) => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await db.$transaction(
        async (tx) => {
          await tx.$executeRawUnsafe(`SET LOCAL lock_timeout = ${HOLD_WAIT_MS}`);
          await tx.$executeRaw`SELECT pg_advisory_xact_lock(${ERASURE_LOCK})`;
          return work(tx);
        },
        { maxWait: HOLD_MAX_WAIT_MS, timeout: HOLD_MAX_WAIT_MS },
      );
    } catch (error) {
      if (databaseFault(error)?.sqlState !== "55P03") throw error;
      if (tries === HOLD_TRIES) throw new Unavailable("The erasure waited too long for the ingest writer: what it did is kept; repeat it after the Retry-After seconds", 2);
    }
  }
}

/** A writer batch's shared hold (any number of writers at once); taken before the batch touches anything. */
export async function holdForWriting(tx: Tx): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock_shared(${ERASURE_LOCK})`;
}

/** Records tombstones of `values` (visitor ids or addresses). */
export async function recordTombstones(
  tx: Client,
  scope: { accountId: string; datasetId: string | null; erasedAt: Date },
  kind: TombstoneKind,
  values: readonly string[],
): Promise<void> {
  if (!values.length) return;
  const hash = hasher(await keyOf(tx))[kind];
  await insertTombstones(tx, values.map((value) => ({ ...scope, kind, hash: hash(value) })));
}

async function insertTombstones(tx: Client, tombstones: readonly Tombstone[]): Promise<void> {
  if (!tombstones.length) return;
  await tx.$executeRaw`
    INSERT INTO "ErasureTombstone" ("accountId", "datasetId", kind, hash, "erasedAt")
    SELECT * FROM jsonb_to_recordset(${JSON.stringify(tombstones)}::jsonb)
      AS r("accountId" text, "datasetId" text, kind text, hash text, "erasedAt" timestamptz)`;
}

const reaches = (t: Tombstone, row: QueueRow) =>
  t.accountId === row.accountId && (t.datasetId === null || t.datasetId === row.datasetId) && row.receivedAt.getTime() < t.erasedAt.getTime();

/** The tombstones that may reach `events` (of their accounts, newer than the oldest), with the hash they were made with. */
async function tombstonesFor(db: Client, events: readonly QueueRow[]) {
  const accounts = JSON.stringify([...new Set(events.map((e) => e.accountId))]);
  const oldest = new Date(Math.min(...events.map((e) => e.receivedAt.getTime())));
  const tombstones = await db.$queryRaw<Tombstone[]>`
    SELECT "accountId", "datasetId", kind, hash, "erasedAt" FROM "ErasureTombstone"
    WHERE "accountId" IN (SELECT jsonb_array_elements_text(${accounts}::jsonb)) AND "erasedAt" > ${oldest}`;
  const key = tombstones.length ? await existingKey(db) : undefined;
  return key ? { tombstones, hash: hasher(key) } : undefined;
}

/**
 * Sorts `events` by the tombstones: those kept, and the visitors that joined an erasure through a
 * form carrying an erased address (with the tombstone each gets).
 */
function sortOut(events: readonly QueueRow[], tombstones: readonly Tombstone[], hash: ReturnType<typeof hasher>) {
  const emails = tombstones.filter((t) => t.kind === "email");
  const visitors = tombstones.filter((t) => t.kind === "visitor");
  const erased = (row: QueueRow, visitor = hash.visitor(row.event.visitorId)) => visitors.some((t) => t.hash === visitor && reaches(t, row));
  // a form carrying an erased address: the form goes, and its visitor joins the subject (unless it has already)
  const joined = new Map<string, { row: QueueRow; tombstone: Tombstone }>();
  for (const row of events) {
    if (row.event.type !== "form" || !emails.length || erased(row)) continue;
    const values = new Set(Object.values(row.event.fields).map(hash.email));
    const email = emails.find((t) => values.has(t.hash) && reaches(t, row));
    if (!email) continue;
    const tombstone: Tombstone = { accountId: row.accountId, datasetId: row.datasetId, kind: "visitor", hash: hash.visitor(row.event.visitorId), erasedAt: email.erasedAt };
    visitors.push(tombstone);
    joined.set(`${row.datasetId}\n${row.event.visitorId}`, { row, tombstone });
  }
  return { kept: events.filter((row) => !erased(row)), joined: [...joined.values()] };
}

/**
 * The batch without the events an erasure reached (in the writer's transaction, which holds the
 * lock). Without tombstones newer than the batch's oldest event, one query and nothing else.
 */
export async function withoutErased(tx: Tx, events: readonly QueueRow[]): Promise<readonly QueueRow[]> {
  if (!events.length) return events;
  await holdForWriting(tx);
  const found = await tombstonesFor(tx, events);
  if (!found) return events;
  const { kept, joined } = sortOut(events, found.tombstones, found.hash);
  await insertTombstones(tx, joined.map((j) => j.tombstone));
  // what earlier batches wrote of them (an earlier page view, say) goes as the erasure would have taken it
  for (const { row } of joined) await eraseWrittenVisitors(tx, row.accountId, row.datasetId, [row.event.visitorId]);
  return kept;
}

/** The events a writer would write: those no erasure reached (read only: for an export of what waits in the log). */
export async function notErased(db: Client, events: readonly QueueRow[]): Promise<readonly QueueRow[]> {
  if (!events.length) return events;
  const found = await tombstonesFor(db, events);
  return found ? sortOut(events, found.tombstones, found.hash).kept : events;
}

/** Deletes the tombstones erased before `before` (no event they could reach is left in the log); how many. */
export async function purgeTombstones(db: { $executeRaw: Tx["$executeRaw"] }, before: Date, limit: number): Promise<number> {
  return db.$executeRaw`DELETE FROM "ErasureTombstone" WHERE id IN (SELECT id FROM "ErasureTombstone" WHERE "erasedAt" < ${before} LIMIT ${limit})`;
}
