// The credit ledger: each dataset may spend its monthly limit per calendar month (UTC); every
// charge is one ledger entry, written in the same statement that counts it against the limit.
import type { Db } from "../db/database.ts";
import { Prisma } from "../../generated/prisma/client.ts";
import { NotFoundError, PaymentRequiredError } from "../http/errors.ts";
import { metrics } from "../metrics.ts";

/** First day of the UTC month of `at`, as `YYYY-MM-DD`. */
export function monthOf(at: Date): string {
  return `${at.toISOString().slice(0, 7)}-01`;
}

/**
 * SQL run inside a charge's statement so that something commits with the charge or not at all:
 * `guard` is CTEs (each followed by a comma) ending in one named `guard` that yields a row when
 * the charge may go ahead; `after` is CTEs (each preceded by a comma) that may read `entry`.
 */
export interface ChargeHook {
  guard: Prisma.Sql;
  after: Prisma.Sql;
}

export interface Charge {
  accountId: string;
  /** The paying dataset; undefined: the account's oldest dataset with credit left. */
  datasetId?: string;
  at: Date;
  operation: string;
  keyId: string;
  credits?: number;
  hook?: ChargeHook;
}

/** The outcome of one attempt: the dataset that would pay, and whether it was charged. */
interface Attempt {
  candidate: string | null;
  charged: string | null;
  guarded: boolean;
}

export class ChargeGuardFailed extends Error {}

const noCredit = (datasetId: string | undefined) =>
  new PaymentRequiredError(
    datasetId ? `Dataset ${datasetId} has no credit left this month` : "No dataset of this account has credit left this month",
  );

export function creditService(db: Db) {
  /** The datasets that may pay, oldest first: one named, or all of the account's. */
  const payers = (accountId: string, datasetId: string | undefined, month: string, credits: number) => Prisma.sql`
    SELECT d.id, d."monthlyCreditLimit" AS lim
    FROM "Dataset" d
    LEFT JOIN "CreditUsage" u ON u."datasetId" = d.id AND u.month = ${month}::date
    WHERE d."accountId" = ${accountId} AND (${datasetId ?? null}::text IS NULL OR d.id = ${datasetId ?? null}::text)
      AND COALESCE(u.used, 0) + ${credits} <= d."monthlyCreditLimit"
    ORDER BY d."createdAt", d.id`;

  /**
   * One statement: pick the payer, add the credits to its month's usage only if they stay within
   * the limit (the upsert locks the usage row; a concurrent charge waits and re-checks the
   * condition against the committed count), and write the ledger entry from what was debited.
   */
  async function attempt(charge: Charge): Promise<Attempt> {
    const credits = charge.credits ?? 1;
    const month = monthOf(charge.at);
    const hook = charge.hook;
    const [row] = await db.$queryRaw<Attempt[]>`
      WITH ${hook?.guard ?? Prisma.empty}
      candidate AS (${payers(charge.accountId, charge.datasetId, month, credits)} LIMIT 1),
      debit AS (
        INSERT INTO "CreditUsage" ("datasetId", month, used)
        SELECT id, ${month}::date, ${credits} FROM candidate ${hook ? Prisma.sql`WHERE EXISTS (SELECT 1 FROM guard)` : Prisma.empty}
        ON CONFLICT ("datasetId", month) DO UPDATE SET used = "CreditUsage".used + EXCLUDED.used
        WHERE "CreditUsage".used + EXCLUDED.used <= (SELECT lim FROM candidate)
        RETURNING "datasetId"
      ),
      entry AS (
        INSERT INTO "CreditLedgerEntry" ("accountId", "datasetId", "createdAt", credits, operation, "keyId")
        SELECT ${charge.accountId}, "datasetId", ${charge.at}::timestamptz, ${credits}, ${charge.operation}, ${charge.keyId}
        FROM debit
        RETURNING id, "datasetId"
      )
      ${hook?.after ?? Prisma.empty}
      SELECT (SELECT id FROM candidate) AS candidate, (SELECT "datasetId" FROM entry) AS charged,
             ${hook ? Prisma.sql`EXISTS (SELECT 1 FROM guard)` : Prisma.sql`true`} AS guarded`;
    return row!;
  }

  return {
    /** 404 when `datasetId` is not the account's; 402 when no dataset that may pay has credit left. */
    async requireCredit(accountId: string, datasetId: string | undefined, at: Date, credits = 1): Promise<void> {
      if (datasetId) {
        const found = await db.dataset.count({ where: { accountId, id: datasetId } });
        if (!found) throw new NotFoundError(`Dataset ${datasetId} does not exist`);
      }
      const payer = await db.$queryRaw<unknown[]>`${payers(accountId, datasetId, monthOf(at), credits)} LIMIT 1`;
      if (!payer.length) throw noCredit(datasetId);
    },

    /**
     * Charges the credits and writes the ledger entry together, or throws 402 and charges
     * nothing. When another charge takes the last credit of the chosen dataset first, the next
     * attempt (a new snapshot) picks the next dataset with credit left, or finds none.
     */
    async charge(charge: Charge): Promise<string> {
      for (;;) {
        const { candidate, charged, guarded } = await attempt(charge);
        if (charged) {
          metrics.creditsCharged.inc();
          return charged;
        }
        if (!guarded) throw new ChargeGuardFailed("the charge's guard did not hold; nothing was charged");
        if (!candidate) throw noCredit(charge.datasetId);
      }
    },

    /** Sets the dataset's monthly limit; false when there is no such dataset. */
    async setMonthlyLimit(datasetId: string, limit: number): Promise<boolean> {
      const { count } = await db.dataset.updateMany({ where: { id: datasetId }, data: { monthlyCreditLimit: limit } });
      return count > 0;
    },
  };
}

export type CreditService = ReturnType<typeof creditService>;
