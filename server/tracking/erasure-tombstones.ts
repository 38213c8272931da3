// Erasure tombstones: how a data-subject erasure reaches events still in the ingest log. The
// queue table's events are deleted by the erasure itself, but JetStream keeps a batch until a
// writer has written it, so an erasure leaves a short-lived tombstone per subject (its scope, a
// keyed hash of the visitor id or of the address, erasedAt) and every writer, on both logs, drops
// the events that match one and were received before its erasedAt:
// - a visitor tombstone drops the visitor's page views and forms;
// - an e-mail tombstone drops every form carrying the address, and its visitor becomes part of
//   the subject (a visitor tombstone of its own, as the erasure treats visitors whose queued form
//   carries the address), so its other events in the log are dropped too and what earlier
//   batches wrote of it is erased (tracking/erasure.ts).
// The hashes are HMAC-SHA256 with the deployment's ErasureKey (one row, made on first use): the
// tombstone never holds the data it erases. A lock orders erasures and writer batches: an erasure
// waits for the batches in hand (their rows are then erased with the rest) and a batch begun
// during an erasure waits for its tombstones. The retention job purges tombstones after the log's
// max age (INGEST_LOG_MAX_AGE_HOURS): no message older than that is left to write.
import { createHmac, randomBytes } from "node:crypto";
import type { Prisma } from "../../generated/prisma/client.ts";
import { eraseWrittenVisitors } from "./erasure.ts";
import type { QueueRow } from "./events.ts";

type Tx = Prisma.TransactionClient;

/** The advisory lock (one 64-bit key) of erasures (exclusive) and writer batches (shared). */
const ERASURE_LOCK = 0x6572617375726531n; // "erasure1"

export type TombstoneKind = "visitor" | "email";

export interface Tombstone {
  accountId: string;
  /** null: every dataset of the account. */
  datasetId: string | null;
  kind: TombstoneKind;
  hash: string;
  erasedAt: Date;
}

/** An erasure's exclusive hold: batches in hand commit first, batches begun after wait for its commit. */
export async function holdForErasure(tx: Tx): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(${ERASURE_LOCK})`;
}

/** A writer batch's shared hold (any number of writers at once); taken before the batch touches anything. */
export async function holdForWriting(tx: Tx): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock_shared(${ERASURE_LOCK})`;
}

/** The deployment's hash key: the first caller makes it. */
async function keyOf(tx: Tx): Promise<string> {
  await tx.$executeRaw`INSERT INTO "ErasureKey" (id, key) VALUES (1, ${randomBytes(32).toString("hex")}) ON CONFLICT (id) DO NOTHING`;
  const [row] = await tx.$queryRaw<{ key: string }[]>`SELECT key FROM "ErasureKey" WHERE id = 1`;
  return row!.key;
}

/** The keyed hash of a visitor id, or of a value compared as an address (trimmed, lower case). */
function hasher(key: string) {
  const hash = (value: string) => createHmac("sha256", key).update(value).digest("hex");
  return { visitor: (visitorId: string) => hash(`visitor\n${visitorId}`), email: (value: string) => hash(`email\n${value.trim().toLowerCase()}`) };
}

/** Records tombstones of `values` (visitor ids or addresses) in the erasure's transaction. */
export async function recordTombstones(
  tx: Tx,
  scope: { accountId: string; datasetId: string | null; erasedAt: Date },
  kind: TombstoneKind,
  values: readonly string[],
): Promise<void> {
  if (!values.length) return;
  const hash = hasher(await keyOf(tx))[kind];
  await insertTombstones(tx, values.map((value) => ({ ...scope, kind, hash: hash(value) })));
}

async function insertTombstones(tx: Tx, tombstones: readonly Tombstone[]): Promise<void> {
  if (!tombstones.length) return;
  await tx.$executeRaw`
    INSERT INTO "ErasureTombstone" ("accountId", "datasetId", kind, hash, "erasedAt")
    SELECT * FROM jsonb_to_recordset(${JSON.stringify(tombstones)}::jsonb)
      AS r("accountId" text, "datasetId" text, kind text, hash text, "erasedAt" timestamptz)`;
}

const reaches = (t: Tombstone, row: QueueRow) =>
  t.accountId === row.accountId && (t.datasetId === null || t.datasetId === row.datasetId) && row.receivedAt.getTime() < t.erasedAt.getTime();

/**
 * The batch without the events an erasure reached (in the writer's transaction, which holds the
 * lock). Without tombstones newer than the batch's oldest event, one query and nothing else.
 */
export async function withoutErased(tx: Tx, events: readonly QueueRow[]): Promise<readonly QueueRow[]> {
  if (!events.length) return events;
  await holdForWriting(tx);
  const accounts = JSON.stringify([...new Set(events.map((e) => e.accountId))]);
  const oldest = new Date(Math.min(...events.map((e) => e.receivedAt.getTime())));
  const tombstones = await tx.$queryRaw<Tombstone[]>`
    SELECT "accountId", "datasetId", kind, hash, "erasedAt" FROM "ErasureTombstone"
    WHERE "accountId" IN (SELECT jsonb_array_elements_text(${accounts}::jsonb)) AND "erasedAt" > ${oldest}`;
  if (!tombstones.length) return events;
  const hash = hasher(await keyOf(tx));
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
  await insertTombstones(tx, [...joined.values()].map((j) => j.tombstone));
  // what earlier batches wrote of them (an earlier page view, say) goes as the erasure would have taken it
  for (const { row } of joined.values()) await eraseWrittenVisitors(tx, row.accountId, row.datasetId, [row.event.visitorId]);
  return events.filter((row) => !erased(row));
}

/** Deletes the tombstones erased before `before` (no event they could reach is left in the log); how many. */
export async function purgeTombstones(db: { $executeRaw: Tx["$executeRaw"] }, before: Date, limit: number): Promise<number> {
  return db.$executeRaw`DELETE FROM "ErasureTombstone" WHERE id IN (SELECT id FROM "ErasureTombstone" WHERE "erasedAt" < ${before} LIMIT ${limit})`;
}
