// Runs around the whole suite: collects which (operation, status) pairs the tests produced,
// prints the contract-coverage report, and fails the run when a response had a status the spec
// does not document for its operation, broke the spec, or a log line held an e-mail or a key.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { routesOf } from "../../server/http/operations.ts";
import { loadSpec } from "../../server/spec.ts";
import { prepareEvidenceCache } from "../../server/tracking/ipdata/resolver.ts";
import { prepareMigratedTemplate } from "./database.ts";
import { watchLeftoverProcesses } from "./leftover-processes.ts";

export async function setup(): Promise<() => Promise<void>> {
  const checkLeftovers = watchLeftoverProcesses(path.resolve(import.meta.dirname, "../.."));
  const dir = mkdtempSync(path.join(os.tmpdir(), "contract-report-"));
  process.env.CONTRACT_REPORT_DIR = dir;
  // the migrations run once here (or not at all when an earlier run's snapshot fits); each test
  // file starts from their result
  const dropTemplate = await prepareMigratedTemplate();
  // the network evidence is computed once per data version (10 to 20 s): here, before the test
  // processes start, rather than in each of them within a test's time
  prepareEvidenceCache();
  return async () => {
    try {
      report(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await dropTemplate();
      await checkLeftovers();
    }
  };
}

function lines(dir: string, prefix: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.startsWith(prefix))
    .flatMap((f) => readFileSync(path.join(dir, f), "utf8").split("\n").filter(Boolean));
}

function report(dir: string): void {
  const spec = loadSpec();
  const documented = new Map<string, string[]>();
  for (const route of routesOf(spec)) {
    const op = (spec.paths as Record<string, Record<string, { responses: object }>>)[route.path]![route.method]!;
    documented.set(route.operationId, Object.keys(op.responses));
  }
  const produced = new Set(lines(dir, "coverage"));
  const problems: string[] = [];
  const rows: string[] = [];
  let pairs = 0;
  let tested = 0;
  for (const [operationId, statuses] of documented) {
    const marks = statuses.map((status) => {
      const hit = produced.has(`${operationId} ${status}`);
      pairs += 1;
      tested += hit ? 1 : 0;
      return hit ? `${status}+` : `${status}-`;
    });
    rows.push(`  ${operationId.padEnd(30)} ${marks.join(" ")}`);
  }
  for (const pair of produced) {
    const [operationId, status] = pair.split(" ") as [string, string];
    if (operationId === "-") continue; // no operation matched (unknown path): nothing to check against
    if (!documented.get(operationId)?.includes(status)) problems.push(`undocumented status: ${pair}`);
  }
  const logs = lines(dir, "logs");
  for (const line of logs) {
    if (/"msg":"response does not match the spec"/.test(line)) problems.push(`spec violation: ${line}`);
    if (/[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/.test(line)) problems.push(`e-mail address in a log line: ${line}`);
    if (/lik_[A-Za-z0-9_-]{8,}/.test(line)) problems.push(`API key in a log line: ${line}`);
  }
  console.log(`\nContract coverage (status+ produced by a test, status- not): ${tested} of ${pairs} documented pairs`);
  console.log(rows.join("\n"));
  console.log(`Log lines checked for e-mail addresses and keys: ${logs.length}`);
  if (problems.length) {
    // vitest reports an error thrown here but still exits 0: set the exit code as well
    process.exitCode = 1;
    throw new Error(`Contract check failed:\n${problems.join("\n")}`);
  }
}
