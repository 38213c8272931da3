// Private keys at rest: AES-256-GCM with a key from configuration. Each value is bound to what it
// belongs to (its "context", e.g. the domain) as additional authenticated data, so a ciphertext
// copied onto another row does not decrypt.
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseEncryptionKey } from "../config.ts";
import type { Logger } from "../logging.ts";

const VERSION = "v1";
const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface SecretBox {
  seal(plaintext: string, context: string): string;
  open(sealed: string, context: string): string;
}

export function newEncryptionKey(): Buffer {
  return randomBytes(32);
}

/**
 * The configured key (CTD_ENCRYPTION_KEY, which production requires: server/config.ts), or a
 * development key generated once into `devKeyFile` (beside DATA_DIR), with a warning: values
 * sealed with it are only as safe as that file.
 */
export function resolveEncryptionKey(config: { encryptionKey?: Buffer; devKeyFile: string }, logger: Logger): Buffer {
  if (config.encryptionKey) return config.encryptionKey;
  const file = config.devKeyFile;
  if (!existsSync(file)) {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, newEncryptionKey().toString("hex"), { mode: 0o600 });
    chmodSync(file, 0o600);
  }
  logger.warn("CTD_ENCRYPTION_KEY is not set: private keys are encrypted with a development key", { file });
  const key = parseEncryptionKey(readFileSync(file, "utf8"));
  if (!key) throw new Error(`the development key in ${file} is not 32 bytes (64 hex characters); delete the file to make a new one`);
  return key;
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
