// The only code that writes "Lead": every statement on it, for the modules that decide when: the
// writer's batch (batch.ts: new leads, then the visited ones), their domain evidence
// (domain-evidence.ts), the partner API's tags and assignment, stored leads (tests, the demo), an
// account's deletion, the webhook events owed to hidden leads, and the counters that erasure and
// withdrawal take visits from. Others read leads where a query needs them.
import { Prisma } from "../../../generated/prisma/client.ts";
import { notExcluded } from "../../domain/exclusions.ts";
import type { NetworkOfEvent } from "../collect/events.ts";

type Tx = Prisma.TransactionClient;
type Raw = Pick<Tx, "$queryRaw" | "$executeRaw">;
type LeadRef = { datasetId: string; leadId: string };

/** A lead as a writer's batch aggregates it: its new row, or what its visits add to the row there is. */
export interface LeadRow {
  accountId: string;
  datasetId: string;
  id: string;
  organizationName: string;
  organizationDomain: string | null;
  /** `curated` with a domain of the lead's own network or a declared one; an identity's evidence: its kind (domain-evidence.ts adds the others). */
  domainSource: "declared" | "curated" | "email" | "reverse_dns" | null;
  country: string | null;
  city: string | null;
  firstVisitAt: string;
  lastVisitAt: string;
  visitCount: number;
  identitySource: NonNullable<NetworkOfEvent["identitySource"]>;
  identityConfidence: number;
}

const LEAD_COLUMNS = Prisma.sql`r("accountId" text, "datasetId" text, "id" text, "organizationName" text, "organizationDomain" text,
  "domainSource" text, "country" text, "city" text, "firstVisitAt" timestamptz, "lastVisitAt" timestamptz, "visitCount" int,
  "identitySource" text, "identityConfidence" float8)`;

/**
 * The batch's new leads, inserted with the batch's counts (the visits' foreign key needs them
 * first); an existing lead is left alone here and updated last (updateVisitedLeads). The leads created.
 */
export async function insertNewLeads(tx: Raw, leads: LeadRow[]): Promise<{ datasetId: string; id: string }[]> {
  if (!leads.length) return [];
  return tx.$queryRaw<{ datasetId: string; id: string }[]>`
    INSERT INTO "Lead" ("accountId", "datasetId", "id", "organizationName", "organizationDomain", "domainSource", "country", "city",
                        "firstVisitAt", "lastVisitAt", "visitCount", "identitySource", "identityConfidence")
    SELECT r."accountId", r."datasetId", r."id", r."organizationName", r."organizationDomain", r."domainSource"::"DomainSource",
           r."country", r."city", r."firstVisitAt", r."lastVisitAt", r."visitCount", r."identitySource"::"IdentitySource", r."identityConfidence"
    FROM jsonb_to_recordset(${JSON.stringify(leads)}::jsonb) AS ${LEAD_COLUMNS}
    ON CONFLICT ("datasetId", "id") DO NOTHING
    RETURNING "datasetId", "id"`;
}

/**
 * The leads the batch visited that existed: visit counts add up; first and last visit widen; place
 * follows the latest data. A curated domain replaces whatever domain the lead had (it is the
 * strongest evidence); an identity's domain from evidence only fills in a missing one. The
 * identity source and confidence are raised when the batch's are stronger. The batch's last statement: the rows
 * stay locked until its commit only, so that concurrent batches visiting the same organisation
 * (every batch, under load) wait for each other briefly; locked in key order, they never deadlock.
 */
export async function updateVisitedLeads(tx: Raw, leads: LeadRow[]): Promise<void> {
  if (!leads.length) return;
  const rows = JSON.stringify(leads);
  await tx.$executeRaw`
    SELECT 1 FROM "Lead" l JOIN jsonb_to_recordset(${rows}::jsonb) AS ${LEAD_COLUMNS} ON l."datasetId" = r."datasetId" AND l.id = r.id
    ORDER BY l."datasetId", l.id FOR NO KEY UPDATE OF l`;
  await tx.$executeRaw`
    UPDATE "Lead" l SET
      "visitCount" = l."visitCount" + r."visitCount",
      "firstVisitAt" = LEAST(l."firstVisitAt", r."firstVisitAt"),
      "lastVisitAt" = GREATEST(l."lastVisitAt", r."lastVisitAt"),
      "organizationDomain" = CASE WHEN r."domainSource" IN ('declared', 'curated') OR l."organizationDomain" IS NULL THEN COALESCE(r."organizationDomain", l."organizationDomain") ELSE l."organizationDomain" END,
      "domainSource" = CASE WHEN r."organizationDomain" IS NOT NULL AND (r."domainSource" IN ('declared', 'curated') OR l."organizationDomain" IS NULL)
                            THEN r."domainSource"::"DomainSource" ELSE l."domainSource" END,
      "identitySource" = CASE WHEN r."identityConfidence" > l."identityConfidence" THEN r."identitySource"::"IdentitySource" ELSE l."identitySource" END,
      "identityConfidence" = GREATEST(l."identityConfidence", r."identityConfidence"),
      "country" = COALESCE(r."country", l."country"),
      "city" = COALESCE(r."city", l."city")
    FROM jsonb_to_recordset(${rows}::jsonb) AS ${LEAD_COLUMNS}
    WHERE l."datasetId" = r."datasetId" AND l.id = r.id`;
}

