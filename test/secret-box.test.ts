// The key that seals private keys and webhook secrets at rest: CTD_ENCRYPTION_KEY, or outside
// production a development key in a file, with a warning that names only the file that applies
// to the database in use.
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../server/config.ts";
import { createLogger } from "../server/logging.ts";
import { newEncryptionKey, resolveEncryptionKey, secretBox } from "../server/security/secret-box.ts";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "secret-box-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Resolves the key of `env`'s configuration; the log lines it wrote. */
function resolve(env: Record<string, string | undefined>) {
  const lines: string[] = [];
  const key = resolveEncryptionKey(loadConfig(env).trackingDomains, createLogger("info", (line) => lines.push(line)));
  return { key, logged: lines.map((line) => JSON.parse(line) as { level: string; msg: string; file?: string; from?: string }) };
}

const POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres";

describe("resolveEncryptionKey", () => {
  it("when the embedded database is used without a key, then a development key is made beside its directory and the warning names that file", () => {
    const dataDir = path.join(dir, "pglite");
    const { key, logged } = resolve({ DATA_DIR: dataDir });
    const file = `${dataDir}.dev-encryption.key`;
    expect(logged).toEqual([expect.objectContaining({ level: "warn", msg: expect.stringMatching(/^CTD_ENCRYPTION_KEY is not set/), file })]);
    expect(readFileSync(file, "utf8")).toBe(key.toString("hex"));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(resolve({ DATA_DIR: dataDir }).key).toEqual(key); // the next start uses it again
  });

  it("when PostgreSQL is used without a key, then the warning names a file that is not the embedded database's", () => {
    const dataDir = path.join(dir, "pglite");
    const { key, logged } = resolve({ DATA_DIR: dataDir, DATABASE_URL: POSTGRES });
    const file = path.join(dir, "dev-encryption.key");
    expect(logged).toEqual([expect.objectContaining({ level: "warn", file })]);
    expect(JSON.stringify(logged)).not.toContain("pglite");
    expect(existsSync(`${dataDir}.dev-encryption.key`)).toBe(false);
    expect(resolve({ DATA_DIR: dataDir, DATABASE_URL: POSTGRES }).key).toEqual(key);
  });

  it("when PostgreSQL is used and an earlier release kept the key beside DATA_DIR, then that key is copied, so what it sealed still opens", () => {
    const dataDir = path.join(dir, "pglite");
    const earlier = newEncryptionKey();
    writeFileSync(`${dataDir}.dev-encryption.key`, earlier.toString("hex"));
    const sealed = secretBox(earlier).seal("whsec_old", "endpoint-1");
    const { key, logged } = resolve({ DATA_DIR: dataDir, DATABASE_URL: POSTGRES });
    expect(secretBox(key).open(sealed, "endpoint-1")).toBe("whsec_old");
    expect(logged.map((line) => line.level)).toEqual(["info", "warn"]);
    expect(logged[1]!.file).toBe(path.join(dir, "dev-encryption.key"));
  });

  it("when CTD_ENCRYPTION_KEY is set, then it is the key and nothing is warned or written, on either database", () => {
    const configured = newEncryptionKey().toString("hex");
    for (const env of [{}, { DATABASE_URL: POSTGRES }]) {
      const { key, logged } = resolve({ DATA_DIR: path.join(dir, "pglite"), CTD_ENCRYPTION_KEY: configured, ...env });
      expect(key.toString("hex")).toBe(configured);
      expect(logged).toEqual([]);
    }
    expect([existsSync(path.join(dir, "dev-encryption.key")), existsSync(path.join(dir, "pglite.dev-encryption.key"))]).toEqual([false, false]);
  });
});
