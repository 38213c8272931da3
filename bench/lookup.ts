// The paid look-up (POST /v1/email-lookup) under load, against a hand-written floor:
//   npm run bench:lookup [-- --rounds 3 --duration 10 --connections 32 --count 1000000 --hit-ratio 0.9
//                           --scenario default|workers|hot-dataset]
// Servers, each its own process on loopback, started once and measured in interleaved rounds
// (same load, same machine state, one after the other):
//   - baseline: bench/baseline-server.ts, node:http + pg doing the same look-up (PostgreSQL only)
//   - expert baseline: the same with named prepared statements and a 5 s key cache (the
//     service's own bounds), what an expert writes by hand
//   - service, bulk: POST /v1/email-lookup/bulk with 100 found addresses per request (profiles/s
//     against single look-ups)
//   - service: server/main.ts in production mode, on PostgreSQL (DATABASE_URL) and/or on the
//     embedded database (BENCH_DATA_DIR, default .data/bench-pglite)
// BENCH_CPU_PROF_DIR=dir: the services write a CPU profile each (node --cpu-prof) into dir when
// they stop, to see where the look-up's CPU goes under this load.
// Scenarios: `default` = baseline, service, service on the embedded database; `workers` = the
// service with WEB_CONCURRENCY 1 and 2; `hot-dataset` = all charges on one dataset vs spread
// over 100 datasets.
// Profiles 0..count-1 (seed 1) are loaded once and kept (re-runs skip the load). Every answer
// must have its expected status (200 with the asked profile for a generated address, 404 for
// an unknown one; a bulk answer 200 with all 100 charged) and the ledger must hold exactly one
// entry per 200 and one credit per profile answered: else the run fails. The ratios to the
// expert baseline are issue 22's targets (>= 0.8x its look-ups/s, p99 <= 1.5x); they are
// printed with "met" or "not met", and do not decide the exit code (answers do).
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { generateProfile, generateProfiles } from "../server/contacts/generate.ts";
import { BatchWriter } from "../server/contacts/import.ts";
import { createProgress } from "../server/contacts/progress.ts";
import { type DatabaseConfig, loadConfig } from "../server/config.ts";
import { HERMETIC_DNS_ENV, hermeticEnv } from "../test/support/config.ts";
import { openDatabaseOrExit, type Database } from "../server/db/database.ts";
import { createServices } from "../server/services/index.ts";
import { type LoadResult, percentile, runLoad, treeCpuSeconds } from "./closed-loop.ts";
import * as contacts from "../server/services/contacts.ts";
import * as credits from "../server/services/credits.ts";
import * as datasets from "../server/services/datasets.ts";
import * as accounts from "../server/services/accounts.ts";

const SEED = 1;
/** No run may take longer than this, whatever the options say. */
const MAX_RUN_MINUTES = 20;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "3" },
    duration: { type: "string", default: "10" },
    warmup: { type: "string", default: "3" },
    connections: { type: "string", default: "32" },
    count: { type: "string", default: "1000000" },
    "hit-ratio": { type: "string", default: "0.9" },
    scenario: { type: "string", default: "default" },
  },
});
const rounds = Math.max(1, Number(values.rounds));
const duration = Math.min(60, Number(values.duration));
const warmup = Math.min(30, Number(values.warmup));
const connections = Number(values.connections);
const count = Number(values.count);
const hitRatio = Number(values["hit-ratio"]);

const postgresUrl = process.env.DATABASE_URL || undefined;
const embeddedDir = path.resolve(root, process.env.BENCH_DATA_DIR ?? ".data/bench-pglite");

type Kind = "postgres" | "embedded";
interface Target {
  name: string;
  kind: Kind;
  program: "service" | "baseline" | "expert";
  workers?: number;
  /** Addresses per request through the bulk look-up; absent: single look-ups. */
  bulk?: number;
  /** Datasets of the account; the look-ups name one at random when more than one. */
  datasets?: number;
}

function targetsOf(scenario: string): Target[] {
  const pg = (t: Omit<Target, "kind">): Target[] => (postgresUrl ? [{ ...t, kind: "postgres" }] : []);
  switch (scenario) {
    case "default":
      return [
        ...pg({ name: "baseline (node:http + pg)", program: "baseline" }),
        ...pg({ name: "expert baseline", program: "expert" }),
        ...pg({ name: "service, PostgreSQL", program: "service" }),
        ...pg({ name: "service, bulk of 100", program: "service", bulk: 100 }),
        { name: "service, embedded PGlite", kind: "embedded", program: "service" },
      ];
    case "workers":
      return [
        ...pg({ name: "baseline (node:http + pg)", program: "baseline" }),
        ...pg({ name: "service, 1 worker", program: "service", workers: 1 }),
        ...pg({ name: "service, 2 workers", program: "service", workers: 2 }),
      ];
    case "hot-dataset":
      return [
        ...pg({ name: "service, all on 1 dataset", program: "service", datasets: 1 }),
        ...pg({ name: "service, over 100 datasets", program: "service", datasets: 100 }),
      ];
    default:
      throw new Error(`--scenario must be default, workers or hot-dataset`);
  }
}

