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

/** `sql` runs the key check on the driver (every request makes one); `db` the rest. */
// Why long: a service factory whose methods share its dependencies; issue 37 item 4 makes it a module with explicit dependencies.
export function accountService(db: Db, sql: Sql, { keyCacheMs = KEY_CACHE_MS } = {}) {
  /** Key records by key hash; only keys that exist (an unknown key is looked up every time). */
  const keyRecords = new Map<string, KeyRecord>();

  async function keyRecord(hash: string): Promise<KeyRecord | undefined> {
    const cached = keyRecords.get(hash);
    if (cached && performance.now() - cached.readAt < keyCacheMs) return cached;
    keyRecords.delete(hash);
    const [found] = await sql<Omit<KeyRecord, "readAt">>(Prisma.sql`
      SELECT k.id, k."accountId", k."expiresAt", k."revokedAt", k."lastUsedAt", a."licenceValidUntil"
      FROM "ApiKey" k JOIN "Account" a ON a.id = k."accountId"
      WHERE k.hash = ${hash}`);
    if (!found) return undefined;
    const record = { ...found, readAt: performance.now() };
    if (keyRecords.size >= KEY_CACHE_ENTRIES) keyRecords.delete(keyRecords.keys().next().value!);
    keyRecords.set(hash, record);
    return record;
  }

  async function requireAccount(accountId: string): Promise<void> {
    if (!(await db.account.count({ where: { id: accountId } }))) throw new NotFound(`no account ${accountId}`);
  }

  return {
    /** Creates the account, its licence and its first (active) admin in one transaction. */
    async createAccount(input: NewAccount): Promise<{ accountId: string; adminUserId: number }> {
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
    },

    /** The first account the user administers, if any. */
    async accountAdministeredBy(email: string): Promise<string | undefined> {
      const membership = await db.membership.findFirst({
        where: { role: "admin", user: { email: normaliseEmail(email) } },
        orderBy: { createdAt: "asc" },
        select: { accountId: true },
      });
      return membership?.accountId;
    },

    /** The account's name, if the account exists. */
    async nameOf(accountId: string): Promise<string | undefined> {
      return (await db.account.findUnique({ where: { id: accountId }, select: { name: true } }))?.name;
    },

    async rename(accountId: string, name: string): Promise<void> {
      await db.account.updateMany({ where: { id: accountId }, data: { name } });
    },

    /**
     * Deletes the account and everything in it, in one transaction. Segments and assigned leads
     * go first: their foreign keys to a membership take no cascade (NO ACTION), the rest cascades.
     */
    async deleteAccount(accountId: string): Promise<void> {
      await db.$transaction([
        deleteSegmentsOfAccount(db, accountId),
        deleteLeadsOfAccount(db, accountId),
        db.account.deleteMany({ where: { id: accountId } }),
      ]);
    },

    /** NotFound when there is no such account. */
    async setLicence(accountId: string, validUntil: Date): Promise<void> {
      const { count } = await db.account.updateMany({ where: { id: accountId }, data: { licenceValidUntil: validUntil } });
      if (!count) throw new NotFound(`no account ${accountId}`);
      keyRecords.clear();
    },

    /** The key is returned once, here; only its hash is stored. NotFound when there is no such account. */
    async createApiKey(accountId: string, label: string, expiresAt?: Date): Promise<{ key: string; info: ApiKeyInfo }> {
      await requireAccount(accountId);
      const key = `lik_${randomBytes(24).toString("base64url")}`;
      const info = await db.apiKey.create({
        data: { id: newId("key"), accountId, label, hash: hashApiKey(key), expiresAt: expiresAt ?? null },
        select: keyFields,
      });
      return { key, info };
    },

    /** NotFound when there is no such account. */
    async listApiKeys(accountId: string): Promise<ApiKeyInfo[]> {
      await requireAccount(accountId);
      return db.apiKey.findMany({ where: { accountId }, select: keyFields, orderBy: { createdAt: "asc" } });
    },

    /** Revoking is idempotent: the first revocation time is kept. */
    async revokeApiKey(keyId: string): Promise<boolean> {
      const key = await db.apiKey.findUnique({ where: { id: keyId }, select: { revokedAt: true } });
      if (!key) return false;
      await db.apiKey.updateMany({ where: { id: keyId, revokedAt: null }, data: { revokedAt: new Date() } });
      keyRecords.clear();
      return true;
    },

    /** Reads the key's record at most once per KEY_CACHE_MS; writes lastUsedAt at most once a minute. */
    async checkApiKey(key: string, now = new Date()): Promise<KeyCheck> {
      const found = await keyRecord(hashApiKey(key));
      if (!found) return { ok: false, reason: "invalid" };
      if (found.revokedAt) return { ok: false, reason: "revoked" };
      if (found.expiresAt && found.expiresAt <= now) return { ok: false, reason: "expired" };
      const staleBefore = new Date(now.getTime() - LAST_USED_RESOLUTION_MS);
      // Most requests skip this write; the condition keeps concurrent requests from writing twice.
      if (!found.lastUsedAt || found.lastUsedAt < staleBefore) {
        found.lastUsedAt = now;
        await db.apiKey.updateMany({
          where: { id: found.id, OR: [{ lastUsedAt: null }, { lastUsedAt: { lt: staleBefore } }] },
          data: { lastUsedAt: now },
        });
      }
      const { licenceValidUntil } = found;
      return { ok: true, accountId: found.accountId, keyId: found.id, licensed: !!licenceValidUntil && licenceValidUntil > now };
    },
  };
}

const keyFields = { id: true, label: true, createdAt: true, lastUsedAt: true, expiresAt: true, revokedAt: true } as const;

export type AccountService = ReturnType<typeof accountService>;
