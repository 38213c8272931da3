// The layer order of server/ and of server/tracking/'s rooms, written once here (docs/contributing.md
// explains it): a folder, or a file directly in server/, imports only what lies in a layer below its
// own, and two units of one layer import neither each other. So no two folders need each other, and
// a reader goes down from main.ts to the leaves without climbing back. Every import of
// server/**/*.ts counts: static, dynamic and type-only.
import { readFileSync } from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { repositoryRoot, typeScriptFiles } from "./support/sources.ts";

type Layers = readonly (readonly string[])[];

/** server/'s folders and files, top to bottom. */
const SERVER_LAYERS: Layers = [
  ["main.ts"],
  // what the process prints for a person at the terminal (the demo's banner, which reads demo.ts's type)
  ["demo-banner.ts"],
  // what the process starts: the app, its moving parts, the demo, the cluster's workers, the listener
  ["app.ts", "runtime.ts", "demo.ts", "cluster.ts", "listen.ts"],
  ["routes", "lead-generator.ts"],
  ["http"],
  ["services"],
  // a page view's life: collector's pieces, ingest log, writer, erasure and retention
  ["tracking"],
  // the organisation behind an address of a shared network
  ["identity"],
  // mail, alerts, webhook deliveries (the erasure and retention reach deliveries here)
  ["notify"],
  ["jobs", "ctd", "contacts", "rate-limiter.ts"],
  ["security", "db"],
  ["domain", "contract.ts"],
  ["config.ts", "logging.ts", "metrics.ts", "ids.ts", "seeded-random.ts", "spec.ts"],
  ["paths.ts"],
];

/**
 * server/tracking/'s rooms, top to bottom: the erasure of a subject and retention (they reach the
 * log and the stores), the ingest log with the writer loop that drains it (its transaction calls
 * the batch), the batch and the stores it writes, what the collector keeps, the IP data.
 */
const TRACKING_LAYERS: Layers = [["privacy"], ["log"], ["write"], ["collect"], ["ipdata"]];

interface Import {
  /** Both relative to the repository. */
  from: string;
  to: string;
}

/** The imports between files under `dir` (relative specifiers only: packages are not units). */
function importsWithin(dir: string): Import[] {
  return typeScriptFiles(dir).flatMap((file) =>
    ts
      .preProcessFile(readFileSync(file, "utf8"), true, true)
      .importedFiles.filter((f) => f.fileName.startsWith("."))
      .map((f) => path.resolve(path.dirname(file), f.fileName))
      .filter((target) => target.startsWith(dir + path.sep))
      .map((target) => ({ from: path.relative(repositoryRoot, file), to: path.relative(repositoryRoot, target) })),
  );
}

/** The unit of a file under `dir`: its folder directly under `dir`, or its own name. */
const unitIn = (dir: string) => (file: string) => path.relative(dir, path.resolve(repositoryRoot, file)).split(path.sep)[0]!;

/** What breaks the order: imports that climb (or cross a layer), pairs of units importing each other, units the order does not place. */
function layerViolations(imports: readonly Import[], layers: Layers, unitOf: (file: string) => string) {
  const layerOf = new Map(layers.flatMap((units, i) => units.map((unit) => [unit, i] as const)));
  const between = imports.map((i) => ({ ...i, a: unitOf(i.from), b: unitOf(i.to) })).filter((i) => i.a !== i.b);
  const unplaced = [...new Set(between.flatMap((i) => [i.a, i.b]).filter((unit) => !layerOf.has(unit)))].sort();
  const upward = between
    .filter((i) => layerOf.has(i.a) && layerOf.has(i.b) && layerOf.get(i.a)! >= layerOf.get(i.b)!)
    .map((i) => `${i.from} -> ${i.to}: ${i.a} is not above ${i.b}`);
  const pairs = new Set(between.map((i) => `${i.a} -> ${i.b}`));
  const bothWays = [...new Set(between.filter((i) => i.a < i.b && pairs.has(`${i.b} -> ${i.a}`)).map((i) => `${i.a} <-> ${i.b}`))];
  return { upward, bothWays, unplaced };
}

const server = path.join(repositoryRoot, "server");
const tracking = path.join(server, "tracking");

describe("layers", () => {
  it("when server/'s imports are read, then each folder imports only folders below it and no two import each other", () => {
    const imports = importsWithin(server);
    expect(layerViolations(imports, SERVER_LAYERS, unitIn(server))).toEqual({ upward: [], bothWays: [], unplaced: [] });
    // the reader sees what it should: a static, a type-only and a dynamic import across folders
    expect(imports).toContainEqual({ from: "server/routes/index.ts", to: "server/http/operations.ts" });
    expect(imports).toContainEqual({ from: "server/routes/index.ts", to: "server/services/index.ts" });
    expect(imports).toContainEqual({ from: "server/main.ts", to: "server/app.ts" });
  });

  it("when server/tracking/'s imports are read, then each room imports only rooms below it and no two import each other", () => {
    const imports = importsWithin(tracking);
    expect(layerViolations(imports, TRACKING_LAYERS, unitIn(tracking))).toEqual({ upward: [], bothWays: [], unplaced: [] });
    expect(imports).toContainEqual({ from: "server/tracking/log/queue-table.ts", to: "server/tracking/write/batch.ts" });
  });

  it("when a folder imports one above it, two import each other or one has no layer, then the check names them", () => {
    const imports = [
      { from: "x/low/a.ts", to: "x/high/b.ts" },
      { from: "x/high/b.ts", to: "x/low/a.ts" },
      { from: "x/high/c.ts", to: "x/new/d.ts" },
      { from: "x/low/e.ts", to: "x/low/f.ts" },
    ];
    const unit = (file: string) => file.split("/")[1]!;
    expect(layerViolations(imports, [["high"], ["low"]], unit)).toEqual({
      upward: ["x/low/a.ts -> x/high/b.ts: low is not above high"],
      bothWays: ["high <-> low"],
      unplaced: ["new"],
    });
    // one layer's units import neither each other
    expect(layerViolations([{ from: "x/a/1.ts", to: "x/b/2.ts" }], [["a", "b"]], unit).upward).toEqual(["x/a/1.ts -> x/b/2.ts: a is not above b"]);
  });
});
