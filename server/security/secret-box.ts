// Private keys at rest: AES-256-GCM with a key from configuration. Each value is bound to what it
// belongs to (its "context", e.g. the domain) as additional authenticated data, so a ciphertext
// copied onto another row does not decrypt.
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { chmodSync, existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
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
 * development key generated once into `devKeyFile` (server/config.ts says where), with a warning
 * that names that file: values sealed with it are only as safe as the file. On PostgreSQL, a key
 * an earlier release kept in `formerDevKeyFile` (named after the embedded database's directory)
 * is copied, so that what it sealed still opens.
 */
export function resolveEncryptionKey(config: { encryptionKey?: Buffer; devKeyFile: string; formerDevKeyFile?: string }, logger: Logger): Buffer {
  if (config.encryptionKey) return config.encryptionKey;
  const file = config.devKeyFile;
  const former = config.formerDevKeyFile && existsSync(config.formerDevKeyFile) ? config.formerDevKeyFile : undefined;
  if (createOnce(file, former ? readFileSync(former, "utf8") : newEncryptionKey().toString("hex")) && former) {
    logger.info("development encryption key copied to its new file", { from: former, file });
  }
  logger.warn("CTD_ENCRYPTION_KEY is not set: certificate private keys and webhook secrets are sealed with a development key kept in a file", { file });
  const key = parseEncryptionKey(readFileSync(file, "utf8"));
  if (!key) throw new Error(`the development key in ${file} is not 32 bytes (64 hex characters); delete the file to make a new one`);
  return key;
}

/**
 * Writes `content` to `file` unless it exists; true when this call wrote it. The whole file appears
 * at once (a hard link of a finished temporary file), so of processes starting together one writes
 * the key and the others read that complete key.
 */
function createOnce(file: string, content: string): boolean {
  if (existsSync(file)) return false;
  mkdirSync(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, content, { mode: 0o600 });
  chmodSync(temporary, 0o600);
  try {
    linkSync(temporary, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  } finally {
    unlinkSync(temporary);
  }
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
