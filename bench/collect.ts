// Tracking throughput on PostgreSQL:
//   npm run bench:collect [-- --duration 15 --connections 32 --batch 20 --rate 250]
// 1. Resolution in this process: memory of the resolution data (RSS after a full GC, before and
//    after loading) and time per address (1,000,000 random public IPv4 addresses and 200,000 IPv6).
// 2. A fresh database on the PostgreSQL server of BENCH_DATABASE_URL (default: the local server),
//    dropped afterwards; the service (server/main.ts, production mode, its own process) behind a
//    trusted proxy, so that X-Forwarded-For carries addresses of business networks.
// 3. autocannon posts batches of page views to /collect, twice for a bounded time: as fast as the
//    service answers (throughput: accepted, and written once the ingest writer has emptied the
//    queue), then at a fixed rate of `rate` requests/s (default 250, i.e. 5,000 page views/s in
//    batches of 20: the latency at the target load). Then it checks the answers: every request
//    202, every queued event written as exactly one visit, and the leads' visit counts summing to
//    the visits. Wrong answers fail the run (exit 1); missed targets are reported.
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import pg from "pg";
import { openDatabase } from "../server/db/database.ts";
import { createServices } from "../server/services/index.ts";
import { parseIp } from "../server/tracking/ip.ts";
import { classifyNetwork } from "../server/tracking/network-class.ts";
import { sharedResolver } from "../server/tracking/resolver.ts";
import { freePort, startProcess, startService, stopService } from "./service.ts";
import { loadConfig } from "../server/config.ts";

const MAX_SECONDS = 60;
const TARGETS = { writtenPerSecond: 5000, p99Ms: 50, microsPerAddress: 5, resolutionMb: 150 };

const { values } = parseArgs({
  options: {
    duration: { type: "string", default: "15" },
    rate: { type: "string", default: "250" },
    /** `separate`: the ingest writer runs in its own process (npm run ingest) beside the service. */
    writer: { type: "string", default: "in-process" },
    connections: { type: "string", default: "32" },
    batch: { type: "string", default: "20" },
  },
});
const duration = Math.min(MAX_SECONDS, Number(values.duration));
const connections = Number(values.connections);
const batchSize = Number(values.batch);
const rate = Number(values.rate);
const separateWriter = values.writer === "separate";
const serverUrl = process.env.BENCH_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";

const gc = () => (globalThis as { gc?: () => void }).gc?.();
const rssMb = () => {
  gc();
  return process.memoryUsage().rss / 1e6;
};
const randomV4 = () => `${1 + Math.floor(Math.random() * 222)}.${Math.floor(Math.random() * 256)}.${Math.floor(Math.random() * 256)}.${Math.floor(Math.random() * 256)}`;
const randomV6 = () => `2${Math.floor(Math.random() * 0xfff).toString(16).padStart(3, "0")}:${randomBytes(2).toString("hex")}:${randomBytes(2).toString("hex")}::1`;

function timePerAddress(addresses: string[], resolve: (ip: string) => unknown): number {
  const started = process.hrtime.bigint();
  for (const ip of addresses) resolve(ip);
  return Number(process.hrtime.bigint() - started) / 1e3 / addresses.length;
}

function measureResolution() {
  const before = rssMb();
  const loadStarted = Date.now();
  const resolver = sharedResolver();
  const loadMs = Date.now() - loadStarted;
  const memoryMb = rssMb() - before;
  const v4 = Array.from({ length: 1_000_000 }, randomV4);
  const v6 = Array.from({ length: 200_000 }, randomV6);
  timePerAddress(v4.slice(0, 50_000), (ip) => resolver.resolve(ip)); // warm-up
  return {
    resolver,
    loadMs,
    memoryMb,
    networkV4: timePerAddress(v4, (ip) => resolver.resolve(ip, { geo: false })),
    networkV6: timePerAddress(v6, (ip) => resolver.resolve(ip, { geo: false })),
    withCityV4: timePerAddress(v4.slice(0, 200_000), (ip) => resolver.resolve(ip)),
  };
}

