// Accounts, their licence and their API keys: the operator's side ("account settings").
import { hash, randomBytes } from "node:crypto";
import type { Db, Sql } from "../db/database.ts";
import { Prisma } from "../../generated/prisma/client.ts";
import { NotFound } from "../domain/errors.ts";
import { deleteLeadsOfAccount } from "../tracking/write/lead-store.ts";
import { newId, normaliseEmail } from "../ids.ts";
import { deleteSegmentsOfAccount } from "./segments.ts";
import { addMembership } from "./users.ts";

const DAY_MS = 86_400_000;
/** lastUsedAt is written at most this often per key, so reads do not turn into writes. */
const LAST_USED_RESOLUTION_MS = 60_000;
/**
 * A key's record (revocation, expiry, the account's licence) is read from the database at most
 * this often per key and process: a revocation or a licence change made elsewhere (the operator
 * CLI, another instance) takes effect within this bound; one made through this process at once.
 * Expiry times themselves are compared with the clock at every request.
 */
export const KEY_CACHE_MS = 5_000;
/** Keys remembered at most (the least recently read are forgotten first). */
const KEY_CACHE_ENTRIES = 10_000;

export function hashApiKey(key: string): string {
  return hash("sha256", key, "hex"); // one call, no Hash object: it runs twice per request (rate limit, key)
}

export interface NewAccount {
  name: string;
  licenceDays: number;
  admin: { email: string; name: string };
}

export interface ApiKeyInfo {
  id: string;
  label: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  expiresAt: Date | null;
  revokedAt: Date | null;
}

export type KeyCheck =
  | { ok: true; accountId: string; keyId: string; licensed: boolean }
  | { ok: false; reason: "invalid" | "revoked" | "expired" };

interface KeyRecord {
  id: string;
  accountId: string;
  expiresAt: Date | null;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
  licenceValidUntil: Date | null;
  /** performance.now() when it was read. */
  readAt: number;
}

/** Key records by key hash, each reused for `ttlMs`; only keys that exist (an unknown key is looked up every time). */
export interface KeyCache {
  ttlMs: number;
  records: Map<string, KeyRecord>;
}

/** This process's key cache (createServices makes one). */
export function newKeyCache(ttlMs = KEY_CACHE_MS): KeyCache {
  return { ttlMs, records: new Map() };
}

/** `hotSql` runs the key check on the driver (every request makes one); `db` the rest. */
export interface AccountDeps {
  db: Db;
  hotSql: Sql;
  keyCache: KeyCache;
}

async function keyRecord({ hotSql, keyCache }: Pick<AccountDeps, "hotSql" | "keyCache">, hash: string): Promise<KeyRecord | undefined> {
  const { records } = keyCache;
  const cached = records.get(hash);
  if (cached && performance.now() - cached.readAt < keyCache.ttlMs) return cached;
  records.delete(hash);
  const [found] = await hotSql<Omit<KeyRecord, "readAt">>(Prisma.sql`
    SELECT k.id, k."accountId", k."expiresAt", k."revokedAt", k."lastUsedAt", a."licenceValidUntil"
    FROM "ApiKey" k JOIN "Account" a ON a.id = k."accountId"
    WHERE k.hash = ${hash}`);
  if (!found) return undefined;
  const record = { ...found, readAt: performance.now() };
  if (records.size >= KEY_CACHE_ENTRIES) records.delete(records.keys().next().value!);
  records.set(hash, record);
  return record;
}

async function requireAccount({ db }: Pick<AccountDeps, "db">, accountId: string): Promise<void> {
  if (!(await db.account.count({ where: { id: accountId } }))) throw new NotFound(`no account ${accountId}`);
}

/** Creates the account, its licence and its first (active) admin in one transaction. */
export async function createAccount({ db }: Pick<AccountDeps, "db">, input: NewAccount): Promise<{ accountId: string; adminUserId: number }> {
  const accountId = newId("acc");
  const email = normaliseEmail(input.admin.email);
  return db.$transaction(async (tx) => {
    await tx.account.create({
      data: {
        id: accountId,
        name: input.name,
        licenceValidUntil: new Date(Date.now() + input.licenceDays * DAY_MS),
      },
    });
    const userId = await addMembership(tx, accountId, { email, name: input.admin.name, role: "admin", state: "active" });
    return { accountId, adminUserId: Number(userId) };
  });
}

