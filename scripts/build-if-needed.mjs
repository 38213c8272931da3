// `npm start` and the tests that start the service run the built code (dist/): this builds it
// when a source file is newer than the last build (or there is none), so that a fresh clone's
// `npm ci && npm start` stays one command. Plain JavaScript, run by node before any build.
// The check reads only file times (tens of milliseconds); tsc itself, even with nothing to do,
// spends about 4 s of CPU reading the program.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** Written after each build here (tsc leaves its .tsbuildinfo alone when nothing changed). */
const stamp = path.join(root, "dist/.built");
/** What the build compiles or is configured by. */
const inputs = ["server", "scripts", "generated", "tsconfig.json", "tsconfig.build.json", "package.json"];

/** The newest modification time under `file` (a file or a folder), in ms. */
function newest(file) {
  const stats = statSync(file);
  if (!stats.isDirectory()) return stats.mtimeMs;
  return readdirSync(file).reduce((max, name) => Math.max(max, newest(path.join(file, name))), stats.mtimeMs);
}

/** Builds when a source is newer than the last build, or always (`npm run build`); whether it built. */
export function buildIfNeeded({ always = false } = {}) {
  const built = existsSync(stamp) && !always ? statSync(stamp).mtimeMs : 0;
  const changed = inputs.map((input) => path.join(root, input)).filter(existsSync).some((input) => newest(input) > built);
  if (!changed) return false;
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  execFileSync(process.execPath, [tsc, "-p", path.join(root, "tsconfig.build.json")], { cwd: root, stdio: "inherit" });
  writeFileSync(stamp, `${new Date().toISOString()}\n`);
  return true;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) buildIfNeeded({ always: process.argv.includes("--always") });