const databaseOf = (kind: Kind): DatabaseConfig => (kind === "postgres" ? { url: postgresUrl } : { dataDir: embeddedDir });

/** Loads profiles 0..count-1 unless the last of them is there already. */
async function loadProfiles(db: Database): Promise<void> {
  const services = createServices(db.prisma, { config: loadConfig(HERMETIC_DNS_ENV) });
  if (await contacts.find(services, generateProfile(SEED, count - 1).email)) {
    console.log(`profiles: ${count.toLocaleString("en")} already loaded (${db.kind})`);
    return;
  }
  const started = Date.now();
  const writer = new BatchWriter(contacts.importStore(services), 2000);
  const progress = createProgress({ total: count, enabled: true });
  let done = 0;
  for (const profile of generateProfiles(SEED, count)) {
    await writer.add(profile);
    progress.update(++done, `${done.toLocaleString("en")} profiles`);
  }
  await writer.flush();
  progress.finish(done, `${done.toLocaleString("en")} profiles`);
  console.log(`profiles: loaded ${count.toLocaleString("en")} in ${((Date.now() - started) / 1000).toFixed(0)} s (${db.kind})`);
}

interface BenchAccount {
  accountId: string;
  key: string;
  datasetIds: string[];
}

/** An account whose datasets cannot run out of credit during the run. */
async function benchAccount(db: Database, datasetCount: number): Promise<BenchAccount> {
  const services = createServices(db.prisma, { config: loadConfig(HERMETIC_DNS_ENV) });
  const email = `bench-${randomBytes(6).toString("hex")}@bench.example`;
  const { accountId } = await accounts.createAccount(services, { name: "Bench", licenceDays: 1, admin: { email, name: "Bench" } });
  const datasetIds: string[] = [];
  for (let i = 0; i < datasetCount; i++) {
    const datasetId = await datasets.create(services, accountId, email, { name: `Bench site ${i}` });
    await credits.setMonthlyLimit(services, datasetId, 2_000_000_000);
    datasetIds.push(datasetId);
  }
  const { key } = await accounts.createApiKey(services, accountId, "bench");
  return { accountId, key, datasetIds };
}

/** Opens each database once: migrate, load the profiles, make one account per target. */
async function prepare(targets: Target[]): Promise<BenchAccount[]> {
  const accounts: BenchAccount[] = [];
  for (const kind of new Set(targets.map((t) => t.kind))) {
    const db = await openDatabaseOrExit(databaseOf(kind));
    try {
      await db.migrate();
      await loadProfiles(db);
      for (const [i, target] of targets.entries()) {
        if (target.kind === kind) accounts[i] = await benchAccount(db, target.datasets ?? 1);
      }
    } finally {
      await db.close(); // the embedded database: the service opens it next
    }
  }
  return accounts;
}

/** Ledger entries and credits per account, read after the servers stopped. */
async function ledgerCounts(targets: Target[], accounts: BenchAccount[]): Promise<{ entries: number; credits: number }[]> {
  const counts: { entries: number; credits: number }[] = [];
  for (const kind of new Set(targets.map((t) => t.kind))) {
    const db = await openDatabaseOrExit(databaseOf(kind));
    try {
      for (const [i, target] of targets.entries()) {
        if (target.kind !== kind) continue;
        const where = { accountId: accounts[i]!.accountId };
        const { _count, _sum } = await db.prisma.creditLedgerEntry.aggregate({ where, _count: true, _sum: { credits: true } });
        counts[i] = { entries: _count, credits: _sum.credits ?? 0 };
      }
    } finally {
      await db.close();
    }
  }
  return counts;
}

interface Running {
  child: ChildProcess;
  port: number;
}
/** Every server started, so that the watchdog can end them too. */
const children = new Set<ChildProcess>();

