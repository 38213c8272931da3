// Public identifiers: a type prefix and 16 random characters (80 bits), e.g. ds_8f3k2m9q4w7x1z5c.
import { randomBytes } from "node:crypto";

const alphabet = "0123456789abcdefghjkmnpqrstvwxyz"; // Crockford base32, lower case

export function newId(prefix: "acc" | "ds" | "key" | "whe" | "msg" | "era" | "dnet"): string {
  const bytes = randomBytes(16);
  let id = "";
  for (const byte of bytes) id += alphabet[byte & 31];
  return `${prefix}_${id}`;
}

/** E-mail addresses are compared case-insensitively: stored and looked up in this form. */
export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}
