// The only code that writes "Visit" (and its month partitions) and "FormSubmission": every
// statement on them, named by what it does, for the modules that decide when:
// - the writer's batch (batch.ts writeEvents): its page views and forms;
// - retention (privacy/retention.ts): rows past their dataset's retentionDays, in bounded batches;
//   the month partitions (privacy/visit-partitions.ts): a month's visits moved out of the default
//   partition, a past month dropped whole;
// - erasure (erasure.ts): a subject's visits and forms, and other visitors' forms carrying its address;
// - withdrawal (pending.ts): visits an identity no longer supports, taken back with their forms.
// Reads may join these tables anywhere; the lead counters that follow are lead-store.ts's.
import { Prisma, type Visit } from "../../../generated/prisma/client.ts";
import type { Db } from "../../db/database.ts";
import type { QueuedEvent, QueueRow } from "../collect/events.ts";
import { rangesOf } from "../../identity/addresses.ts";
import { carries, jsonList } from "./subject.ts";
import type { Tx } from "./write-result.ts";

/** A transaction or the client itself (statements committed one by one). */
type Client = Pick<Tx, "$queryRaw" | "$executeRaw">;

/**
 * A partition of `table` named at run time, quoted for SQL. The statement that writes it names the
 * table it writes here (test/table-owners.test.ts reads that name); a name of another table's is refused.
 */
export function partitionOf(table: "Visit", name: string): string {
  if (!name.startsWith(`${table}_`)) throw new Error(`"${name}" is not a partition of "${table}"`);
  return `"${name}"`;
}

export async function insertVisits(tx: Tx, events: readonly QueueRow[]): Promise<number> {
  const rows = events
    .filter((r) => r.event.type === "pageview")
    .map(({ accountId, datasetId, event }) => {
      const e = event as Extract<QueuedEvent, { type: "pageview" }>;
      return {
        accountId,
        datasetId,
        leadId: e.network.leadId,
        visitorId: e.visitorId,
        at: e.at,
        url: e.url,
        referrer: e.referrer || null,
        title: e.title || null,
        utmSource: e.utm?.source ?? null,
        utmMedium: e.utm?.medium ?? null,
        utmCampaign: e.utm?.campaign ?? null,
        utmTerm: e.utm?.term ?? null,
        utmContent: e.utm?.content ?? null,
        ip: e.network.ip,
        asn: e.network.asn,
        networkType: e.network.networkType,
        country: e.network.country,
        city: e.network.city,
      };
    });
  if (!rows.length) return 0;
  return tx.$executeRaw`
    INSERT INTO "Visit" ("accountId", "datasetId", "leadId", "visitorId", "at", "url", "referrer", "title", "utmSource", "utmMedium",
                         "utmCampaign", "utmTerm", "utmContent", "ip", "asn", "networkType", "country", "city")
    SELECT * FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r("accountId" text, "datasetId" text, "leadId" text, "visitorId" text,
      "at" timestamptz, "url" text, "referrer" text, "title" text, "utmSource" text, "utmMedium" text, "utmCampaign" text,
      "utmTerm" text, "utmContent" text, "ip" text, "asn" int, "networkType" text, "country" text, "city" text)`;
}

export async function insertForms(tx: Tx, events: readonly QueueRow[]): Promise<number> {
  const rows = events
    .filter((r) => r.event.type === "form")
    .map(({ accountId, datasetId, event }) => {
      const e = event as Extract<QueuedEvent, { type: "form" }>;
      return { accountId, datasetId, visitorId: e.visitorId, leadId: e.network.leadId, at: e.at, url: e.url, partial: e.partial ?? false, fields: e.fields };
    });
  if (!rows.length) return 0;
  return tx.$executeRaw`
    INSERT INTO "FormSubmission" ("accountId", "datasetId", "visitorId", "leadId", "at", "url", "partial", "fields")
    SELECT * FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r("accountId" text, "datasetId" text, "visitorId" text,
      "leadId" text, "at" timestamptz, "url" text, "partial" boolean, "fields" jsonb)`;
}

/** Rows of a dataset-kept table older than their dataset's retention: `id IN (...)` of one batch. */
const expiredOfDatasets = (table: "Visit" | "FormSubmission", at: Date, limit: number) => Prisma.sql`
  SELECT x.id FROM ${Prisma.raw(`"${table}"`)} x JOIN "Dataset" d ON d.id = x."datasetId"
  WHERE d."retentionDays" IS NOT NULL AND x.at < ${at}::timestamptz - make_interval(days => d."retentionDays")
  LIMIT ${limit}`;

/** Retention: up to `limit` visits past their dataset's retention; how many (the job repeats it). */
export const expireVisits = (db: Db, at: Date, limit: number): Promise<number> =>
  db.$executeRaw`DELETE FROM "Visit" WHERE id IN (${expiredOfDatasets("Visit", at, limit)})`;

/** Retention: up to `limit` form submissions past their dataset's retention; how many. */
export const expireFormSubmissions = (db: Db, at: Date, limit: number): Promise<number> =>
  db.$executeRaw`DELETE FROM "FormSubmission" WHERE id IN (${expiredOfDatasets("FormSubmission", at, limit)})`;

