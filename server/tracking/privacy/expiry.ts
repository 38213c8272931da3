// What the retention job (tracking/privacy/retention.ts) deletes of the tracking tables: visits, form
// submissions and visitors past their dataset's retentionDays, at most `limit` rows a statement
// (short statements, short locks). Each returns the rows it deleted.
import { Prisma } from "../../../generated/prisma/client.ts";
import type { Db } from "../../db/database.ts";

/** Rows of a dataset-kept table older than their dataset's retention: `id IN (...)` of one batch. */
const expiredOfDatasets = (table: "Visit" | "FormSubmission", at: Date, limit: number) => Prisma.sql`
  SELECT x.id FROM ${Prisma.raw(`"${table}"`)} x JOIN "Dataset" d ON d.id = x."datasetId"
  WHERE d."retentionDays" IS NOT NULL AND x.at < ${at}::timestamptz - make_interval(days => d."retentionDays")
  LIMIT ${limit}`;

export const expireVisits = (db: Db, at: Date, limit: number): Promise<number> =>
  db.$executeRaw`DELETE FROM "Visit" WHERE id IN (${expiredOfDatasets("Visit", at, limit)})`;

export const expireFormSubmissions = (db: Db, at: Date, limit: number): Promise<number> =>
  db.$executeRaw`DELETE FROM "FormSubmission" WHERE id IN (${expiredOfDatasets("FormSubmission", at, limit)})`;

/** Visitors not seen within their dataset's retention, with their address and enrichment. */
export const expireVisitors = (db: Db, at: Date, limit: number): Promise<number> =>
  db.$executeRaw`DELETE FROM "Visitor" WHERE ("datasetId", id) IN (
    SELECT v."datasetId", v.id FROM "Visitor" v JOIN "Dataset" d ON d.id = v."datasetId"
    WHERE d."retentionDays" IS NOT NULL AND v."lastSeenAt" < ${at}::timestamptz - make_interval(days => d."retentionDays") LIMIT ${limit})`;
