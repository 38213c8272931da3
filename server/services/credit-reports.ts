// Credit reporting: usage as a time series and as a summary, aggregated by SQL from the ledger
// (never from the usage counters), over UTC calendar days.
import type { components } from "../../generated/openapi.ts";
import type { Db } from "../db/database.ts";
import { Prisma } from "../../generated/prisma/client.ts";
import { Invalid } from "../domain/errors.ts";
import * as access from "./access.ts";

type Schemas = components["schemas"];
export type Granularity = Schemas["Granularity"];

export type Period = Schemas["CreditUsageSummaryRequest"];

const MAX_DAYS = 366;
const DAY_MS = 86_400_000;

/** 400 naming the parameter: `from` after `to`, or a period longer than 366 days. */
function checkPeriod({ from, to }: Period): void {
  const days = (Date.parse(to) - Date.parse(from)) / DAY_MS + 1;
  if (days < 1) {
    throw new Invalid("from is after to", [{ location: "body", field: "from", message: "must not be after to" }]);
  }
  if (days > MAX_DAYS) {
    throw new Invalid(`the period spans ${days} days`, [
      { location: "body", field: "to", message: `must be at most ${MAX_DAYS - 1} days after from (the period spans ${days} days)` },
    ]);
  }
}

/** The ledger entries of the account (and dataset) within the period's UTC days. */
function ledgerIn(accountId: string, { from, to, datasetId }: Period): Prisma.Sql {
  return Prisma.sql`
    SELECT "datasetId", "createdAt", credits FROM "CreditLedgerEntry"
    WHERE "accountId" = ${accountId} AND (${datasetId ?? null}::text IS NULL OR "datasetId" = ${datasetId ?? null}::text)
      AND "createdAt" >= ${from}::date::timestamp AT TIME ZONE 'UTC'
      AND "createdAt" < (${to}::date + 1)::timestamp AT TIME ZONE 'UTC'`;
}

export interface CreditReportDeps {
  db: Db;
}

async function checkRequest(deps: CreditReportDeps, accountId: string, period: Period): Promise<void> {
  checkPeriod(period);
  if (period.datasetId) await access.dataset(deps, accountId, period.datasetId);
}

/** Every bucket from the one holding `from` to the one holding `to`, 0 where nothing was charged. */
export async function timeSeries(deps: CreditReportDeps, accountId: string, period: Period, granularity: Granularity): Promise<Schemas["GetAllResponseDailyUsage"]> {
  await checkRequest(deps, accountId, period);
  const data = await deps.db.$queryRaw<Schemas["DailyUsage"][]>`
    WITH usage AS (
      SELECT date_trunc(${granularity}, "createdAt" AT TIME ZONE 'UTC') AS bucket, SUM(credits) AS credits
      FROM (${ledgerIn(accountId, period)}) AS entries
      GROUP BY 1
    )
    SELECT to_char(b.bucket, 'YYYY-MM-DD') AS date, COALESCE(u.credits, 0)::int AS credits
    FROM generate_series(
      date_trunc(${granularity}, ${period.from}::date::timestamp),
      date_trunc(${granularity}, ${period.to}::date::timestamp),
      ('1 ' || ${granularity})::interval
    ) AS b(bucket)
    LEFT JOIN usage u ON u.bucket = b.bucket
    ORDER BY b.bucket`;
  return { data, granularity, from: period.from, to: period.to, datasetId: period.datasetId ?? null };
}

/**
 * Per dataset (oldest first): its monthly limit, the limit of the period (the monthly limit
 * times the calendar months the period touches), the credits used within it, and what remains.
 */
export async function summary(deps: CreditReportDeps, accountId: string, period: Period): Promise<Schemas["CreditUsageSummary"]> {
  await checkRequest(deps, accountId, period);
  const datasets = await deps.db.$queryRaw<Schemas["DatasetCreditSummary"][]>`
    WITH used AS (
      SELECT "datasetId", SUM(credits) AS used FROM (${ledgerIn(accountId, period)}) AS entries GROUP BY 1
    ), months AS (
      SELECT count(*) AS n FROM generate_series(
        date_trunc('month', ${period.from}::date::timestamp), date_trunc('month', ${period.to}::date::timestamp), '1 month')
    ), rows AS (
      SELECT d.id, d.name, d."createdAt", d."monthlyCreditLimit" AS monthly,
             d."monthlyCreditLimit" * (SELECT n FROM months) AS lim, COALESCE(u.used, 0) AS used
      FROM "Dataset" d LEFT JOIN used u ON u."datasetId" = d.id
      WHERE d."accountId" = ${accountId} AND (${period.datasetId ?? null}::text IS NULL OR d.id = ${period.datasetId ?? null}::text)
    )
    SELECT id AS "datasetId", name AS "datasetName", monthly::int AS "monthlyLimit", lim::int AS "limit",
           used::int AS used, GREATEST(lim - used, 0)::int AS remaining
    FROM rows ORDER BY "createdAt", id`;
  const total = (field: "limit" | "used" | "remaining") => datasets.reduce((sum, d) => sum + d[field], 0);
  return { from: period.from, to: period.to, datasets, totals: { limit: total("limit"), used: total("used"), remaining: total("remaining") } };
}