/** The first account the user administers, if any. */
export async function accountAdministeredBy({ db }: Pick<AccountDeps, "db">, email: string): Promise<string | undefined> {
  const membership = await db.membership.findFirst({
    where: { role: "admin", user: { email: normaliseEmail(email) } },
    orderBy: { createdAt: "asc" },
    select: { accountId: true },
  });
  return membership?.accountId;
}

/** The account's name, if the account exists. */
export async function nameOf({ db }: Pick<AccountDeps, "db">, accountId: string): Promise<string | undefined> {
  return (await db.account.findUnique({ where: { id: accountId }, select: { name: true } }))?.name;
}

export async function rename({ db }: Pick<AccountDeps, "db">, accountId: string, name: string): Promise<void> {
  await db.account.updateMany({ where: { id: accountId }, data: { name } });
}

/**
 * Deletes the account and everything in it, in one transaction. Segments and assigned leads
 * go first: their foreign keys to a membership take no cascade (NO ACTION), the rest cascades.
 */
export async function deleteAccount({ db }: Pick<AccountDeps, "db">, accountId: string): Promise<void> {
  await db.$transaction([deleteSegmentsOfAccount(db, accountId), deleteLeadsOfAccount(db, accountId), db.account.deleteMany({ where: { id: accountId } })]);
}

/** NotFound when there is no such account. */
export async function setLicence({ db, keyCache }: Pick<AccountDeps, "db" | "keyCache">, accountId: string, validUntil: Date): Promise<void> {
  const { count } = await db.account.updateMany({ where: { id: accountId }, data: { licenceValidUntil: validUntil } });
  if (!count) throw new NotFound(`no account ${accountId}`);
  keyCache.records.clear();
}

/** The key is returned once, here; only its hash is stored. NotFound when there is no such account. */
export async function createApiKey({ db }: Pick<AccountDeps, "db">, accountId: string, label: string, expiresAt?: Date): Promise<{ key: string; info: ApiKeyInfo }> {
  await requireAccount({ db }, accountId);
  const key = `lik_${randomBytes(24).toString("base64url")}`;
  const info = await db.apiKey.create({
    data: { id: newId("key"), accountId, label, hash: hashApiKey(key), expiresAt: expiresAt ?? null },
    select: keyFields,
  });
  return { key, info };
}

/** NotFound when there is no such account. */
export async function listApiKeys({ db }: Pick<AccountDeps, "db">, accountId: string): Promise<ApiKeyInfo[]> {
  await requireAccount({ db }, accountId);
  return db.apiKey.findMany({ where: { accountId }, select: keyFields, orderBy: { createdAt: "asc" } });
}

/** Revoking is idempotent: the first revocation time is kept. */
export async function revokeApiKey({ db, keyCache }: Pick<AccountDeps, "db" | "keyCache">, keyId: string): Promise<boolean> {
  const key = await db.apiKey.findUnique({ where: { id: keyId }, select: { revokedAt: true } });
  if (!key) return false;
  await db.apiKey.updateMany({ where: { id: keyId, revokedAt: null }, data: { revokedAt: new Date() } });
  keyCache.records.clear();
  return true;
}

/** Reads the key's record at most once per KEY_CACHE_MS; writes lastUsedAt at most once a minute. */
export async function checkApiKey(deps: AccountDeps, key: string, now = new Date()): Promise<KeyCheck> {
  const found = await keyRecord(deps, hashApiKey(key));
  if (!found) return { ok: false, reason: "invalid" };
  if (found.revokedAt) return { ok: false, reason: "revoked" };
  if (found.expiresAt && found.expiresAt <= now) return { ok: false, reason: "expired" };
  const staleBefore = new Date(now.getTime() - LAST_USED_RESOLUTION_MS);
  // Most requests skip this write; the condition keeps concurrent requests from writing twice.
  if (!found.lastUsedAt || found.lastUsedAt < staleBefore) {
    found.lastUsedAt = now;
    await deps.db.apiKey.updateMany({
      where: { id: found.id, OR: [{ lastUsedAt: null }, { lastUsedAt: { lt: staleBefore } }] },
      data: { lastUsedAt: now },
    });
  }
  const { licenceValidUntil } = found;
  return { ok: true, accountId: found.accountId, keyId: found.id, licensed: !!licenceValidUntil && licenceValidUntil > now };
}

const keyFields = { id: true, label: true, createdAt: true, lastUsedAt: true, expiresAt: true, revokedAt: true } as const;