/** Starts the program on a free port and waits until it answers HTTP (at most 120 s). */
async function start(target: Target): Promise<Running> {
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  const entry = target.program === "service" ? "server/main.ts" : "bench/baseline-server.ts";
  const expert = target.program === "expert" ? { BASELINE_EXPERT: "1" } : {};
  const database = target.kind === "postgres" ? { DATABASE_URL: postgresUrl! } : { DATA_DIR: embeddedDir, DATABASE_URL: "" };
  // BENCH_CPU_PROF_DIR: each service writes a V8 CPU profile there when it stops (node --cpu-prof)
  const profile = target.program === "service" && process.env.BENCH_CPU_PROF_DIR ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF_DIR}`] : [];
  const child = spawn(process.execPath, [...profile, "--import", "tsx", entry], {
    cwd: root,
    env: hermeticEnv({
      ...process.env,
      ...database,
      ...expert,
      NODE_ENV: "production",
      PORT: String(port),
      HOST: "127.0.0.1",
      LOG_LEVEL: "info", // request log lines are written, as in production, and dropped
      CTD_ENCRYPTION_KEY: randomBytes(32).toString("hex"),
      REQUIRE_HTTPS: "false", // plain HTTP on loopback, as behind a TLS-terminating proxy
      SMTP_URL: "smtp://127.0.0.1:2525", // production requires one; the bench sends no mail
      RATE_LIMIT_REQUESTS: "1000000000", // one key makes every request: the bench measures the look-up
      WEB_CONCURRENCY: String(target.workers ?? 1),
    }),
    stdio: ["ignore", "ignore", "inherit"],
  });
  children.add(child);
  for (let tries = 0; tries < 600; tries++) {
    if (child.exitCode !== null) throw new Error(`${target.name}: exited with ${child.exitCode} before it listened`);
    const up = await fetch(`http://127.0.0.1:${port}/v1/email-lookup`, { method: "POST" }).then(() => true, () => false);
    if (up) return { child, port };
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  child.kill("SIGKILL");
  throw new Error(`${target.name}: did not listen within 120 s`);
}

async function stop({ child }: Running): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = once(child, "exit");
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
  await exited;
  clearTimeout(timer);
}

const emailOf = (index: number) => generateProfile(SEED, index).email;

/** A bulk look-up of `size` consecutive profiles from a random one: all found, all charged. */
function bulkRequestFor(account: BenchAccount, size: number) {
  return () => {
    const first = Math.floor(Math.random() * (count - size));
    const items = Array.from({ length: size }, (_, i) => ({ email: emailOf(first + i) }));
    return {
      path: `/v1/email-lookup/bulk`,
      headers: { "content-type": "application/json", "x-api-key": account.key },
      body: JSON.stringify({ items }),
      expect: { status: 200, bodyIncludes: `"charged":${size},` },
    };
  };
}

function requestFor(account: BenchAccount, target: Target) {
  if (target.bulk) return bulkRequestFor(account, target.bulk);
  return () => {
    const random = Math.random();
    const found = random < hitRatio;
    const email = found ? emailOf(Math.floor((random / hitRatio) * count)) : `nobody.${Math.floor(random * 1e12)}@nowhere.example`;
    const { datasetIds } = account;
    const query = datasetIds.length > 1 ? `?datasetId=${datasetIds[Math.floor(Math.random() * datasetIds.length)]}` : "";
    return {
      path: `/v1/email-lookup${query}`,
      headers: { "content-type": "application/json", "x-api-key": account.key },
      body: JSON.stringify({ email }),
      expect: found ? { status: 200, bodyIncludes: `"${email}"` } : { status: 404 },
    };
  };
}

interface Totals {
  results: LoadResult[];
  cpuSeconds: number;
}

async function measure(server: Running, account: BenchAccount, target: Target, seconds: number): Promise<{ result: LoadResult; cpu: number }> {
  const cpuBefore = treeCpuSeconds(server.child.pid!) ?? NaN;
  const result = await runLoad({ port: server.port, connections, seconds, next: requestFor(account, target) });
  const cpu = (treeCpuSeconds(server.child.pid!) ?? NaN) - cpuBefore;
  return { result, cpu };
}

const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toLocaleString("en", { maximumFractionDigits: digits, minimumFractionDigits: digits }) : "n/a");

function summary(totals: Totals) {
  const requests = totals.results.reduce((n, r) => n + r.requests, 0);
  const seconds = totals.results.reduce((n, r) => n + r.seconds, 0);
  const latencies = Float64Array.from(totals.results.flatMap((r) => [...r.latencies])).sort();
  return {
    requests,
    perSecond: requests / seconds,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    cpuMicros: (totals.cpuSeconds / requests) * 1e6,
  };
}