/** The visits of a month, moved from the partition `from` (the default one) into the month's table `to.name`; how many. */
export const moveVisitsOfMonth = (tx: Pick<Db, "$executeRawUnsafe">, from: string, to: { name: string; from: Date; to: Date }): Promise<number> =>
  tx.$executeRawUnsafe(
    `WITH moved AS (DELETE FROM ${partitionOf("Visit", from)} WHERE "at" >= $1 AND "at" < $2 RETURNING *) INSERT INTO ${partitionOf("Visit", to.name)} SELECT * FROM moved`,
    to.from,
    to.to,
  );

/** A month's partition dropped whole, with its visits (retention decided none is kept). */
export const dropVisitPartition = (tx: Pick<Db, "$executeRawUnsafe">, name: string): Promise<number> =>
  tx.$executeRawUnsafe(`DROP TABLE ${partitionOf("Visit", name)}`);

/** Erasure: the visitors' visits in the dataset, counted by lead (their counters follow). */
export const eraseVisitsOfVisitors = (tx: Client, datasetId: string, ids: string[]) =>
  tx.$queryRaw<{ leadId: string; n: bigint }[]>`
    WITH gone AS (DELETE FROM "Visit" WHERE "datasetId" = ${datasetId} AND "visitorId" IN ${jsonList(ids)} RETURNING "leadId")
    SELECT "leadId", count(*) AS n FROM gone GROUP BY "leadId"`;

/** Erasure: the visitors' form submissions in the dataset; how many. */
export const eraseFormsOfVisitors = (tx: Client, datasetId: string, ids: string[]): Promise<number> =>
  tx.$executeRaw`DELETE FROM "FormSubmission" WHERE "datasetId" = ${datasetId} AND "visitorId" IN ${jsonList(ids)}`;

/** Erasure: any visitor's form submissions in the dataset that carry the address (a long scan); how many. */
export const eraseFormsCarrying = (db: Client, datasetId: string, email: string): Promise<number> =>
  db.$executeRaw`DELETE FROM "FormSubmission" WHERE "datasetId" = ${datasetId} AND ${carries(Prisma.sql`fields`, email)}`;

/** A visit as its row holds it (what withdrawal takes back to pending: visits of an address, so it has one). */
export type VisitRow = Omit<Visit, "id" | "ip"> & { ip: string };

/**
 * The range of a visit's address (alias `v`): its /24 (IPv4) or /48 (IPv6), the expression of the
 * btree index "Visit_range_idx" (migration 20261129094500_visit_range_index), written exactly as
 * the index's so that the planner uses it.
 */
const VISIT_RANGE = Prisma.sql`network(set_masklen(v.ip::inet, CASE WHEN family(v.ip::inet) = 4 THEN 24 ELSE 48 END))`;

/**
 * The condition "the visit `v` lies inside one of these networks" (CIDRs), found through the range
 * index: the ranges the networks lie in or cover, then the exact comparison on the rows found. A
 * network covering more ranges than rangesOf lists (a wide IPv6 declaration) is compared row by row.
 * The ranges are one array (`= ANY`): joined to an unnest of them, the planner guessed a share of
 * the visits per range and scanned "Visit" whole.
 */
export function visitInside(networks: readonly string[]): Prisma.Sql {
  const ranges = networks.map(rangesOf);
  const exact = Prisma.sql`v.ip::inet <<= ANY(${[...new Set(networks)]}::inet[])`;
  if (ranges.some((r) => r === undefined)) return exact;
  return Prisma.sql`${VISIT_RANGE} = ANY(${[...new Set(ranges.flat() as string[])]}::cidr[]) AND ${exact}`;
}

/** A single address as a network (what visitInside takes). */
const hostNetwork = (ip: string) => `${ip}/${ip.includes(":") ? 128 : 32}`;

/** Withdrawal: deletes the visits of these leads at these addresses (by the range index) and returns them. */
export const takeVisitsAt = (tx: Client, wrong: readonly { accountId: string; datasetId: string; leadId: string; ip: string }[]) =>
  tx.$queryRaw<VisitRow[]>`
      DELETE FROM "Visit" v USING jsonb_to_recordset(${JSON.stringify(wrong)}::jsonb) AS w("accountId" text, "datasetId" text, "leadId" text, ip text)
      WHERE ${visitInside(wrong.map((w) => hostNetwork(w.ip)))} AND v.ip = w.ip AND v."accountId" = w."accountId" AND v."datasetId" = w."datasetId" AND v."leadId" = w."leadId"
      RETURNING v."accountId", v."datasetId", v."leadId", v."visitorId", v.at, v.url, v.referrer, v.title, v."utmSource", v."utmMedium", v."utmCampaign",
        v."utmTerm", v."utmContent", v.ip, v.asn, v."networkType", v.country, v.city`;

/** Withdrawal: deletes the forms these visitors sent to these leads and returns them. */
export const takeFormsOfSenders = (tx: Client, senders: readonly { datasetId: string; leadId: string; visitorId: string }[]) =>
  tx.$queryRaw<{ datasetId: string; leadId: string; visitorId: string; at: Date; url: string; partial: boolean; fields: Record<string, string> }[]>`
    DELETE FROM "FormSubmission" f USING jsonb_to_recordset(${JSON.stringify(senders.map(({ datasetId, leadId, visitorId }) => ({ datasetId, leadId, visitorId })))}::jsonb)
      AS s("datasetId" text, "leadId" text, "visitorId" text)
    WHERE f."datasetId" = s."datasetId" AND f."leadId" = s."leadId" AND f."visitorId" = s."visitorId"
    RETURNING f."datasetId", f."leadId", f."visitorId", f.at, f.url, f.partial, f.fields`;
