// Throughput of POST /v1/email-lookup on 1,000,000 profiles:
//   npm run bench:lookup [-- --duration 30 --connections 32 --count 1000000 --hit-ratio 0.9]
// Loads the generated profile set (seed 1) into DATABASE_URL, or into the embedded database in
// BENCH_DATA_DIR (default .data/bench-pglite), unless it is there already; starts the service
// (`server/main.ts`, production mode, its own process) on loopback; runs autocannon against it for
// a bounded time; prints req/s and latency percentiles; then checks that the ledger holds exactly
// one entry per 200 answer.
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { generateProfile, generateProfiles } from "../server/contacts/generate.ts";
import { BatchWriter } from "../server/contacts/import.ts";
import { createProgress } from "../server/contacts/progress.ts";
import { openDatabaseOrExit, type Database } from "../server/db/database.ts";
import { createServices } from "../server/services/index.ts";

const SEED = 1;
const MAX_SECONDS = 60;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

const { values } = parseArgs({
  options: {
    duration: { type: "string", default: "30" },
    connections: { type: "string", default: "32" },
    count: { type: "string", default: "1000000" },
    "hit-ratio": { type: "string", default: "0.9" },
  },
});
const duration = Math.min(MAX_SECONDS, Number(values.duration));
const connections = Number(values.connections);
const count = Number(values.count);
const hitRatio = Number(values["hit-ratio"]);

const databaseUrl = process.env.DATABASE_URL || undefined;
const dataDir = path.resolve(root, process.env.BENCH_DATA_DIR ?? ".data/bench-pglite");
const database = databaseUrl ? { url: databaseUrl } : { dataDir };

/** Loads profiles 0..count-1 unless the last of them is there already (a re-run skips this). */
async function loadProfiles(db: Database): Promise<void> {
  const services = createServices(db.prisma);
  if (await services.contacts.find(generateProfile(SEED, count - 1).email)) {
    console.log(`profiles: ${count.toLocaleString("en")} already loaded`);
    return;
  }
  const started = Date.now();
  const writer = new BatchWriter(services.contacts, 2000);
  const progress = createProgress({ total: count, enabled: true });
  let done = 0;
  for (const profile of generateProfiles(SEED, count)) {
    await writer.add(profile);
    progress.update(++done, `${done.toLocaleString("en")} profiles`);
  }
  await writer.flush();
  progress.finish(done, `${done.toLocaleString("en")} profiles`);
  console.log(`profiles: loaded ${count.toLocaleString("en")} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

/** An account whose first dataset cannot run out of credit during the run. */
async function benchAccount(db: Database): Promise<{ accountId: string; key: string }> {
  const services = createServices(db.prisma);
  const email = `bench-${Date.now()}@bench.example`;
  const { accountId } = await services.accounts.createAccount({ name: "Bench", licenceDays: 1, admin: { email, name: "Bench" } });
  const datasetId = await services.datasets.create(accountId, email, { name: "Bench site" });
  await services.credits.setMonthlyLimit(datasetId, 2_000_000_000);
  const { key } = await services.accounts.createApiKey(accountId, "bench");
  return { accountId, key };
}

async function freePort(): Promise<number> {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  server.close();
  return port;
}

/** The service as `npm start` runs it in production, in its own process (its own event loop). */
async function startService(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", "server/main.ts"], {
    cwd: root,
    env: {
      ...process.env,
      NODE_ENV: "production",
      PORT: String(port),
      HOST: "127.0.0.1",
      DATA_DIR: dataDir,
      LOG_LEVEL: "info",
      // one key makes every request: lift the per-key rate limit, the bench measures the lookup
      RATE_LIMIT_REQUESTS: "1000000000",
    },
    stdio: ["ignore", "ignore", "inherit"], // request logs are written (as in production) and dropped
  });
  for (let tries = 0; tries < 600; tries++) {
    if (child.exitCode !== null) throw new Error("the service exited before it listened");
    const up = await fetch(`http://127.0.0.1:${port}/v1/email-lookup`, { method: "POST" }).then(() => true, () => false);
    if (up) return child;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error("the service did not start listening");
}

async function stopService(child: ChildProcess): Promise<void> {
  const exited = once(child, "exit");
  child.kill("SIGTERM");
  await exited;
}

function emailFor(random: number): string {
  return random < hitRatio
    ? generateProfile(SEED, Math.floor((random / hitRatio) * count)).email
    : `nobody.${Math.floor(random * 1e9)}@nowhere.example`;
}

async function load(port: number, key: string) {
  const statuses = new Map<number, number>();
  const result = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections,
    duration,
    requests: [
      {
        method: "POST",
        path: "/v1/email-lookup",
        headers: { "content-type": "application/json", "x-api-key": key },
        setupRequest: (request) => ({ ...request, body: JSON.stringify({ email: emailFor(Math.random()) }) }),
        onResponse: (status) => void statuses.set(status, (statuses.get(status) ?? 0) + 1),
      },
    ],
  });
  return { result, statuses };
}

async function main(): Promise<void> {
  console.log(`database: ${databaseUrl ? "PostgreSQL (DATABASE_URL)" : `embedded PGlite in ${dataDir}`}`);
  let db = await openDatabaseOrExit(database);
  await db.migrate();
  await loadProfiles(db);
  const { accountId, key } = await benchAccount(db);
  await db.close(); // the embedded database is single-process: the service opens it next

  const port = await freePort();
  const service = await startService(port);
  console.log(`load: ${connections} connections for ${duration} s, ${Math.round(hitRatio * 100)}% of the addresses have a profile`);
  let run: Awaited<ReturnType<typeof load>>;
  try {
    run = await load(port, key);
  } finally {
    await stopService(service);
  }
  const { result, statuses } = run;
  const l = result.latency;
  console.log(`requests: ${result.requests.total.toLocaleString("en")} in ${result.duration.toFixed(1)} s, errors ${result.errors}, timeouts ${result.timeouts}`);
  console.log(`statuses: ${[...statuses].sort().map(([s, n]) => `${s} x ${n.toLocaleString("en")}`).join(", ")}`);
  console.log(`req/s: mean ${result.requests.average.toFixed(0)}, p50 ${result.requests.p50}, min ${result.requests.min}`);
  console.log(`latency ms: p50 ${l.p50}, p90 ${l.p90}, p99 ${l.p99}, max ${l.max}, mean ${l.average.toFixed(2)}`);

  db = await openDatabaseOrExit(database);
  try {
    // autocannon drops the requests in flight when the time is up: those may have been charged
    // without their 200 being counted, so the ledger may exceed the 200s by up to `connections`.
    const entries = await db.prisma.creditLedgerEntry.count({ where: { accountId } });
    const charged = statuses.get(200) ?? 0;
    const ok = entries >= charged && entries - charged <= connections;
    console.log(`ledger: ${entries.toLocaleString("en")} entries, ${charged.toLocaleString("en")} answers 200 received (${entries - charged} cut off in flight): ${ok ? "consistent" : "INCONSISTENT"}`);
    if (!ok) process.exitCode = 1;
  } finally {
    await db.close();
  }
}

await main();
