// Idempotency-Key: the first request with a key runs; retries with the same key and request get
// its stored answer. The primary key (account, key) decides which of concurrent requests runs.
// The only writer of "IdempotencyKey": a charged look-up's answer is stored by the charge's own
// statement (services/credits.ts runs the CTEs `storedWithCharge` makes here), the answers that
// charge nothing by `store`.
import { createHash, randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Db } from "../db/database.ts";
import { Prisma } from "../../generated/prisma/client.ts";
import { Conflict } from "../domain/errors.ts";
import { ChargeGuardFailed } from "../domain/errors.ts";
import type { BulkChargeHooks, ChargeHook } from "./credits.ts";

/** How long a key and its answer are kept. */
export const KEY_TTL_MS = 24 * 3_600_000;
/** A request still unanswered after this long has died (requests take milliseconds): a retry takes over. */
const ABANDONED_AFTER_MS = 30_000;
/** How long a concurrent retry waits for the first request's answer before answering 409. */
const WAIT_MS = 10_000;
const POLL_MS = 20;

export interface StoredAnswer {
  status: number;
  body: unknown;
}

/** The request that owns a key until it stores its answer. */
export interface KeyClaim {
  accountId: string;
  key: string;
  owner: string;
}

export type ClaimResult = { claim: KeyClaim } | { replay: StoredAnswer };

/** SHA-256 of the request: the operation, the query and the body with its keys sorted. */
export function fingerprint(operation: string, query: object, body: object): string {
  const sorted = (o: object) => Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b)));
  return createHash("sha256").update(JSON.stringify([operation, sorted(query), sorted(body)])).digest("hex");
}

/**
 * A look-up's answer stored with its charge under the Idempotency-Key its request claimed: the
 * charge goes ahead only while the request still owns the key (the key's row locked), and the
 * answer commits in the charge's own statement, or neither does.
 */
export interface IdempotentAnswer extends KeyClaim, StoredAnswer {}

/** The key's row while the request that claimed it still owns it, unanswered. */
const ownedKey = (c: KeyClaim) => Prisma.sql`"accountId" = ${c.accountId} AND key = ${c.key} AND owner = ${c.owner} AND status IS NULL`;

/** The charge's guard (the key still owned, locked) and the answer stored once its ledger entry is written. */
export function storedWithCharge(answer: IdempotentAnswer): ChargeHook {
  return {
    guard: Prisma.sql`guard AS (SELECT 1 FROM "IdempotencyKey" WHERE ${ownedKey(answer)} FOR UPDATE),`,
    after: Prisma.sql`, stored AS (
      UPDATE "IdempotencyKey" SET status = ${answer.status}, body = ${JSON.stringify(answer.body)}
      WHERE ${ownedKey(answer)} AND EXISTS (SELECT 1 FROM entry) RETURNING 1)`,
  };
}

export interface IdempotencyDeps {
  db: Db;
  /** The time keys are claimed at and expire from. */
  now: () => Date;
}

/** Takes the key when it is new, expired, or abandoned by a request that died; returns whether we own it. */
async function tryClaim({ db, now }: IdempotencyDeps, claim: KeyClaim, print: string): Promise<boolean> {
  const at = now();
  const rows = await db.$queryRaw<unknown[]>`
    INSERT INTO "IdempotencyKey" ("accountId", key, fingerprint, owner, "createdAt")
    VALUES (${claim.accountId}, ${claim.key}, ${print}, ${claim.owner}, ${at}::timestamptz)
    ON CONFLICT ("accountId", key) DO UPDATE
      SET fingerprint = EXCLUDED.fingerprint, owner = EXCLUDED.owner, "createdAt" = EXCLUDED."createdAt", status = NULL, body = NULL
      WHERE "IdempotencyKey"."createdAt" <= ${new Date(at.getTime() - KEY_TTL_MS)}::timestamptz
         OR ("IdempotencyKey".status IS NULL AND "IdempotencyKey".fingerprint = EXCLUDED.fingerprint
             AND "IdempotencyKey"."createdAt" <= ${new Date(at.getTime() - ABANDONED_AFTER_MS)}::timestamptz)
    RETURNING owner`;
  return rows.length > 0;
}

/**
 * Claims the key for this request, or returns the stored answer of the first request with
 * it (waiting for it while it runs). 409 when the key came with another request, or when
 * the first request is still running after the wait.
 */
export async function claim(deps: IdempotencyDeps, accountId: string, key: string, print: string): Promise<ClaimResult> {
  const claimed: KeyClaim = { accountId, key, owner: randomUUID() };
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    if (await tryClaim(deps, claimed, print)) return { claim: claimed };
    const held = await deps.db.idempotencyKey.findUnique({ where: { accountId_key: { accountId, key } } });
    if (!held) continue; // expired and removed in between: claim again
    if (held.fingerprint !== print) {
      throw new Conflict("This Idempotency-Key was used with a different request", "idempotency_key_reused");
    }
    if (held.status !== null) return { replay: { status: held.status, body: JSON.parse(held.body ?? "null") } };
    if (Date.now() > deadline) {
      throw new Conflict("A request with this Idempotency-Key is still being answered; retry later", "idempotency_key_in_progress");
    }
    await sleep(POLL_MS);
  }
}

/** The statement that stores the answer of the request that owns the key (through the database or a transaction). */
const storeAnswer = (owner: KeyClaim, answer: StoredAnswer) => Prisma.sql`
  UPDATE "IdempotencyKey" SET status = ${answer.status}, body = ${JSON.stringify(answer.body)} WHERE ${ownedKey(owner)}`;

/** Stores the answer of a request that charged nothing (a miss, no credit). */
export async function store({ db }: Pick<IdempotencyDeps, "db">, owner: KeyClaim, answer: StoredAnswer): Promise<void> {
  await db.$executeRaw(storeAnswer(owner, answer));
}

/**
 * The same for a bulk charge's transaction: it goes ahead only while this request owns the
 * key (locked), and the answer, made from what was charged, commits with it.
 */
export function storeWithBulkCharge(owner: KeyClaim, answerOf: (charged: { datasetId: string | null; credits: number }) => StoredAnswer): BulkChargeHooks {
  return {
    before: async (tx) => {
      const held = await tx.$queryRaw<unknown[]>`SELECT 1 FROM "IdempotencyKey" WHERE ${ownedKey(owner)} FOR UPDATE`;
      if (!held.length) throw new ChargeGuardFailed("the Idempotency-Key was taken over; nothing was charged");
    },
    after: async (tx, charged) => {
      await tx.$executeRaw(storeAnswer(owner, answerOf(charged)));
    },
  };
}

/** Gives the key up after an unexpected failure (nothing was charged), so that a retry runs. */
export async function release({ db }: Pick<IdempotencyDeps, "db">, owner: KeyClaim): Promise<void> {
  await db.$executeRaw`DELETE FROM "IdempotencyKey" WHERE ${ownedKey(owner)}`;
}

/** Removes keys older than 24 hours. */
export async function purgeExpired({ db, now }: IdempotencyDeps): Promise<number> {
  const { count } = await db.idempotencyKey.deleteMany({ where: { createdAt: { lte: new Date(now().getTime() - KEY_TTL_MS) } } });
  return count;
}
