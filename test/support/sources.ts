// The project's own TypeScript sources, for the tests that read code rather than run it (the
// layer order, the tables' owners, the length of functions).
import { readdirSync } from "node:fs";
import path from "node:path";

export const repositoryRoot = path.resolve(import.meta.dirname, "../..");

/** The .ts files under `dir` (absolute), in a stable order. */
export function typeScriptFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .flatMap((entry) => {
      const file = path.join(dir, entry.name);
      return entry.isDirectory() ? typeScriptFiles(file) : entry.name.endsWith(".ts") ? [file] : [];
    });
}
