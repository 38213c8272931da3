// The erasure of a data subject's rows in one dataset (services/privacy.ts runs it for an erasure request,
// in one transaction with the audit record), and of visitors the ingest writer finds to belong to
// an erased person (tracking/erasure-tombstones.ts): visits, form submissions, the visitor with
// its address and enrichment, webhook deliveries naming them, queued events; lead counters follow.
import { Prisma } from "../../generated/prisma/client.ts";
import type { Db } from "../db/database.ts";
import type { Schemas } from "../domain/types.ts";
type Tx = Prisma.TransactionClient;

type ErasureCounts = Schemas["ErasureCounts"];

/** One data subject, checked: a visitor id or a normalised e-mail address. */
export type Subject = { type: "visitor"; visitorId: string } | { type: "person"; email: string };

export const jsonList = (values: readonly string[]) => Prisma.sql`(SELECT jsonb_array_elements_text(${JSON.stringify(values)}::jsonb))`;

/** A jsonb object of form fields with a value that is the address (trimmed, any case). */
export const carries = (fields: Prisma.Sql, email: string) =>
  Prisma.sql`EXISTS (SELECT 1 FROM jsonb_each_text(${fields}) f WHERE lower(btrim(f.value)) = ${email})`;

/** A queued event (`e`, an element of a queued batch's events) that is a form carrying the subject's address (a person only). */
const queuedFormOf = (subject: Subject) =>
  subject.type === "person" ? Prisma.sql`(e->>'type' = 'form' AND ${carries(Prisma.sql`e->'fields'`, subject.email)})` : Prisma.sql`false`;

/**
 * The visitor ids of the subject in one dataset: the visitor id itself, or the visitors known by
 * the address and those whose queued form events carry it (they become known by it once written).
 */
export async function visitorIdsOf(tx: Db | Tx, datasetId: string, subject: Subject): Promise<string[]> {
  if (subject.type === "visitor") return [subject.visitorId];
  const rows = await tx.$queryRaw<{ id: string }[]>`
    SELECT id FROM "Visitor" WHERE "datasetId" = ${datasetId} AND email = ${subject.email}
    UNION SELECT e->>'visitorId' FROM "IngestQueue" q, jsonb_array_elements(q.batch->'events') e
      WHERE q."datasetId" = ${datasetId} AND ${queuedFormOf(subject)}`;
  return rows.map((r) => r.id);
}

/**
 * Takes the subject's events out of the dataset's queued batches (a batch left without events
 * goes); how many events were taken.
 */
