// A fresh, migrated database per test file: in-memory PGlite by default, or a new database on
// the PostgreSQL server named by TEST_DATABASE_URL (dropped again afterwards), or with
// TEST_EMBEDDED=process an embedded data directory served by its own process over the
// PostgreSQL protocol, as `npm start` runs it. The migrations run once per test run
// (test/support/global-setup.ts, prepareMigratedTemplate): each file starts from a snapshot of the
// migrated PGlite data directory, or clones a migrated template database.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { type Database, openDatabase } from "../../server/db/database.ts";
import { applyMigrations } from "../../server/db/migrations.ts";

export interface TestDatabase extends Database {
  url?: string;
}

/** Set by the global set-up: a PGlite data-directory tarball, or a PostgreSQL template database. */
const SNAPSHOT_ENV = "TEST_DB_SNAPSHOT";
const TEMPLATE_ENV = "TEST_DB_TEMPLATE";

export async function createTestDatabase(): Promise<TestDatabase> {
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl && process.env.TEST_EMBEDDED === "process") {
    const dir = mkdtempSync(path.join(os.tmpdir(), "test-embedded-"));
    const db = await openDatabase({ dataDir: path.join(dir, "db") });
    await db.migrate();
    return { ...db, close: () => db.close().finally(() => rmSync(dir, { recursive: true, force: true })) };
  }
  if (!serverUrl) return openPglite(process.env[SNAPSHOT_ENV]);
  const name = `lead_intel_test_${randomBytes(6).toString("hex")}`;
  const template = process.env[TEMPLATE_ENV];
  await adminQuery(serverUrl, `CREATE DATABASE "${name}"${template ? ` TEMPLATE "${template}"` : ""}`);
  const url = withDatabase(serverUrl, name);
  const db = await openDatabase({ url });
  if (!template) await db.migrate();
  return {
    ...db,
    url,
    close: async () => {
      await db.close();
      await adminQuery(serverUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    },
  };
}

/**
 * Fills `dataDir` (absent or empty) with the run's migrated snapshot, so that the embedded
 * database's process opens it instead of running initdb and every migration (about 4 s of CPU
 * each time). Without a snapshot (a run on PostgreSQL) the process makes it as `npm start` would.
 */
export async function migratedDataDir(dataDir: string): Promise<string> {
  const snapshotFile = process.env[SNAPSHOT_ENV];
  if (!snapshotFile) return dataDir;
  const pglite = new PGlite(dataDir, { loadDataDir: new Blob([await readFile(snapshotFile)]) });
  await pglite.waitReady;
  await pglite.close();
  return dataDir;
}

async function openPglite(snapshotFile: string | undefined): Promise<TestDatabase> {
  if (snapshotFile) return openDatabase({}, { snapshot: new Blob([await readFile(snapshotFile)]) });
  const db = await openDatabase({});
  await db.migrate();
  return db;
}

/**
 * Migrates once for the whole run and tells the test files where the result is (environment
 * variables reach the workers). Returns the clean-up.
 */
export async function prepareMigratedTemplate(snapshotFile: string): Promise<() => Promise<void>> {
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl) {
    const pglite = new PGlite();
    await applyMigrations(new PrismaPGlite(pglite));
    const tarball = await pglite.dumpDataDir("none");
    await writeFile(snapshotFile, Buffer.from(await tarball.arrayBuffer()));
    await pglite.close();
    process.env[SNAPSHOT_ENV] = snapshotFile;
    return async () => {};
  }
  const name = `lead_intel_template_${randomBytes(6).toString("hex")}`;
  await adminQuery(serverUrl, `CREATE DATABASE "${name}"`);
  const db = await openDatabase({ url: withDatabase(serverUrl, name) });
  await db.migrate();
  await db.close(); // a template must have no connections while it is copied
  process.env[TEMPLATE_ENV] = name;
  return () => adminQuery(serverUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
