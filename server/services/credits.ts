// The credit ledger: each dataset may spend its monthly limit per calendar month (UTC); every
// charge is one ledger entry, written in the same statement that counts it against the limit.
import type { Db, Sql } from "../db/database.ts";
import { Prisma } from "../../generated/prisma/client.ts";
import { ChargeGuardFailed, NotFound, PaymentRequired } from "../domain/errors.ts";
import { metrics } from "../metrics.ts";
import { updateDataset } from "./datasets.ts";

/** First day of the UTC month of `at`, as `YYYY-MM-DD`. */
export function monthOf(at: Date): string {
  return `${at.toISOString().slice(0, 7)}-01`;
}

/**
 * SQL run inside a charge's statement so that something commits with the charge or not at all:
 * `guard` is CTEs (each followed by a comma) ending in one named `guard` that yields a row when
 * the charge may go ahead; `after` is CTEs (each preceded by a comma) that may read `entry`.
 * (The contact enrichment's: its visitor still pending, then marked enriched.)
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
  /** What commits with the charge or not at all (a look-up's answer under its Idempotency-Key, idempotency.ts). */
  hook?: ChargeHook;
}

/** The outcome of one attempt: the dataset that would pay, and whether it was charged. */
interface Attempt {
  candidate: string | null;
  charged: string | null;
  guarded: boolean;
}

const noCredit = (datasetId: string | undefined) =>
  new PaymentRequired(
    datasetId ? `Dataset ${datasetId} has no credit left this month` : "No dataset of this account has credit left this month",
  );

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
 * Yields one row: `candidate` (the payer picked), `charged` (the dataset debited, or null) and
 * `guarded` (whether the hook's guard held). Exported for the benchmark's hand-written baseline,
 * which runs the very same statement (`.text`, `.values`) on plain pg.
 */
export function chargeStatement(charge: Charge): Prisma.Sql {
  const credits = charge.credits ?? 1;
  const month = monthOf(charge.at);
  const { hook } = charge;
  return Prisma.sql`
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
}

/** Runs inside a bulk charge's transaction: `before` may refuse it (throw), `after` commits with it. */
export interface BulkChargeHooks {
  before?: (tx: Tx) => Promise<void>;
  after?: (tx: Tx, charged: { datasetId: string | null; credits: number }) => Promise<void>;
}

type Tx = Prisma.TransactionClient;

/** `hotSql` runs the look-up's statements on the driver (the hot path); `db` the rest. */
export interface CreditDeps {
  db: Db;
  hotSql: Sql;
}

/**
 * 404 when `datasetId` is not the account's; 402 when no dataset that may pay has credit left.
 * `alongside` (a query of at most one row) is read in the same round trip: its row, or
 * undefined when it has none.
 */
export async function requireCredit<Row extends object>(
  { hotSql }: Pick<CreditDeps, "hotSql">,
  accountId: string,
  datasetId: string | undefined,
  at: Date,
  alongside: Prisma.Sql = Prisma.sql`SELECT`,
): Promise<Row | undefined> {
  const [row] = await hotSql<{ datasetKnown: boolean; hasCredit: boolean; present: boolean | null } & Row>(Prisma.sql`
    SELECT (${datasetId ?? null}::text IS NULL
            OR EXISTS (SELECT 1 FROM "Dataset" WHERE id = ${datasetId ?? null}::text AND "accountId" = ${accountId})) AS "datasetKnown",
           EXISTS (${payers(accountId, datasetId, monthOf(at), 1)}) AS "hasCredit",
           alongside.*
    FROM (SELECT 1) one LEFT JOIN (SELECT true AS present, r.* FROM (${alongside}) r) alongside ON true`);
  if (!row!.datasetKnown) throw new NotFound(`Dataset ${datasetId} does not exist`);
  if (!row!.hasCredit) throw noCredit(datasetId);
  if (!row!.present) return undefined;
  const { datasetKnown, hasCredit, present, ...found } = row!;
  return found as unknown as Row;
}

/**
 * Charges the credits and writes the ledger entry together, or throws 402 and charges
 * nothing. When another charge takes the last credit of the chosen dataset first, the next
 * attempt (a new snapshot) picks the next dataset with credit left, or finds none.
 */
export async function charge({ hotSql }: Pick<CreditDeps, "hotSql">, wanted: Charge): Promise<string> {
  for (;;) {
    const [attempt] = await hotSql<Attempt>(chargeStatement(wanted));
    const { candidate, charged, guarded } = attempt!;
    if (charged) {
      metrics.creditsCharged.inc();
      return charged;
    }
    if (!guarded) throw new ChargeGuardFailed("the charge's guard did not hold; nothing was charged");
    if (!candidate) throw noCredit(wanted.datasetId);
  }
}

/**
 * Charges up to `wanted.credits` to one dataset (the named one, or the oldest with credit
 * left), as many as it has left, in one transaction: the usage row is locked first (a no-op
 * upsert), so that concurrent charges of any kind wait and see the new count. One ledger
 * entry for what was charged. Charges nothing (datasetId null) when no dataset has credit.
 */
export async function chargeUpTo(
  { db }: Pick<CreditDeps, "db">,
  wanted: Omit<Charge, "hook">,
  hooks: BulkChargeHooks = {},
): Promise<{ datasetId: string | null; credits: number }> {
  const result = await db.$transaction(async (tx) => {
    await hooks.before?.(tx);
    const charged = await debitUpTo(tx, wanted);
    await hooks.after?.(tx, charged);
    return charged;
  });
  metrics.creditsCharged.inc(result.credits);
  return result;
}

/** chargeUpTo's debit and ledger entry, in its transaction. */
async function debitUpTo(tx: Tx, wanted: Omit<Charge, "hook">): Promise<{ datasetId: string | null; credits: number }> {
  const most = wanted.credits ?? 1;
  const month = monthOf(wanted.at);
  while (most > 0) {
    const [candidate] = await tx.$queryRaw<{ id: string; lim: number }[]>`${payers(wanted.accountId, wanted.datasetId, month, 1)} LIMIT 1`;
    if (!candidate) break;
    const [usage] = await tx.$queryRaw<{ used: number }[]>`
      INSERT INTO "CreditUsage" ("datasetId", month, used) VALUES (${candidate.id}, ${month}::date, 0)
      ON CONFLICT ("datasetId", month) DO UPDATE SET used = "CreditUsage".used
      RETURNING used`;
    const credits = Math.min(most, candidate.lim - usage!.used);
    if (credits <= 0) continue; // taken meanwhile; the next snapshot sees the locked count
    await tx.$executeRaw`
      WITH debit AS (
        UPDATE "CreditUsage" SET used = used + ${credits} WHERE "datasetId" = ${candidate.id} AND month = ${month}::date
      )
      INSERT INTO "CreditLedgerEntry" ("accountId", "datasetId", "createdAt", credits, operation, "keyId")
      VALUES (${wanted.accountId}, ${candidate.id}, ${wanted.at}::timestamptz, ${credits}, ${wanted.operation}, ${wanted.keyId})`;
    return { datasetId: candidate.id, credits };
  }
  return { datasetId: null, credits: 0 };
}

/** Sets the dataset's monthly limit; false when there is no such dataset. */
export async function setMonthlyLimit({ db }: Pick<CreditDeps, "db">, datasetId: string, limit: number): Promise<boolean> {
  return (await updateDataset(db, { id: datasetId }, { monthlyCreditLimit: limit })) > 0;
}
