// PGlite is single-process: two processes on one data directory would corrupt it. A lock file
// `DATA_DIR.lock` names the owner (its pid, and the socket it serves the database on, if any);
// a second opener is refused, or connects to that socket; a lock left by a dead process is
// taken over. An owner whose parent has gone marks the lock `closing` (markClosing): an opener
// waits for it to finish closing (a restart right after Ctrl-C) instead of being refused.
import { mkdir, open, readFile, rename, unlink, writeFile } from "node:fs/promises";
import path from "node:path";

export class DatabaseLockedError extends Error {}

export interface LockOwner {
  pid: number;
  /** Where the owner serves the database over the PostgreSQL protocol (a Unix socket directory). */
  socketDir?: string;
  /** The owner is closing the database and will release the lock (its parent has gone). */
  closing?: boolean;
}

/** The longest an opener waits for a closing owner to release the directory. */
const CLOSING_WAIT_MS = 30_000;

const lockPathOf = (dataDir: string) => `${dataDir}.lock`;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The live owner of the data directory, if any (a lock file in the older form holds the pid alone). */
export async function lockOwner(dataDir: string): Promise<LockOwner | undefined> {
  const text = await readFile(lockPathOf(dataDir), "utf8").catch(() => "");
  let owner: LockOwner | undefined;
  try {
    owner = text.startsWith("{") ? (JSON.parse(text) as LockOwner) : { pid: Number(text) };
  } catch {
    return undefined;
  }
  return owner.pid && isAlive(owner.pid) ? owner : undefined;
}

/**
 * Marks this process's lock as closing (it is about to release it): written beside it and renamed
 * over it, so that an opener never reads a half-written lock (empty: no owner) and takes over.
 */
export async function markClosing(dataDir: string, socketDir?: string): Promise<void> {
  const lockPath = lockPathOf(dataDir);
  const written = `${lockPath}.${process.pid}.tmp`;
  await writeFile(written, JSON.stringify({ pid: process.pid, socketDir, closing: true } satisfies LockOwner))
    .then(() => rename(written, lockPath))
    .catch(() => unlink(written).catch(() => {}));
}

/** The live owner, once an owner that is closing has let go (bounded by CLOSING_WAIT_MS: then it is reported as the owner). */
export async function settledLockOwner(dataDir: string): Promise<LockOwner | undefined> {
  const deadline = Date.now() + CLOSING_WAIT_MS;
  for (;;) {
    const owner = await lockOwner(dataDir);
    if (!owner?.closing || Date.now() > deadline) return owner;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export const lockedMessage = (dataDir: string, owner: LockOwner) =>
  `The embedded database ${dataDir} is in use by process ${owner.pid}. Stop that process, ` +
  `or give this one another DATA_DIR, or use PostgreSQL through DATABASE_URL.`;

/** Takes the lock for this process; returns its release. */
export async function lockDataDir(dataDir: string, socketDir?: string): Promise<() => Promise<void>> {
  const lockPath = lockPathOf(dataDir);
  await mkdir(path.dirname(lockPath), { recursive: true });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(lockPath, "wx");
      await handle.writeFile(JSON.stringify({ pid: process.pid, socketDir } satisfies LockOwner));
      await handle.close();
      return () => unlink(lockPath).catch(() => {});
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const owner = await settledLockOwner(dataDir);
      if (owner) throw new DatabaseLockedError(lockedMessage(dataDir, owner));
      await unlink(lockPath).catch(() => {}); // stale: its owner is gone
    }
  }
  throw new DatabaseLockedError(`Could not take the lock ${lockPath}`);
}
