// The erasure of a data subject's rows, step by step (tracking/privacy/erase-subject.ts runs the steps for
// an erasure request), and of visitors the ingest writer finds to belong to an erased person
// (tracking/write/erasure-tombstones.ts): visits, form submissions, the visitor with its address and
// enrichment, webhook deliveries naming them, queued events; lead counters follow. The statements
// on visits, forms, visitors and leads are their stores' (visit-store.ts, visitor-store.ts, lead-store.ts).
import { Prisma } from "../../../generated/prisma/client.ts";
import type { Schemas } from "../../domain/types.ts";
import { deleteDeliveriesNaming } from "../../notify/webhook-store.ts";
import { type RemovedLead, subtractVisits } from "./lead-store.ts";
import { carries, jsonList, type Subject } from "./subject.ts";
import { eraseFormsCarrying, eraseFormsOfVisitors, eraseVisitsOfVisitors } from "./visit-store.ts";
import { eraseVisitorRows } from "./visitor-store.ts";
type Tx = Prisma.TransactionClient;
/** A transaction or the client itself (statements committed one by one). */
type Client = Pick<Tx, "$queryRaw" | "$executeRaw">;

type ErasureCounts = Schemas["ErasureCounts"];

// the subject and its SQL live in subject.ts (the stores use them too); their importers take them from here
export { carries, jsonList, type Subject };

/** A queued event (`e`, an element of a queued batch's events) that is a form carrying the subject's address (a person only). */
export const queuedFormOf = (subject: Subject) =>
  subject.type === "person" ? Prisma.sql`(e->>'type' = 'form' AND ${carries(Prisma.sql`e->'fields'`, subject.email)})` : Prisma.sql`false`;

/**
 * The visitor ids of the subject in one dataset: the visitor id itself, or the visitors known by
 * the address and those whose queued form events carry it (they become known by it once written).
 */
export async function visitorIdsOf(tx: Client, datasetId: string, subject: Subject): Promise<string[]> {
  if (subject.type === "visitor") return [subject.visitorId];
  const rows = await tx.$queryRaw<{ id: string }[]>`
    SELECT id FROM "Visitor" WHERE "datasetId" = ${datasetId} AND email = ${subject.email}
    UNION SELECT e->>'visitorId' FROM "IngestQueue" q, jsonb_array_elements(q.batch->'events') e
      WHERE q."datasetId" = ${datasetId} AND ${queuedFormOf(subject)}`;
  return rows.map((r) => r.id);
}

/**
 * Deliveries of the account whose payload names one of the visitors or carries the address. The
 * payload's text is searched for them first: only the few rows that hold one are parsed as JSON
 * (visitor ids and addresses hold no character that JSON escapes).
 */
export const deliveriesOf = (accountId: string, datasetId: string, visitorIds: string[], subject: Subject) => {
  const data = Prisma.sql`(d.payload::jsonb -> 'data')`;
  const texts = [...visitorIds.map((id) => Prisma.sql`strpos(d.payload, ${id}) > 0`)];
  if (subject.type === "person") texts.push(Prisma.sql`strpos(lower(d.payload), ${subject.email}) > 0`);
  if (!texts.length) return Prisma.sql`false`;
  const byEmail = subject.type === "person" ? Prisma.sql`OR lower(${data}->>'email') = ${subject.email}` : Prisma.empty;
  return Prisma.sql`d."accountId" = ${accountId} AND (${Prisma.join(texts, " OR ")}) AND ${data}->>'datasetId' = ${datasetId}
    AND (${data}->>'visitorId' IN ${jsonList(visitorIds)} ${byEmail})`;
};

export const zero = (): ErasureCounts => ({ visitors: 0, visits: 0, formSubmissions: 0, queuedEvents: 0, pendingEvents: 0, withdrawnVisits: 0, webhookDeliveries: 0, leadsAdjusted: 0, leadsRemoved: 0 });

/**
 * Visit counts lose the erased visits; visit times follow the visits left; a lead with none counted
 * is removed. Each lead is counted once: adjusted (it keeps visits) or removed.
 */
async function adjustLeads(tx: Tx, datasetId: string, erased: { leadId: string; n: bigint }[], counts: ErasureCounts): Promise<RemovedLead[]> {
  const { adjusted, removed } = await subtractVisits(tx, erased.map((e) => ({ datasetId, leadId: e.leadId, n: Number(e.n) })));
  counts.leadsAdjusted += adjusted;
  counts.leadsRemoved += removed.length;
  return removed;
}

/** Erases the visitors' visits, forms and rows; their leads' counters follow. The leads left with no visit, removed. */
export async function eraseVisitors(tx: Tx, datasetId: string, ids: string[], counts: ErasureCounts): Promise<RemovedLead[]> {
  const visits = await eraseVisitsOfVisitors(tx, datasetId, ids);
  counts.visits += visits.reduce((sum, v) => sum + Number(v.n), 0);
  counts.formSubmissions += await eraseFormsOfVisitors(tx, datasetId, ids);
  counts.visitors += await eraseVisitorRows(tx, datasetId, ids);
  return adjustLeads(tx, datasetId, visits, counts);
}

/** Erases other visitors' forms that carry a person's address, and the deliveries naming the subject (long scans). */
export async function eraseMentions(db: Client, accountId: string, datasetId: string, ids: string[], subject: Subject, counts: ErasureCounts): Promise<void> {
  if (subject.type === "person") counts.formSubmissions += await eraseFormsCarrying(db, datasetId, subject.email);
  counts.webhookDeliveries += await deleteDeliveriesNaming(db, deliveriesOf(accountId, datasetId, ids, subject));
}

/**
 * Erases what was written of visitors of `datasetId` that an erased person's form in the ingest
 * log turned out to belong to (their queued events are the writer's batch in hand). The counts go
 * nowhere: the erasure's receipt was given already.
 */
export async function eraseWrittenVisitors(tx: Tx, accountId: string, datasetId: string, visitorIds: string[]): Promise<void> {
  if (!visitorIds.length) return;
  const counts = zero();
  await eraseVisitors(tx, datasetId, visitorIds, counts);
  // a visitor subject: no clause for an address (the person's other rows went with the erasure)
  await eraseMentions(tx, accountId, datasetId, visitorIds, { type: "visitor", visitorId: visitorIds[0]! }, counts);
}
