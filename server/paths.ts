// Where the project's files are, the same whether this runs from source (server/*.ts through tsx,
// or in the tests) or built (dist/server/*.js, `npm run build`): files read at run time (the
// spec, curated JSON, the tracking script, the migrations) are found from the project root, not
// beside the running module, since the build holds only the compiled code.
import path from "node:path";
import { fileURLToPath } from "node:url";

const serverDir = path.dirname(fileURLToPath(import.meta.url));

/** The folder that holds package.json: above server/, or above dist/server/. */
export const projectRoot = path.resolve(serverDir, path.basename(path.dirname(serverDir)) === "dist" ? "../.." : "..");

/** A file of the project by its path from the root (`server/tracking/collect/script.js`). */
export const fromRoot = (...parts: string[]): string => path.join(projectRoot, ...parts);

/**
 * A module of this program to run as a process of its own, named without its extension beside
 * `importMetaUrl`: the .ts file through tsx from source, the compiled .js (with its source maps)
 * from dist/.
 */
export function programModule(importMetaUrl: string, relative: string): { file: string; execArgv: string[] } {
  const caller = fileURLToPath(importMetaUrl);
  const built = caller.endsWith(".js");
  const file = path.resolve(path.dirname(caller), `${relative}${built ? ".js" : ".ts"}`);
  return { file, execArgv: built ? ["--enable-source-maps"] : ["--import", "tsx"] };
}
