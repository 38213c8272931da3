// Cookieless visitor ids (a dataset with consentMode `cookieless`): nothing is stored in the
// browser; the collector derives the id from a secret salt of the UTC day, the dataset, the
// address and the user agent. The salt is in the database so that every collector process
// agrees on it, and the salts of past days are deleted: a day's ids cannot be recomputed, nor
// linked to another day's, once it is over.
import { createHash, randomBytes } from "node:crypto";
import type { Db } from "../../db/database.ts";

/** Deletes the salts of the UTC days before `at`'s (also run by the retention job, for days without a cookieless request). */
export async function purgePastSalts(db: Db, at: Date): Promise<void> {
  await db.$executeRaw`DELETE FROM "VisitorSalt" WHERE day < ${at.toISOString().slice(0, 10)}::date`;
}

export function cookielessVisitorIds(db: Db) {
  /** This process's salt of the current day (one look-up per day and process). */
  let current: { day: string; salt: Promise<string> } | undefined;

  /** The day's salt: the first process to ask makes it; the days before are deleted. */
  async function saltOf(day: string): Promise<string> {
    await db.$executeRaw`INSERT INTO "VisitorSalt" (day, salt) VALUES (${day}::date, ${randomBytes(32).toString("hex")}) ON CONFLICT (day) DO NOTHING`;
    await purgePastSalts(db, new Date(`${day}T00:00:00Z`));
    const [row] = await db.$queryRaw<{ salt: string }[]>`SELECT salt FROM "VisitorSalt" WHERE day = ${day}::date`;
    return row!.salt;
  }

  return {
    /** The visitor id of a request at `at` (the script's id pattern: 8 to 64 of A-Z, a-z, 0-9, _ and -). */
    async visitorId(at: Date, datasetId: string, ip: string, userAgent: string): Promise<string> {
      const day = at.toISOString().slice(0, 10);
      if (current?.day !== day) current = { day, salt: saltOf(day) };
      const pending = current;
      const salt = await pending.salt.catch((error: unknown) => {
        if (current === pending) current = undefined; // asked again by the next request
        throw error;
      });
      return `cl${createHash("sha256").update(`${salt}\n${datasetId}\n${ip}\n${userAgent}`).digest("base64url").slice(0, 30)}`;
    },
  };
}

export type CookielessVisitorIds = ReturnType<typeof cookielessVisitorIds>;
