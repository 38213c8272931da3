// Builds the installable partner client (client/ -> client/dist, ESM + .d.ts with the generated
// contract types) and, with --pack DIR, packs it into DIR with `npm pack`. The package's version
// is the spec's info.version, stamped into client/package.json when they differ.
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { parse } from "yaml";
import { projectRoot as root } from "../server/paths.ts";

const clientDir = path.join(root, "client");
const manifestPath = path.join(clientDir, "package.json");

const specVersion = String((parse(readFileSync(path.join(root, "spec/openapi.yaml"), "utf8")) as { info: { version: string } }).info.version);
const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as { version: string };
if (manifest.version !== specVersion) {
  manifest.version = specVersion;
  writeFileSync(manifestPath, JSON.stringify(manifest, null, 2) + "\n");
  console.error(`client/package.json: version set to the spec's ${specVersion}`);
}

rmSync(path.join(clientDir, "dist"), { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
execFileSync(process.execPath, [tsc, "-p", path.join(clientDir, "tsconfig.build.json")], { stdio: "inherit" });

const packIndex = process.argv.indexOf("--pack");
if (packIndex !== -1) {
  const destination = path.resolve(process.argv[packIndex + 1] ?? ".");
  const [packed] = JSON.parse(
    execFileSync("npm", ["pack", clientDir, "--pack-destination", destination, "--json", "--ignore-scripts"], { encoding: "utf8" }),
  ) as { filename: string }[];
  console.log(path.join(destination, packed!.filename));
}
