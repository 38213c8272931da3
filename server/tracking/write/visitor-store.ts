// The only code that writes "Visitor": every statement on it, named by what it does, for the
// modules that decide when: the writer's batch (batch.ts), contact enrichment (enrichment.ts),
// retention (privacy/retention.ts) and erasure (erasure.ts). Reads may join it anywhere.
import { Prisma } from "../../../generated/prisma/client.ts";
import type { Db } from "../../db/database.ts";
import type { Tx } from "./write-result.ts";
import { jsonList } from "./subject.ts";

/** A transaction or the client itself (statements committed one by one). */
type Client = Pick<Tx, "$queryRaw" | "$executeRaw">;

/** A visitor as a writer's batch aggregates it (an upsert touches each row once). */
export interface VisitorRow {
  accountId: string;
  datasetId: string;
  id: string;
  leadId: string;
  email: string | null;
  enrichment: "pending" | null;
  firstSeenAt: string;
  lastSeenAt: string;
}

/** A new e-mail address of a visitor starts its enrichment again; the same address does not. */
export async function upsertVisitors(tx: Tx, visitors: VisitorRow[]): Promise<void> {
  await tx.$executeRaw`
    INSERT INTO "Visitor" ("accountId", "datasetId", "id", "leadId", "email", "enrichment", "firstSeenAt", "lastSeenAt")
    SELECT r."accountId", r."datasetId", r."id", r."leadId", r."email", r."enrichment"::"EnrichmentState", r."firstSeenAt", r."lastSeenAt"
    FROM jsonb_to_recordset(${JSON.stringify(visitors)}::jsonb) AS r("accountId" text, "datasetId" text, "id" text, "leadId" text,
      "email" text, "enrichment" text, "firstSeenAt" timestamptz, "lastSeenAt" timestamptz)
    ON CONFLICT ("datasetId", "id") DO UPDATE SET
      "leadId" = EXCLUDED."leadId",
      "lastSeenAt" = GREATEST("Visitor"."lastSeenAt", EXCLUDED."lastSeenAt"),
      "email" = COALESCE(EXCLUDED."email", "Visitor"."email"),
      "enrichment" = CASE WHEN EXCLUDED."email" IS NOT NULL AND EXCLUDED."email" IS DISTINCT FROM "Visitor"."email"
                          THEN EXCLUDED."enrichment" ELSE "Visitor"."enrichment" END`;
}

/** A visitor whose enrichment is pending, as enrichment read it (its address then). */
export interface VisitorToEnrich {
  datasetId: string;
  id: string;
  email: string | null;
}

/** The visitor, still pending with the address it had when read: a settled or changed one is not touched again. */
const stillPending = (v: VisitorToEnrich) => Prisma.sql`"datasetId" = ${v.datasetId} AND id = ${v.id}
    AND enrichment = 'pending'::"EnrichmentState" AND email = ${v.email}`;

/** Settles a pending enrichment without a charge; whether it was still pending (another writer may have settled it). */
export async function settleEnrichment(db: Client, v: VisitorToEnrich, state: "not_found" | "no_credit"): Promise<boolean> {
  const changed = await db.$executeRaw`UPDATE "Visitor" SET enrichment = ${state}::"EnrichmentState" WHERE ${stillPending(v)}`;
  return changed > 0;
}

/**
 * The credit ledger's charge hook that marks the visitor enriched in the charge's own statement:
 * the guard locks it while still pending, the follow-up marks it once the ledger entry exists.
 */
export const enrichedByCharge = (v: VisitorToEnrich): { guard: Prisma.Sql; after: Prisma.Sql } => ({
  guard: Prisma.sql`guard AS (SELECT 1 FROM "Visitor" WHERE ${stillPending(v)} FOR UPDATE),`,
  after: Prisma.sql`, marked AS (UPDATE "Visitor" SET enrichment = 'enriched'::"EnrichmentState"
            WHERE ${stillPending(v)} AND EXISTS (SELECT 1 FROM entry))`,
});

/** Retention: up to `limit` visitors not seen within their dataset's retention, with their address and enrichment; how many. */
export const expireVisitors = (db: Db, at: Date, limit: number): Promise<number> =>
  db.$executeRaw`DELETE FROM "Visitor" WHERE ("datasetId", id) IN (
    SELECT v."datasetId", v.id FROM "Visitor" v JOIN "Dataset" d ON d.id = v."datasetId"
    WHERE d."retentionDays" IS NOT NULL AND v."lastSeenAt" < ${at}::timestamptz - make_interval(days => d."retentionDays") LIMIT ${limit})`;

/** Erasure: the visitors' rows in the dataset, with their address and enrichment; how many. */
export const eraseVisitorRows = (tx: Client, datasetId: string, ids: string[]): Promise<number> =>
  tx.$executeRaw`DELETE FROM "Visitor" WHERE "datasetId" = ${datasetId} AND id IN ${jsonList(ids)}`;
