// Private keys at rest: AES-256-GCM with a key from configuration. Each value is bound to what it
// belongs to (its "context", e.g. the domain) as additional authenticated data, so a ciphertext
// copied onto another row does not decrypt.
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

const VERSION = "v1";
const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface SecretBox {
  seal(plaintext: string, context: string): string;
  open(sealed: string, context: string): string;
}

/** Parses a 32-byte key given as 64 hex characters or as base64. */
export function parseEncryptionKey(text: string): Buffer {
  const trimmed = text.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, "hex") : Buffer.from(trimmed, "base64");
  if (key.length !== 32) throw new Error("CTD_ENCRYPTION_KEY must be 32 bytes: 64 hex characters or 44 base64 characters");
  return key;
}

export function newEncryptionKey(): Buffer {
  return randomBytes(32);
}

/** `key` may be given lazily: it is asked for on first use (a development key is made on demand). */
export function secretBox(key: Buffer | (() => Buffer)): SecretBox {
  let resolved: Buffer | undefined;
  const keyOf = () => (resolved ??= typeof key === "function" ? key() : key);
  return {
    seal(plaintext, context) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv("aes-256-gcm", keyOf(), iv);
      cipher.setAAD(Buffer.from(context));
      const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      return `${VERSION}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64")}`;
    },
    open(sealed, context) {
      const [version, payload] = sealed.split(":");
      if (version !== VERSION || !payload) throw new Error("unknown encrypted value format");
      const raw = Buffer.from(payload, "base64");
      const decipher = createDecipheriv("aes-256-gcm", keyOf(), raw.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(context));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
    },
  };
}
