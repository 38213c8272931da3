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
// 3. the subject's events in the dead-letter table (dead-letters.ts), then what only names the subject (other visitors' forms carrying the address, webhook deliveries):
//    long scans, in statements of their own, which no writer waits for.
// A failure half-way leaves the tombstones, so nothing of the subject is written meanwhile, and
// repeating the erasure finishes it.
import type { Prisma } from "../../../generated/prisma/client.ts";
import type { Db } from "../../db/database.ts";
import type { Schemas } from "../../domain/types.ts";
import { eraseDeadLettered } from "../log/dead-letters.ts";
import { eraseQueued } from "../log/queue-table.ts";
import { eraseMentions, eraseVisitors, jsonList, type Subject, visitorIdsOf, zero } from "../write/erasure.ts";
import { recordTombstones, withErasureHold } from "../write/erasure-tombstones.ts";
import type { IdentityStore } from "../../identity/identities.ts";
import { emailOf, type QueueRow } from "../collect/events.ts";
import { erasePending, pendingVisitorsOf, withdrawInRanges } from "../write/pending.ts";
import type { OnLeadsRemoved } from "../write/lead-store.ts";

export interface ErasureScope {
  accountId: string;
  /** The datasets erased in. */
  datasetIds: readonly string[];
  /** The dataset the erasure names; null: every dataset of the account. */
  datasetId: string | null;
  erasedAt: Date;
}

/**
 * The e-mail addresses whose contribution to identities goes with the subject: the person's, or
 * those the visitor was known by (its visitor row, its pending forms).
 */
async function emailsOf(db: Db, datasetIds: readonly string[], subject: Subject, ids: ReadonlyMap<string, string[]>): Promise<string[]> {
  if (subject.type === "person") return [subject.email];
  const emails = new Set<string>();
  for (const datasetId of datasetIds) {
    const visitorIds = ids.get(datasetId) ?? [];
    const rows = await db.$queryRaw<{ email: string | null; event: QueueRow["event"] | null }[]>`
      SELECT email, NULL::jsonb AS event FROM "Visitor" WHERE "datasetId" = ${datasetId} AND id IN ${jsonList(visitorIds)} AND email IS NOT NULL
      UNION ALL SELECT NULL, event FROM "PendingEvent" WHERE "datasetId" = ${datasetId} AND "visitorId" IN ${jsonList(visitorIds)} AND event->>'type' = 'form'`;
    for (const row of rows) {
      const email = row.email ?? (row.event?.type === "form" ? emailOf(row.event.fields) : undefined);
      if (email) emails.add(email);
    }
  }
  return [...emails];
}

/** Erases the subject in every dataset of the scope; how much it erased. `identities`: the person's contribution to identities goes too. */
export async function eraseSubject(
  db: Db,
  scope: ErasureScope,
  subject: Subject,
  identities?: IdentityStore,
  onLeadsRemoved?: OnLeadsRemoved,
): Promise<Schemas["ErasureCounts"]> {
  const { accountId, erasedAt } = scope;
  const counts = zero();
  const [kind, value] = subject.type === "visitor" ? (["visitor", subject.visitorId] as const) : (["email", subject.email] as const);
  await recordTombstones(db, { accountId, datasetId: scope.datasetId, erasedAt }, kind, [value]);
  const known = new Map<string, string[]>();
  for (const datasetId of scope.datasetIds) {
    // a person's visitors include those of their pending forms (a shared network's address)
    const ids = [...new Set([...(await visitorIdsOf(db, datasetId, subject)), ...(await pendingVisitorsOf(db, datasetId, subject))])];
    // a person's visitors: their events in the log without the address are not written either
    if (subject.type === "person") await recordTombstones(db, { accountId, datasetId, erasedAt }, "visitor", ids);
    counts.queuedEvents += await eraseQueued(db, datasetId, ids, subject);
    known.set(datasetId, ids);
  }
  // the evidence their forms gave, before their pending events go (a visitor's e-mail is read from them)
  const contributors = identities ? await identities.contributorKeys(await emailsOf(db, scope.datasetIds, subject, known)) : [];
  const rangesOfEvidence = await rangesOfContributors(db, accountId, contributors);
  if (identities) await identities.eraseContributor(accountId, contributors);
  for (const datasetId of scope.datasetIds) counts.pendingEvents += await erasePending(db, datasetId, known.get(datasetId)!, subject);
  const erasedVisitors = new Map<string, string[]>();
  for (const datasetId of scope.datasetIds) {
    const { ids, erased } = await withErasureHold(db, async (tx) => {
      // visitors that the batches in hand identified by the address join the subject
      const joined = subject.type === "person" ? await newlyKnown(tx, datasetId, subject.email, known.get(datasetId)!) : [];
      await recordTombstones(tx, { accountId, datasetId, erasedAt }, "visitor", joined);
      const ids = [...known.get(datasetId)!, ...joined];
      // counted apart: a try that waited too long for the lock is tried again
      const erased = zero();
      const removed = await eraseVisitors(tx, datasetId, ids, erased);
      if (removed.length) await onLeadsRemoved?.(tx, removed, "erased");
      return { ids, erased };
    });
    for (const [what, n] of Object.entries(erased)) counts[what as keyof typeof counts] += n;
    erasedVisitors.set(datasetId, ids);
    await eraseMentions(db, accountId, datasetId, ids, subject, counts);
  }
  if (identities) {
    // the other visitors' visits that only the person's evidence attributed go back to pending before the erasure answers
    const withdrawn = await withdrawInRanges(db, identities, [...rangesOfEvidence, ...identities.takeRecomputed()], onLeadsRemoved);
    counts.withdrawnVisits += withdrawn.visits;
    counts.leadsRemoved += withdrawn.removedLeads.length;
  }
  counts.queuedEvents += await eraseDeadLettered(db, accountId, erasedVisitors, subject);
  return counts;
}

/** The identity ranges the people's evidence lies in (what its removal recomputes), read before it goes. */
async function rangesOfContributors(db: Db, accountId: string, contributors: readonly string[]): Promise<{ scope: string; range: string }[]> {
  if (!contributors.length) return [];
  return db.$queryRaw<{ scope: string; range: string }[]>`
    SELECT DISTINCT scope, "range" FROM "IdentityEvidence" WHERE scope = ${accountId} AND contributor = ANY(${[...contributors]}::text[])`;
}

/** Visitors known by the address that are not among `known`. */
async function newlyKnown(tx: Prisma.TransactionClient, datasetId: string, email: string, known: string[]): Promise<string[]> {
  const rows = await tx.$queryRaw<{ id: string }[]>`
    SELECT id FROM "Visitor" WHERE "datasetId" = ${datasetId} AND email = ${email} AND id NOT IN ${jsonList(known)}`;
  return rows.map((r) => r.id);
}
