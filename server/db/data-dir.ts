// The embedded database's directory must be creatable and writable by this user: checked before
// anything is written beside it (the development key, the lock), so that the answer is one line
// that says what to do, not PGlite's or the file system's error from deeper down.
import { accessSync, constants, mkdirSync } from "node:fs";

export class DataDirError extends Error {
  constructor(
    readonly dataDir: string,
    readonly code: string,
  ) {
    super(`DATA_DIR ${dataDir} cannot be written (${code}): give this user write access to it, or choose another directory with DATA_DIR=`);
  }
}

export function ensureWritable(dataDir: string): void {
  try {
    mkdirSync(dataDir, { recursive: true });
    accessSync(dataDir, constants.W_OK);
  } catch (error) {
    throw new DataDirError(dataDir, (error as NodeJS.ErrnoException).code ?? "unknown");
  }
}