/** Addresses of business networks: the first host of ranges the rule classifies as business. */
function businessAddresses(resolver: ReturnType<typeof sharedResolver>, count: number): string[] {
  const found: string[] = [];
  while (found.length < count) {
    const ip = randomV4();
    const parsed = parseIp(ip)!;
    const as = resolver.asns.lookup(parsed);
    if (as && classifyNetwork(as, resolver.evidenceOf(as.asn)).type === "business") found.push(ip);
  }
  return found;
}

async function adminQuery(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

async function prepareDatabase(url: string): Promise<string> {
  const db = await openDatabase({ url });
  try {
    await db.migrate();
    const services = createServices(db.prisma, { config: loadConfig({}) });
    const email = "bench@bench.example";
    const { accountId } = await services.accounts.createAccount({ name: "Bench", licenceDays: 1, admin: { email, name: "Bench" } });
    return await services.datasets.create(accountId, email, { name: "Bench site" });
  } finally {
    await db.close();
  }
}

async function load(port: number, datasetId: string, addresses: string[], overallRate?: number) {
  const statuses = new Map<number, number>();
  let queued = 0;
  const pageViews = () => {
    const visitorId = randomBytes(16).toString("hex");
    return JSON.stringify({
      events: Array.from({ length: batchSize }, (_, i) => ({ type: "pageview", visitorId, url: `https://www.bench.example/page/${i}`, title: `Page ${i}` })),
    });
  };
  const started = Date.now();
  const result = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections,
    duration,
    overallRate,
    requests: [
      {
        method: "POST",
        path: `/collect?dataset=${datasetId}`,
        setupRequest: (request) => ({
          ...request,
          headers: {
            "content-type": "text/plain",
            "user-agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
            "x-forwarded-for": addresses[Math.floor(Math.random() * addresses.length)]!,
          },
          body: pageViews(),
        }),
        onResponse: (status, body) => {
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          if (status === 202) queued += (JSON.parse(body) as { queued: number }).queued;
        },
      },
    ],
  });
  return { result, statuses, queued, started };
}

async function waitForDrain(url: string): Promise<{ drainedAt: number; visits: number; leadVisits: number }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const deadline = Date.now() + 180_000;
    for (;;) {
      const { rows } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM "IngestEvent"`);
      if (Number(rows[0]!.n) === 0) break;
      if (Date.now() > deadline) throw new Error(`the queue still holds ${rows[0]!.n} events after 180 s`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const drainedAt = Date.now();
    const visits = Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM "Visit"`)).rows[0]!.n);
    const leadVisits = Number((await client.query<{ n: string }>(`SELECT coalesce(sum("visitCount"), 0) AS n FROM "Lead"`)).rows[0]!.n);
    return { drainedAt, visits, leadVisits };
  } finally {
    await client.end();
  }
}

const verdict = (ok: boolean) => (ok ? "meets" : "MISSES");

