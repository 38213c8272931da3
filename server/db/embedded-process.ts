// The embedded database's own process, started by openDatabase() (server/db/database.ts) with
// the data directory as argument: takes the directory's lock, applies pending migrations, serves
// the database on a Unix socket, and reports { socketDir, applied } to its parent over IPC.
// It lives as long as its parent: when the IPC channel closes (the parent closed the database,
// exited or was killed) it closes PGlite cleanly and releases the lock. Ctrl-C and SIGTERM are
// for the parent, which drains its requests first and then lets this process go.
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { DatabaseLockedError, lockDataDir, markClosing } from "./data-dir-lock.ts";
import { serveEmbedded, SOCKET_PORT } from "./embedded-server.ts";
import { allMigrationsApplied, applyMigrations } from "./migrations.ts";

export type EmbeddedMessage =
  | { type: "ready"; socketDir: string; applied: string[] }
  | { type: "failed"; locked: boolean; message: string };

/** Unix socket paths are limited to about 100 bytes: next to the data directory when short enough. */
async function socketDirFor(dataDir: string): Promise<string> {
  const beside = `${dataDir}.run`;
  const socketFile = path.join(beside, `.s.PGSQL.${SOCKET_PORT}`);
  return socketFile.length <= 100 ? beside : mkdtemp(path.join(os.tmpdir(), "pglite-"));
}

/** To the parent, while it is there (it may have gone during a step: then this process closes). */
const send = (message: EmbeddedMessage) => {
  if (process.connected) process.send?.(message);
};

async function main(dataDir: string): Promise<void> {
  const socketDir = await socketDirFor(dataDir);
  const release = await lockDataDir(dataDir, socketDir);
  const pglite = new PGlite(dataDir);
  await pglite.waitReady;
  const upToDate = await allMigrationsApplied(async (sql) => (await pglite.query<{ migration_name: string }>(sql)).rows);
  const applied = upToDate ? [] : await applyMigrations(new PrismaPGlite(pglite));
  const server = await serveEmbedded(pglite, socketDir);
  let closing = false;
  stop = async () => {
    if (closing) return;
    closing = true;
    // a new process on this directory (a restart) waits for the lock rather than being refused
    await markClosing(dataDir, socketDir);
    await server.stop();
    await pglite.close();
    await release();
    process.exit(0);
  };
  // the parent went away while this process was still starting (Ctrl-C during a first start's
  // migrations): the step in hand has finished, now close cleanly rather than serve nobody
  if (parentGone) await stop();
  send({ type: "ready", socketDir, applied });
}

/** Set once the database serves; until then a lost parent is only noted, and acted on when the step in hand is done. */
let stop: (() => Promise<void>) | undefined;
let parentGone = false;
process.on("disconnect", () => {
  parentGone = true;
  void stop?.();
});

process.on("SIGINT", () => {});
process.on("SIGTERM", () => {});
const dataDir = path.resolve(process.argv[2] ?? "");
await main(dataDir).catch((error: Error) => {
  send({ type: "failed", locked: error instanceof DatabaseLockedError, message: error.message });
  process.exit(1);
});