async function main(): Promise<number> {
  const targets = targetsOf(values.scenario!);
  if (!postgresUrl) console.log("DATABASE_URL is not set: the embedded database only (set it for the baseline and the ratio)");
  if (!targets.length) throw new Error("nothing to measure in this scenario without DATABASE_URL");
  const accounts = await prepare(targets);
  const servers: Running[] = [];
  const totals: Totals[] = targets.map(() => ({ results: [], cpuSeconds: 0 }));
  const warmed: LoadResult[] = [];
  try {
    for (const target of targets) servers.push(await start(target));
    console.log(
      `load: ${connections} connections, ${Math.round(hitRatio * 100)}% found, ${rounds} interleaved rounds of ${duration} s per server ` +
        `after ${warmup} s of warm-up; ${count.toLocaleString("en")} profiles`,
    );
    for (const [i, server] of servers.entries()) warmed.push((await measure(server, accounts[i]!, targets[i]!, warmup)).result);
    for (let round = 1; round <= rounds; round++) {
      for (const [i, server] of servers.entries()) {
        const { result, cpu } = await measure(server, accounts[i]!, targets[i]!, duration);
        totals[i]!.results.push(result);
        totals[i]!.cpuSeconds += cpu;
        const rate = result.requests / result.seconds;
        console.log(
          `  round ${round}  ${targets[i]!.name.padEnd(28)} ${fmt(rate).padStart(6)} req/s  p50 ${fmt(percentile(result.latencies, 0.5), 1)} ms` +
            `  p99 ${fmt(percentile(result.latencies, 0.99), 1)} ms  CPU ${fmt((cpu / result.requests) * 1e6)} µs/req`,
        );
      }
    }
  } finally {
    await Promise.all(servers.map(stop));
  }

  const problems: string[] = [];
  const ledgers = await ledgerCounts(targets, accounts);
  const rows = targets.map((target, i) => {
    const all = [warmed[i], ...totals[i]!.results].filter((r): r is LoadResult => !!r);
    const ok = all.reduce((n, r) => n + (r.statuses.get(200) ?? 0), 0);
    const unexpected = all.reduce((n, r) => n + r.unexpected + r.errors, 0);
    if (unexpected) problems.push(`${target.name}: ${unexpected} unexpected answers or errors, e.g. ${all.flatMap((r) => r.examples).slice(0, 3).join(" | ")}`);
    if (!ok) problems.push(`${target.name}: no 200 answer at all, so the ledger check proves nothing`);
    const { entries, credits } = ledgers[i]!;
    if (entries !== ok) problems.push(`${target.name}: the ledger holds ${entries} entries for ${ok} answers 200`);
    const profiles = ok * (target.bulk ?? 1);
    if (credits !== profiles) problems.push(`${target.name}: the ledger holds ${credits} credits for ${profiles} profiles answered`);
    return { target, ...summary(totals[i]!), ok, ledger: entries };
  });

  const reference = rows.find((r) => r.target.program === "baseline") ?? rows[0]!;
  const expertRow = rows.find((r) => r.target.program === "expert");
  const ratio = (r: (typeof rows)[number], to: (typeof rows)[number] | undefined) =>
    !to || r === to ? "1" : `${fmt(r.perSecond / to.perSecond, 2)} / ${fmt(r.p99 / to.p99, 2)}`;
  console.log(
    `\n| ${values.scenario} | requests/s | profiles/s | p50 ms | p99 ms | server CPU µs/request | ÷ ${reference.target.name.split(" ")[0]} (throughput / p99) |` +
      `${expertRow ? " ÷ expert (throughput / p99) |" : ""} ledger = 200s |`,
  );
  console.log(`|---|---|---|---|---|---|---|${expertRow ? "---|" : ""}---|`);
  for (const r of rows) {
    const profiles = r.perSecond * (r.target.bulk ?? hitRatio);
    console.log(
      `| ${r.target.name} | ${fmt(r.perSecond)} | ${fmt(profiles)} | ${fmt(r.p50, 1)} | ${fmt(r.p99, 1)} | ${fmt(r.cpuMicros)} | ${ratio(r, reference)} |` +
        `${expertRow ? ` ${r.target.bulk ? "n/a" : ratio(r, expertRow)} |` : ""} ${fmt(r.ledger)} = ${fmt(r.ok)} |`,
    );
  }
  const service = rows.find((r) => r.target.program === "service" && r.target.kind === "postgres" && !r.target.bulk && !r.target.workers);
  if (service && expertRow) {
    const met = service.perSecond >= 0.8 * expertRow.perSecond && service.p99 <= 1.5 * expertRow.p99;
    console.log(
      `\ntarget (issue 22): the service on PostgreSQL >= 0.8x the expert baseline's look-ups/s and p99 <= 1.5x: ` +
        `${fmt(service.perSecond / expertRow.perSecond, 2)}x / ${fmt(service.p99 / expertRow.p99, 2)}x, ${met ? "met" : "not met"}`,
    );
  }
  if (problems.length) {
    console.error(`\nFAILED:\n  ${problems.join("\n  ")}`);
    return 1;
  }
  console.log("\nall answers as expected; the ledger holds exactly one entry per 200 and one credit per profile answered");
  return 0;
}

const watchdog = setTimeout(() => {
  console.error(`the benchmark took longer than ${MAX_RUN_MINUTES} minutes: stopped`);
  for (const child of children) child.kill("SIGKILL");
  process.exit(1);
}, MAX_RUN_MINUTES * 60_000);
watchdog.unref();
process.exitCode = await main();
clearTimeout(watchdog);
