// Accounts, their licence and their API keys: the operator's side ("account settings").
import { createHash, randomBytes } from "node:crypto";
import type { Db } from "../db/database.ts";
import { newId, normaliseEmail } from "../ids.ts";

const DAY_MS = 86_400_000;
/** lastUsedAt is written at most this often per key, so reads do not turn into writes. */
const LAST_USED_RESOLUTION_MS = 60_000;

export function hashApiKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
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

export function accountService(db: Db) {
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
        const user = await tx.user.upsert({ where: { email }, create: { email }, update: {} });
        await tx.membership.create({
          data: { accountId, userId: user.id, name: input.admin.name, role: "admin", state: "active" },
        });
        return { accountId, adminUserId: Number(user.id) };
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

    async setLicence(accountId: string, validUntil: Date): Promise<void> {
      await db.account.update({ where: { id: accountId }, data: { licenceValidUntil: validUntil } });
    },

    /** The key is returned once, here; only its hash is stored. */
    async createApiKey(accountId: string, label: string, expiresAt?: Date): Promise<{ key: string; info: ApiKeyInfo }> {
      const key = `lik_${randomBytes(24).toString("base64url")}`;
      const info = await db.apiKey.create({
        data: { id: newId("key"), accountId, label, hash: hashApiKey(key), expiresAt: expiresAt ?? null },
        select: keyFields,
      });
      return { key, info };
    },

    listApiKeys(accountId: string): Promise<ApiKeyInfo[]> {
      return db.apiKey.findMany({ where: { accountId }, select: keyFields, orderBy: { createdAt: "asc" } });
    },

    /** Revoking is idempotent: the first revocation time is kept. */
    async revokeApiKey(keyId: string): Promise<boolean> {
      const key = await db.apiKey.findUnique({ where: { id: keyId }, select: { revokedAt: true } });
      if (!key) return false;
      await db.apiKey.updateMany({ where: { id: keyId, revokedAt: null }, data: { revokedAt: new Date() } });
      return true;
    },

    async checkApiKey(key: string, now = new Date()): Promise<KeyCheck> {
      const found = await db.apiKey.findUnique({
        where: { hash: hashApiKey(key) },
        select: {
          id: true,
          accountId: true,
          expiresAt: true,
          revokedAt: true,
          lastUsedAt: true,
          account: { select: { licenceValidUntil: true } },
        },
      });
      if (!found) return { ok: false, reason: "invalid" };
      if (found.revokedAt) return { ok: false, reason: "revoked" };
      if (found.expiresAt && found.expiresAt <= now) return { ok: false, reason: "expired" };
      const staleBefore = new Date(now.getTime() - LAST_USED_RESOLUTION_MS);
      // Most requests skip this write; the condition keeps concurrent requests from writing twice.
      if (!found.lastUsedAt || found.lastUsedAt < staleBefore) {
        await db.apiKey.updateMany({
          where: { id: found.id, OR: [{ lastUsedAt: null }, { lastUsedAt: { lt: staleBefore } }] },
          data: { lastUsedAt: now },
        });
      }
      const licenceValidUntil = found.account.licenceValidUntil;
      return { ok: true, accountId: found.accountId, keyId: found.id, licensed: !!licenceValidUntil && licenceValidUntil > now };
    },
  };
}

const keyFields = { id: true, label: true, createdAt: true, lastUsedAt: true, expiresAt: true, revokedAt: true } as const;

export type AccountService = ReturnType<typeof accountService>;
