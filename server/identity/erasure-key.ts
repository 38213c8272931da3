// The deployment's hash key (table ErasureKey, one row, made on first use) and the keyed hashes
// made with it: an erasure tombstone's hash of a visitor id or an e-mail address
// (server/tracking/write/erasure-tombstones.ts) and the identity evidence's contributor (the same
// e-mail hash, so that an erasure finds a person's contribution: identities.ts). The only code that
// writes ErasureKey.
import { createHmac, randomBytes } from "node:crypto";
import type { Prisma } from "../../generated/prisma/client.ts";

/** A transaction or the client itself. */
type Client = Pick<Prisma.TransactionClient, "$queryRaw" | "$executeRaw">;

/** The deployment's hash key: the first caller makes it. */
export async function keyOf(db: Client): Promise<string> {
  await db.$executeRaw`INSERT INTO "ErasureKey" (id, key) VALUES (1, ${randomBytes(32).toString("hex")}) ON CONFLICT (id) DO NOTHING`;
  return (await existingKey(db))!;
}

/** The key when one was made (always, once a tombstone exists). */
export async function existingKey(db: Client): Promise<string | undefined> {
  const [row] = await db.$queryRaw<{ key: string }[]>`SELECT key FROM "ErasureKey" WHERE id = 1`;
  return row?.key;
}

/** The keyed hash of a visitor id, or of a value compared as an address (trimmed, lower case). */
export function hasher(key: string) {
  const hash = (value: string) => createHmac("sha256", key).update(value).digest("hex");
  return { visitor: (visitorId: string) => hash(`visitor\n${visitorId}`), email: (value: string) => hash(`email\n${value.trim().toLowerCase()}`) };
}
