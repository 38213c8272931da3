// One entry point to the database: the embedded PGlite by default, PostgreSQL when a URL is given.
import { mkdir, open, readFile, unlink } from "node:fs/promises";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import type { SqlMigrationAwareDriverAdapterFactory } from "@prisma/driver-adapter-utils";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { PrismaClient } from "../../generated/prisma/client.ts";
import type { DatabaseConfig } from "../config.ts";
import { applyMigrations } from "./migrations.ts";

export type Db = PrismaClient;

export interface Database {
  prisma: PrismaClient;
  kind: "pglite" | "postgres";
  /** Applies pending migrations; returns their names. */
  migrate(): Promise<string[]>;
  /** True when the database answers a query. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

export class DatabaseLockedError extends Error {}

export async function openDatabase(config: DatabaseConfig): Promise<Database> {
  if (config.url) {
    const url = config.url;
    // The schema engine holds a session advisory lock until its connection closes: give it
    // one connection of its own and close it afterwards.
    const migrate = async () => {
      const pool = new pg.Pool({ connectionString: url, max: 1 });
      try {
        return await applyMigrations(new PrismaPg(pool));
      } finally {
        await pool.end();
      }
    };
    return wrap("postgres", new PrismaPg({ connectionString: url, max: 20 }), migrate, async () => {});
  }
  const releaseLock = config.dataDir ? await lockDataDir(config.dataDir) : async () => {};
  try {
    const pglite = config.dataDir ? new PGlite(config.dataDir) : new PGlite();
    await pglite.waitReady;
    const adapter = new PrismaPGlite(pglite);
    return wrap("pglite", adapter, () => applyMigrations(adapter), async () => {
      await pglite.close();
      await releaseLock();
    });
  } catch (error) {
    await releaseLock();
    throw error;
  }
}

/** For commands: a locked embedded database ends the process with the lock's message, not a stack. */
export async function openDatabaseOrExit(config: DatabaseConfig): Promise<Database> {
  try {
    return await openDatabase(config);
  } catch (error) {
    if (!(error instanceof DatabaseLockedError)) throw error;
    console.error(error.message);
    process.exit(1);
  }
}

function wrap(
  kind: Database["kind"],
  adapter: SqlMigrationAwareDriverAdapterFactory,
  migrate: () => Promise<string[]>,
  closeDriver: () => Promise<void>,
): Database {
  const prisma = new PrismaClient({ adapter });
  return {
    prisma,
    kind,
    migrate,
    ping: () => prisma.$queryRaw`SELECT 1`.then(() => true, () => false),
    close: async () => {
      await prisma.$disconnect();
      await closeDriver();
    },
  };
}

/**
 * PGlite is single-process: two processes on one data directory would corrupt it. A lock file
 * holding the owner's pid keeps the second one out; a lock left by a dead process is taken over.
 */
async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  const lockPath = `${dataDir}.lock`;
  await mkdir(path.dirname(lockPath), { recursive: true });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(lockPath, "wx");
      await handle.writeFile(String(process.pid));
      await handle.close();
      return () => unlink(lockPath).catch(() => {});
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const owner = Number(await readFile(lockPath, "utf8").catch(() => ""));
      if (owner && isAlive(owner)) {
        throw new DatabaseLockedError(
          `The embedded database ${dataDir} is in use by process ${owner}. Stop that process, ` +
            `or give this one another DATA_DIR, or use PostgreSQL through DATABASE_URL.`,
        );
      }
      await unlink(lockPath).catch(() => {}); // stale: its owner is gone
    }
  }
  throw new DatabaseLockedError(`Could not take the lock ${lockPath}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