async function main(): Promise<void> {
  if (!(globalThis as { gc?: unknown }).gc) console.log("(run with node --expose-gc for exact memory figures: npm run bench:collect does)");
  const r = measureResolution();
  console.log(`resolution data: ${r.memoryMb.toFixed(0)} MB RSS (loaded in ${r.loadMs} ms)  [target <= ${TARGETS.resolutionMb} MB: ${verdict(r.memoryMb <= TARGETS.resolutionMb)}]`);
  console.log(
    `per address: network ${r.networkV4.toFixed(2)} µs (IPv4), ${r.networkV6.toFixed(2)} µs (IPv6)  [target <= ${TARGETS.microsPerAddress} µs: ${verdict(Math.max(r.networkV4, r.networkV6) <= TARGETS.microsPerAddress)}]; with city ${r.withCityV4.toFixed(2)} µs (IPv4; the collector asks the city only for business and education networks)`,
  );
  const addresses = businessAddresses(r.resolver, 2000);

  const name = `bench_collect_${Date.now()}`;
  await adminQuery(`CREATE DATABASE "${name}"`);
  const url = Object.assign(new URL(serverUrl), { pathname: `/${name}` }).toString();
  try {
    const datasetId = await prepareDatabase(url);
    const port = await freePort();
    const service = await startService(port, {
      DATABASE_URL: url,
      TRUST_PROXY: "loopback",
      REQUIRE_HTTPS: "false",
      CTD_ENCRYPTION_KEY: randomBytes(32).toString("hex"),
      COLLECT_IP_REQUESTS_PER_MINUTE: "1000000000",
      COLLECT_DATASET_EVENTS_PER_MINUTE: "1000000000",
      INGEST_WRITER: separateWriter ? "off" : "on",
    });
    const writer = separateWriter ? startProcess("scripts/ingest.ts", { DATABASE_URL: url, NODE_ENV: "production", LOG_LEVEL: "warn" }) : undefined;
    let saturated: Awaited<ReturnType<typeof load>>;
    let paced: Awaited<ReturnType<typeof load>>;
    let drained: Awaited<ReturnType<typeof waitForDrain>>;
    let total: Awaited<ReturnType<typeof waitForDrain>>;
    try {
      console.log(`ingest writer: ${separateWriter ? "its own process (npm run ingest)" : "in the service's process"}`);
      console.log(`load 1 (throughput): ${connections} connections for ${duration} s, as fast as answered, batches of ${batchSize} page views from ${addresses.length} business addresses`);
      saturated = await load(port, datasetId, addresses);
      drained = await waitForDrain(url);
      console.log(`load 2 (latency): ${rate} requests/s (${rate * batchSize} page views/s) for ${duration} s`);
      paced = await load(port, datasetId, addresses, rate);
      total = await waitForDrain(url);
    } finally {
      await stopService(service);
      if (writer) await stopService(writer);
    }
    const seconds = (drained.drainedAt - saturated.started) / 1000;
    const report = (name: string, run: typeof saturated) =>
      console.log(
        `${name}: ${run.result.requests.total.toLocaleString("en")} requests in ${run.result.duration.toFixed(1)} s; statuses ${[...run.statuses].map(([s, n]) => `${s} x ${n.toLocaleString("en")}`).join(", ")}; errors ${run.result.errors}, timeouts ${run.result.timeouts}; latency ms p50 ${run.result.latency.p50}, p90 ${run.result.latency.p90}, p99 ${run.result.latency.p99}, max ${run.result.latency.max}`,
      );
    report("load 1", saturated);
    report("load 2", paced);
    console.log(`accepted: ${(saturated.queued / saturated.result.duration).toFixed(0)} page views/s (load 1: ${saturated.queued.toLocaleString("en")} queued)`);
    console.log(`written: ${(drained.visits / seconds).toFixed(0)} page views/s (load 1: ${drained.visits.toLocaleString("en")} visits, queue empty ${seconds.toFixed(1)} s after its start)  [target >= ${TARGETS.writtenPerSecond}: ${verdict(drained.visits / seconds >= TARGETS.writtenPerSecond)}]`);
    console.log(`/collect p99 at ${rate * batchSize} page views/s: ${paced.result.latency.p99} ms  [target <= ${TARGETS.p99Ms}: ${verdict(paced.result.latency.p99 <= TARGETS.p99Ms)}]`);

    // autocannon drops the requests in flight when the time is up: their events may have been
    // queued (and written) without their 202 being counted.
    const cutOff = connections * batchSize;
    const check = (name: string, run: typeof saturated, visits: number) => [
      ...[...run.statuses.keys()].filter((s) => s !== 202).map((s) => `${name}: answers with status ${s}`),
      ...(run.queued === 0 ? [`${name}: nothing was queued`] : []),
      ...(visits < run.queued || visits > run.queued + cutOff ? [`${name}: ${visits} visits written for ${run.queued} events queued`] : []),
    ];
    const problems = [
      ...check("load 1", saturated, drained.visits),
      ...check("load 2", paced, total.visits - drained.visits),
      ...(total.leadVisits !== total.visits ? [`the leads count ${total.leadVisits} visits, the visits table ${total.visits}`] : []),
    ];
    const queued = saturated.queued + paced.queued;
    console.log(problems.length ? `CHECK FAILED: ${problems.join("; ")}` : `check: every answer 202, ${total.visits.toLocaleString("en")} visits for ${queued.toLocaleString("en")} queued (+${total.visits - queued} cut off in flight), lead counts agree`);
    if (problems.length) process.exitCode = 1;
  } finally {
    await adminQuery(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  }
}

await main();
