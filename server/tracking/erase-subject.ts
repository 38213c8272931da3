// The erasure of a data subject (services/privacy.ts runs it for an erasure request, then records
// the receipt). It never holds the ingest writer for long; in this order:
// 1. tombstones, committed at once: from then on every writer batch drops the subject's events
//    (erasure-tombstones.ts); then the subject's events leave the queue table, in statements of
//    their own (a queued batch in a writer's hands is waited for; one the erasure holds is skipped
//    by the writers);
// 2. per dataset, one short transaction under the erasure lock: it waits for the batches in hand,
//    which may have written the subject before they saw a tombstone, and erases the subject's
//    visitors with their visits and forms, and the lead counters; leads are removed only there,
//    where no batch is about to add a visit to them;
// 3. what only names the subject (other visitors' forms carrying the address, webhook deliveries):
//    long scans, in statements of their own, which no writer waits for.
// A failure half-way leaves the tombstones, so nothing of the subject is written meanwhile, and
// repeating the erasure finishes it.
import type { Prisma } from "../../generated/prisma/client.ts";
import type { Db } from "../db/database.ts";
import type { Schemas } from "../domain/types.ts";
import { eraseMentions, eraseQueued, eraseVisitors, jsonList, type Subject, visitorIdsOf, zero } from "./erasure.ts";
import { recordTombstones, withErasureHold } from "./erasure-tombstones.ts";

export interface ErasureScope {
  accountId: string;
  /** The datasets erased in. */
  datasetIds: readonly string[];
  /** The dataset the erasure names; null: every dataset of the account. */
  datasetId: string | null;
  erasedAt: Date;
}

/** Erases the subject in every dataset of the scope; how much it erased. */
export async function eraseSubject(db: Db, scope: ErasureScope, subject: Subject): Promise<Schemas["ErasureCounts"]> {
  const { accountId, erasedAt } = scope;
  const counts = zero();
  const [kind, value] = subject.type === "visitor" ? (["visitor", subject.visitorId] as const) : (["email", subject.email] as const);
  await recordTombstones(db, { accountId, datasetId: scope.datasetId, erasedAt }, kind, [value]);
  const known = new Map<string, string[]>();
  for (const datasetId of scope.datasetIds) {
    const ids = await visitorIdsOf(db, datasetId, subject);
    // a person's visitors: their events in the log without the address are not written either
    if (subject.type === "person") await recordTombstones(db, { accountId, datasetId, erasedAt }, "visitor", ids);
    counts.queuedEvents += await eraseQueued(db, datasetId, ids, subject);
    known.set(datasetId, ids);
  }
  for (const datasetId of scope.datasetIds) {
    const { ids, erased } = await withErasureHold(db, async (tx) => {
      // visitors that the batches in hand identified by the address join the subject
      const joined = subject.type === "person" ? await newlyKnown(tx, datasetId, subject.email, known.get(datasetId)!) : [];
      await recordTombstones(tx, { accountId, datasetId, erasedAt }, "visitor", joined);
      const ids = [...known.get(datasetId)!, ...joined];
      // counted apart: a try that waited too long for the lock is tried again
      const erased = zero();
      await eraseVisitors(tx, datasetId, ids, erased);
      return { ids, erased };
    });
    for (const [what, n] of Object.entries(erased)) counts[what as keyof typeof counts] += n;
    await eraseMentions(db, accountId, datasetId, ids, subject, counts);
  }
  return counts;
}

/** Visitors known by the address that are not among `known`. */
async function newlyKnown(tx: Prisma.TransactionClient, datasetId: string, email: string, known: string[]): Promise<string[]> {
  const rows = await tx.$queryRaw<{ id: string }[]>`
    SELECT id FROM "Visitor" WHERE "datasetId" = ${datasetId} AND email = ${email} AND id NOT IN ${jsonList(known)}`;
  return rows.map((r) => r.id);
}