/** Where a lead's domain came from, of the sources its evidence sets (a declaration's is set by the batch). */
export type DomainSource = "curated" | "email" | "reverse_dns";

/** How strong each source is: SQL of the rank of a lead's current source (0 without a domain). */
const currentRank = Prisma.sql`CASE "domainSource" WHEN 'declared' THEN 4 WHEN 'curated' THEN 3 WHEN 'email' THEN 2 WHEN 'reverse_dns' THEN 1 ELSE 0 END`;
const RANK: Record<DomainSource, number> = { curated: 3, email: 2, reverse_dns: 1 };

/** Sets the lead's domain unless it has one from a stronger source; one statement. A lead recognised by its address's identity keeps the identity's domain. */
export async function setLeadDomain(db: Raw, lead: LeadRef, domain: string, source: DomainSource): Promise<void> {
  await db.$executeRaw`
      UPDATE "Lead" SET "organizationDomain" = ${domain}, "domainSource" = ${source}::"DomainSource"
      WHERE "datasetId" = ${lead.datasetId} AND id = ${lead.leadId} AND ${currentRank} <= ${RANK[source]} AND "identitySource" = 'network'
        AND "organizationDomain" IS DISTINCT FROM ${domain}`;
}

/** A domain found to be an access network's: leads that took it from reverse DNS lose it. */
export async function dropReverseDnsDomain(db: Raw, domain: string): Promise<void> {
  await db.$executeRaw`
      UPDATE "Lead" SET "organizationDomain" = NULL, "domainSource" = NULL
      WHERE "domainSource" = 'reverse_dns'::"DomainSource" AND "organizationDomain" = ${domain}`;
}

/**
 * A lead as it was when removed (left with no visit): its columns, and whether a partner could see
 * it (no exclusion rule hid it, its lead.created was published): what its lead.removed carries.
 */
export type RemovedLead = LeadRef & {
  accountId: string;
  organizationName: string;
  organizationDomain: string | null;
  industry: string | null;
  employeeCount: number | null;
  country: string | null;
  city: string | null;
  firstVisitAt: Date;
  lastVisitAt: Date;
  visitCount: number;
  identitySource: string;
  identityConfidence: number;
  /** Shown in listings when removed, and its lead.created was published: the partner knows it. */
  known: boolean;
};

const keysOf = (refs: readonly LeadRef[]) => Prisma.join(refs.map((r) => Prisma.sql`(${r.datasetId}, ${r.leadId})`));

/** Why a lead was removed: its visits withdrawn (the evidence no longer names it), or erased with a data subject. */
export type RemovalReason = "withdrawn" | "erased";

/** Told, in the removing transaction, of the leads removed (webhook-events.ts publishes their lead.removed). */
export type OnLeadsRemoved = (tx: Tx, leads: readonly RemovedLead[], reason: RemovalReason) => Promise<void>;

/**
 * Takes `n` visits from each lead's count; its first and last visit follow the visits left. A lead
 * left with none is deleted, unless `keepNetworkLeads` and its own network named it (such a lead
 * stands without the visits an identity gave it). Each lead counts once: adjusted or removed (the
 * removed ones listed, for their lead.removed event).
 */
