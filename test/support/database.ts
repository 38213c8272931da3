// A fresh, migrated database per test file: in-memory PGlite by default, or a new database on
// the PostgreSQL server named by TEST_DATABASE_URL (dropped again afterwards), or with
// TEST_EMBEDDED=process an embedded data directory served by its own process over the
// PostgreSQL protocol, as `npm start` runs it. The migrations run once per test run
// (test/support/global-setup.ts, prepareMigratedTemplate): each file starts from a snapshot of the
// migrated PGlite data directory (kept between runs until the migrations change), or clones a
// migrated template database.
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { mkdir, readdir, readFile, rename, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { type Database, openDatabase } from "../../server/db/database.ts";
import { DEFAULT_DATABASE_TIMEOUTS } from "../../server/config.ts";
import { applyMigrations, migrationsDir } from "../../server/db/migrations.ts";

export interface TestDatabase extends Database {
  url?: string;
}

/** Set by the global set-up: a PGlite data-directory tarball, or a PostgreSQL template database. */
const SNAPSHOT_ENV = "TEST_DB_SNAPSHOT";
const TEMPLATE_ENV = "TEST_DB_TEMPLATE";

/** `embedded: "process"`: without TEST_DATABASE_URL, the embedded data directory in its own process, whatever TEST_EMBEDDED says. */
export async function createTestDatabase({ embedded = process.env.TEST_EMBEDDED }: { embedded?: string } = {}): Promise<TestDatabase> {
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl && embedded === "process") {
    const dir = mkdtempSync(path.join(os.tmpdir(), "test-embedded-"));
    const db = await openDatabase({ dataDir: await migratedDataDir(path.join(dir, "db")) });
    await db.migrate();
    return { ...db, close: () => db.close().finally(() => rmSync(dir, { recursive: true, force: true })) };
  }
  if (!serverUrl) return openPglite();
  const template = process.env[TEMPLATE_ENV];
  const { url, drop } = await scratchDatabase(serverUrl, `lead_intel_test_${randomBytes(6).toString("hex")}`, template);
  // a transaction waits up to 10 s for a connection (default 2 s): one server holds every file's
  // databases, on a machine the whole suite loads
  const db = await openDatabase({ url, timeouts: { ...DEFAULT_DATABASE_TIMEOUTS, connectMs: 10_000 } });
  if (!template) await db.migrate();
  return {
    ...db,
    url,
    close: async () => {
      await db.close();
      await drop();
    },
  };
}

/**
 * Fills `dataDir` (absent or empty) with the run's migrated snapshot, so that the embedded
 * database's process opens it instead of running initdb and every migration (about 4 s of CPU
 * each time). Without a snapshot (a run on PostgreSQL) the process makes it as `npm start` would.
 */
export async function migratedDataDir(dataDir: string): Promise<string> {
  const snapshot = await migratedSnapshotBlob();
  if (!snapshot) return dataDir;
  const pglite = new PGlite(dataDir, { loadDataDir: snapshot });
  await pglite.waitReady;
  await pglite.close();
  return dataDir;
}

let snapshotBlob: Promise<Blob | undefined> | undefined;

/** The run's migrated snapshot, read once per worker process (the files of a worker share it); undefined on PostgreSQL. */
function migratedSnapshotBlob(): Promise<Blob | undefined> {
  const snapshotFile = process.env[SNAPSHOT_ENV];
  return (snapshotBlob ??= snapshotFile ? readFile(snapshotFile).then((bytes) => new Blob([bytes])) : Promise.resolve(undefined));
}

async function openPglite(): Promise<TestDatabase> {
  const snapshot = await migratedSnapshotBlob();
  if (snapshot) return openDatabase({}, { snapshot });
  const db = await openDatabase({});
  await db.migrate();
  return db;
}

/**
 * Migrates once for the whole run and tells the test files where the result is (environment
 * variables reach the workers). Returns the clean-up.
 */
export async function prepareMigratedTemplate(): Promise<() => Promise<void>> {
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl) {
    process.env[SNAPSHOT_ENV] = await migratedSnapshot();
    return async () => {};
  }
  const name = `lead_intel_template_${randomBytes(6).toString("hex")}`;
  const { url, drop } = await scratchDatabase(serverUrl, name);
  const db = await openDatabase({ url });
  await db.migrate();
  await db.close(); // a template must have no connections while it is copied
  process.env[TEMPLATE_ENV] = name;
  return drop;
}

/** Where migrated PGlite snapshots are kept between runs (node_modules: gone with a fresh install). */
const snapshotCache = path.resolve(import.meta.dirname, "../../node_modules/.cache/lead-intel-test-db");

/**
 * The migrated PGlite data directory as a tarball, made once per set of migrations and PGlite
 * version (about 5 s) and reused by later runs: its name is a hash of both.
 */
async function migratedSnapshot(): Promise<string> {
  const pglitePackage = path.resolve(import.meta.dirname, "../../node_modules/@electric-sql/pglite/package.json");
  const hash = createHash("sha256").update(await readFile(pglitePackage));
  for (const dir of (await readdir(migrationsDir)).sort()) {
    const file = path.join(migrationsDir, dir, "migration.sql");
    hash.update(dir).update(await readFile(file).catch(() => Buffer.alloc(0)));
  }
  const snapshotFile = path.join(snapshotCache, `migrated-${hash.digest("hex").slice(0, 16)}.tar`);
  if (existsSync(snapshotFile)) return snapshotFile;
  const pglite = new PGlite();
  await applyMigrations(new PrismaPGlite(pglite));
  const tarball = await pglite.dumpDataDir("none");
  await pglite.close();
  await mkdir(snapshotCache, { recursive: true });
  const partial = `${snapshotFile}.${process.pid}`;
  await writeFile(partial, Buffer.from(await tarball.arrayBuffer()));
  await rename(partial, snapshotFile); // whole or absent, also for a run beside this one
  return snapshotFile;
}

/**
 * A new database `name` on the PostgreSQL server of `serverUrl` (a copy of `template`, else empty):
 * its URL, and `drop` to remove it (connections closed by force). Tests' and benchmarks' databases.
 */
export async function scratchDatabase(serverUrl: string, name: string, template?: string): Promise<{ url: string; drop: () => Promise<void> }> {
  await adminQuery(serverUrl, `CREATE DATABASE "${name}"${template ? ` TEMPLATE "${template}"` : ""}`);
  const url = Object.assign(new URL(serverUrl), { pathname: `/${name}` }).toString();
  return { url, drop: () => adminQuery(serverUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`) };
}

/** Runs one statement on the PostgreSQL server of `url` (its own connection): CREATE or DROP DATABASE. */
async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