async function eraseQueued(tx: Tx, datasetId: string, visitorIds: string[], subject: Subject): Promise<number> {
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

/** Deliveries of the account whose payload names one of the visitors or carries the address. */
export const deliveriesOf = (accountId: string, datasetId: string, visitorIds: string[], subject: Subject) => {
  const data = Prisma.sql`(d.payload::jsonb -> 'data')`;
  const byEmail = subject.type === "person" ? Prisma.sql`OR lower(${data}->>'email') = ${subject.email}` : Prisma.empty;
  return Prisma.sql`d."accountId" = ${accountId} AND ${data}->>'datasetId' = ${datasetId}
    AND (${data}->>'visitorId' IN ${jsonList(visitorIds)} ${byEmail})`;
};

const formsOf = (datasetId: string, visitorIds: string[], subject: Subject) =>
  Prisma.sql`"datasetId" = ${datasetId} AND ("visitorId" IN ${jsonList(visitorIds)}
    ${subject.type === "person" ? Prisma.sql`OR ${carries(Prisma.sql`fields`, subject.email)}` : Prisma.empty})`;

export const zero = (): ErasureCounts => ({ visitors: 0, visits: 0, formSubmissions: 0, queuedEvents: 0, webhookDeliveries: 0, leadsAdjusted: 0, leadsRemoved: 0 });

/** Visit counts lose the erased visits; visit times follow the visits left; a lead with none counted is removed. */
async function adjustLeads(tx: Tx, datasetId: string, erased: { leadId: string; n: bigint }[], counts: ErasureCounts): Promise<void> {
  if (!erased.length) return;
  const rows = JSON.stringify(erased.map((e) => ({ leadId: e.leadId, n: Number(e.n) })));
  counts.leadsAdjusted += await tx.$executeRaw`
    UPDATE "Lead" l SET "visitCount" = GREATEST(l."visitCount" - r.n, 0),
      "firstVisitAt" = COALESCE((SELECT min(v.at) FROM "Visit" v WHERE v."datasetId" = l."datasetId" AND v."leadId" = l.id), l."firstVisitAt"),
      "lastVisitAt" = COALESCE((SELECT max(v.at) FROM "Visit" v WHERE v."datasetId" = l."datasetId" AND v."leadId" = l.id), l."lastVisitAt")
    FROM jsonb_to_recordset(${rows}::jsonb) AS r("leadId" text, n int)
    WHERE l."datasetId" = ${datasetId} AND l.id = r."leadId"`;
  counts.leadsRemoved += await tx.$executeRaw`
    DELETE FROM "Lead" WHERE "datasetId" = ${datasetId} AND "visitCount" = 0
      AND id IN (SELECT "leadId" FROM jsonb_to_recordset(${rows}::jsonb) AS r("leadId" text, n int))`;
}

/**
 * Erases the subject within one dataset, adding to `counts`; the visitor ids it erased. The queue
 * first (a writer's batch in hand committed before: the caller holds the erasure lock).
 */
export async function eraseInDataset(tx: Tx, accountId: string, datasetId: string, subject: Subject, counts: ErasureCounts): Promise<string[]> {
  const ids = await visitorIdsOf(tx, datasetId, subject);
  counts.queuedEvents += await eraseQueued(tx, datasetId, ids, subject);
  await eraseWritten(tx, accountId, datasetId, ids, subject, counts);
  return ids;
}

/** Erases what was written of the visitors (and, for a person, forms and deliveries carrying the address). */
async function eraseWritten(tx: Tx, accountId: string, datasetId: string, ids: string[], subject: Subject, counts: ErasureCounts): Promise<void> {
  const visits = await tx.$queryRaw<{ leadId: string; n: bigint }[]>`
    WITH gone AS (DELETE FROM "Visit" WHERE "datasetId" = ${datasetId} AND "visitorId" IN ${jsonList(ids)} RETURNING "leadId")
    SELECT "leadId", count(*) AS n FROM gone GROUP BY "leadId"`;
  counts.visits += visits.reduce((sum, v) => sum + Number(v.n), 0);
  counts.formSubmissions += await tx.$executeRaw`DELETE FROM "FormSubmission" WHERE ${formsOf(datasetId, ids, subject)}`;
  counts.visitors += await tx.$executeRaw`DELETE FROM "Visitor" WHERE "datasetId" = ${datasetId} AND id IN ${jsonList(ids)}`;
  counts.webhookDeliveries += await tx.$executeRaw`DELETE FROM "WebhookDelivery" d WHERE ${deliveriesOf(accountId, datasetId, ids, subject)}`;
  await adjustLeads(tx, datasetId, visits, counts);
}

/**
 * Erases what was written of visitors of `datasetId` that an erased person's form in the ingest
 * log turned out to belong to (their queued events are the writer's batch in hand). The counts go
 * nowhere: the erasure's receipt was given already.
 */
export async function eraseWrittenVisitors(tx: Tx, accountId: string, datasetId: string, visitorIds: string[]): Promise<void> {
  if (!visitorIds.length) return;
  // a visitor subject: no clause for an address (the person's other rows went with the erasure)
  await eraseWritten(tx, accountId, datasetId, visitorIds, { type: "visitor", visitorId: visitorIds[0]! }, zero());
}
