// Global set-up of the process and external tiers (vitest.config.ts): the tests that start the
// service or a CLI start the built code (dist/), as `npm start` and `npm run admin` do. Built
// once per run, only when a source is newer than the last build (scripts/build-if-needed.mjs).
import { execFileSync } from "node:child_process";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "../..");

/** Set once built in this run: the second tier's set-up (same process) does not check again. */
const BUILT_ENV = "TEST_BUILT_DIST";

export function setup(): void {
  if (process.env[BUILT_ENV]) return;
  execFileSync(process.execPath, [path.join(root, "scripts/build-if-needed.mjs")], { cwd: root, stdio: "inherit" });
  process.env[BUILT_ENV] = "1";
}