export async function subtractVisits(
  tx: Raw,
  taken: readonly (LeadRef & { n: number })[],
  { keepNetworkLeads = false } = {},
): Promise<{ adjusted: number; removed: RemovedLead[] }> {
  if (!taken.length) return { adjusted: 0, removed: [] };
  const rows = JSON.stringify(taken);
  const updated = await tx.$executeRaw`
    UPDATE "Lead" l SET "visitCount" = GREATEST(l."visitCount" - r.n, 0),
      "firstVisitAt" = COALESCE((SELECT min(v.at) FROM "Visit" v WHERE v."datasetId" = l."datasetId" AND v."leadId" = l.id), l."firstVisitAt"),
      "lastVisitAt" = COALESCE((SELECT max(v.at) FROM "Visit" v WHERE v."datasetId" = l."datasetId" AND v."leadId" = l.id), l."lastVisitAt")
    FROM jsonb_to_recordset(${rows}::jsonb) AS r("datasetId" text, "leadId" text, n int)
    WHERE l."datasetId" = r."datasetId" AND l.id = r."leadId"`;
  const removed = await tx.$queryRaw<RemovedLead[]>`
    DELETE FROM "Lead" l USING jsonb_to_recordset(${rows}::jsonb) AS r("datasetId" text, "leadId" text, n int)
    WHERE l."datasetId" = r."datasetId" AND l.id = r."leadId" AND l."visitCount" = 0
      ${keepNetworkLeads ? Prisma.sql`AND l."identitySource" <> 'network'` : Prisma.empty}
    RETURNING l."accountId", l."datasetId", l.id AS "leadId", l."organizationName", l."organizationDomain", l.industry, l."employeeCount",
      l.country, l.city, l."firstVisitAt", l."lastVisitAt", l."visitCount", l."identitySource"::text AS "identitySource", l."identityConfidence",
      (NOT l."createdEventPending" AND ${notExcluded}) AS known`;
  return { adjusted: updated - removed.length, removed };
}

/**
 * Adds and removes tags in one UPDATE, computed from the row it locks, so concurrent changes of one
 * lead's tags do not overwrite each other; stored normalised, once each, in code-unit order. How many
 * leads (0 or 1).
 */
export function updateTags(tx: Raw, { accountId, datasetId, leadId }: LeadRef & { accountId: string }, add: readonly string[], remove: readonly string[]): Promise<number> {
  return tx.$executeRaw`
    UPDATE "Lead" SET "tags" = ARRAY(
      SELECT t FROM unnest("tags" || ${add}::text[]) AS t
      WHERE NOT (t = ANY (${remove}::text[]))
      GROUP BY t ORDER BY t COLLATE "C")
    WHERE "accountId" = ${accountId} AND "datasetId" = ${datasetId} AND "id" = ${leadId}`;
}

/** Makes the member the lead's assignee; how many leads (0 or 1). */
export async function assignLead(tx: Pick<Tx, "lead">, { accountId, datasetId, leadId }: LeadRef & { accountId: string }, assigneeUserId: bigint): Promise<number> {
  return (await tx.lead.updateMany({ where: { accountId, datasetId, id: leadId }, data: { assigneeUserId } })).count;
}

/** createMany sends one parameter per column and row; PostgreSQL takes at most 65,535 per statement. */
const INSERT_BATCH = 2_000;

/** Stores whole leads (tests, the demo: no API creates them); how many were inserted. */
export async function insertLeads(db: Pick<Tx, "lead">, rows: readonly Prisma.LeadCreateManyInput[]): Promise<number> {
  let inserted = 0;
  for (let i = 0; i < rows.length; i += INSERT_BATCH) {
    inserted += (await db.lead.createMany({ data: rows.slice(i, i + INSERT_BATCH) })).count;
  }
  return inserted;
}

/** The account's leads, as one statement of its deletion's transaction (their assignees take no cascade). */
export const deleteLeadsOfAccount = (db: Pick<Tx, "lead">, accountId: string) => db.lead.deleteMany({ where: { accountId } });

/**
 * Of the leads a batch created, those an exclusion rule hides: no lead.created now, so it is owed
 * (`createdEventPending`), whether or not an endpoint exists yet (one may be added while it hides).
 */
export async function oweCreatedEventOfHidden(tx: Raw, created: readonly LeadRef[]): Promise<void> {
  if (!created.length) return;
  await tx.$executeRaw(
    Prisma.sql`UPDATE "Lead" l SET "createdEventPending" = true WHERE (l."datasetId", l."id") IN (${keysOf(created)}) AND NOT (${notExcluded})`,
  );
}

/**
 * Of these leads, those whose lead.created is owed and that no rule hides any longer: settled in
 * one statement, so that of two transactions publishing events of one lead only one sends it.
 */
export async function settleOwedCreatedEvents(tx: Raw, refs: readonly LeadRef[]): Promise<LeadRef[]> {
  if (!refs.length) return [];
  return tx.$queryRaw<LeadRef[]>(Prisma.sql`
    UPDATE "Lead" l SET "createdEventPending" = false
    WHERE (l."datasetId", l."id") IN (${keysOf(refs)}) AND l."createdEventPending" AND ${notExcluded}
    RETURNING l."datasetId", l."id" AS "leadId"`);
}
