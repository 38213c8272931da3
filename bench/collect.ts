// Tracking throughput against a hand-written floor, on PostgreSQL and on NATS JetStream:
//   npm run bench:collect [-- --duration 10 --connections 32 --batch 20 --rate <requests/s>
//                            --backends floor,postgres,jetstream --writer in-process|separate
//                            --isp-share 0.5 --preload-visits 1000000]
// 1. Resolution in this process: memory of the resolution data (RSS after a full GC, before and
//    after loading) and time per address (1,000,000 random public IPv4 addresses and 200,000 IPv6).
// 2. One row per backend, one after the other on the same machine, each on a fresh database of
//    the PostgreSQL server of BENCH_DATABASE_URL (default: the local server), dropped afterwards:
//    - floor: bench/collect-floor.ts, node:http + pg: parse, one multi-row INSERT per batch, 202
//      after the commit; nothing else;
//    - postgres: the service (server/main.ts, production mode, its own process) with the ingest
//      log in the PostgreSQL queue table, behind a trusted proxy so that X-Forwarded-For carries
//      addresses of business networks;
//    - jetstream: the same with INGEST_LOG_URL (BENCH_NATS_URL, default nats://127.0.0.1:4222),
//      on a stream of its own, deleted afterwards.
//    Each row: (a) closed loop, `connections` connections as fast as answered for `duration` s:
//    page views acknowledged per second; (b) open loop at a fixed rate (`rate` requests/s; default
//    half the floor's maximum of (a)) for `duration` s, latency from each request's scheduled
//    send time; after each phase, how long the writer took to write everything acknowledged.
// 3. The learning step's cost against history (issue 39 item 6): `--isp-share F` sends that share of
//    the requests from ISP addresses (their page views wait as pending events, and each batch of
//    them runs the learning step: evidence, withdrawal, backfill); `--preload-visits N` stores N
//    visits of ISP addresses (outside the traffic's ranges, 198.18.0.0/15 and 100.64.0.0/10) in the
//    dataset before the service starts. Each service row then prints the CPU time per 1,000 page
//    views of the service's process and of the PostgreSQL backends serving its database (read from
//    /proc: the PostgreSQL server must run on this machine), for the closed-loop phase.
// The run fails (exit 1) on a wrong answer, an acknowledged event not written or written twice,
// leads' visit counts that disagree with the visits, or an open-loop phase below 95% of the asked
// rate. The targets (issue 20: >= 0.5x the floor's page views/s, p99 <= 2x the floor's at the
// fixed rate, drained <= 2 s after the load) are printed with "meets" or "MISSES".
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import type { ChildProcess } from "node:child_process";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import pg from "pg";
import { openDatabase } from "../server/db/database.ts";
import { createServices } from "../server/services/index.ts";
import { parseIp } from "../server/tracking/ipdata/ip.ts";
import { classifyNetwork } from "../server/tracking/ipdata/network-class.ts";
import { sharedResolver } from "../server/tracking/ipdata/resolver.ts";
import { type LoadResult, percentile, type Request, runLoad } from "./closed-loop.ts";
import { type OpenLoopResult, runOpenLoop } from "./open-loop.ts";
import { freePort, startProcess, startService, stopService } from "./service.ts";
import { scratchDatabase } from "../test/support/database.ts";
import { loadConfig } from "../server/config.ts";
import { HERMETIC_DNS_ENV } from "../test/support/config.ts";
import * as datasets from "../server/services/datasets.ts";
import * as accounts from "../server/services/accounts.ts";

const MAX_SECONDS = 60;
const TARGETS = { floorRatio: 0.5, p99Ratio: 2, drainSeconds: 2, achievedShare: 0.95, microsPerAddress: 5, resolutionMb: 150 };
const BACKENDS = ["floor", "postgres", "jetstream"] as const;
type Backend = (typeof BACKENDS)[number];

const { values } = parseArgs({
  options: {
    duration: { type: "string", default: "10" },
    rate: { type: "string" },
    /** `separate`: the ingest writer runs in its own process (npm run ingest) beside the service. */
    writer: { type: "string", default: "in-process" },
    connections: { type: "string", default: "32" },
    batch: { type: "string", default: "20" },
    backends: { type: "string", default: BACKENDS.join(",") },
    "isp-share": { type: "string", default: "0" },
    "preload-visits": { type: "string", default: "0" },
  },
});
const duration = Math.min(MAX_SECONDS, Number(values.duration));
const connections = Number(values.connections);
const batchSize = Number(values.batch);
const askedRate = values.rate ? Number(values.rate) : undefined;
const separateWriter = values.writer === "separate";
const ispShare = Math.min(1, Math.max(0, Number(values["isp-share"])));
const preloadVisits = Math.max(0, Math.floor(Number(values["preload-visits"])));
const backends = values.backends!.split(",").map((b) => b.trim()).filter((b): b is Backend => (BACKENDS as readonly string[]).includes(b));
const serverUrl = process.env.BENCH_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
const natsUrl = process.env.BENCH_NATS_URL ?? "nats://127.0.0.1:4222";

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

/** Random addresses of networks the rule classifies as `type` (business: listed at once; isp: pending). */
function addressesOfType(resolver: ReturnType<typeof sharedResolver>, type: "business" | "isp", count: number): string[] {
  const found: string[] = [];
  while (found.length < count) {
    const ip = randomV4();
    const parsed = parseIp(ip)!;
    const as = resolver.asns.lookup(parsed);
    if (as && classifyNetwork(as, resolver.evidenceOf(as.asn)).type === type) found.push(ip);
  }
  return found;
}

/**
 * History: `count` visits of ISP addresses in the dataset (one lead, a visitor per 20 visits, within
 * this month: the start-up's partition maintenance has none to move), in statements of 100,000
 * rows; its leads' count agrees; vacuumed and analysed (no autovacuum during the measure). Their
 * addresses lie in 198.18.0.0/15 and 100.64.0.0/10, outside the traffic's ranges.
 */
async function preload(url: string, datasetId: string, count: number): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const started = Date.now();
    await client.query(`INSERT INTO "Lead" ("accountId", "datasetId", id, "organizationName", "organizationDomain", "firstVisitAt", "lastVisitAt", "visitCount", "identitySource", "identityConfidence")
      SELECT "accountId", id, 'lead_preload', 'Preloaded history', 'preload.example', now() - interval '60 days', now(), $2, 'form_email', 0.8 FROM "Dataset" WHERE id = $1`, [datasetId, count]);
    await client.query(`INSERT INTO "Visitor" ("accountId", "datasetId", id, "leadId", "firstSeenAt", "lastSeenAt")
      SELECT d."accountId", d.id, 'pre' || g, 'lead_preload', now() - interval '60 days', now() FROM "Dataset" d, generate_series(0, $2::int / 20) g WHERE d.id = $1`, [datasetId, count]);
    for (let from = 0; from < count; from += 100_000) {
      await client.query(`INSERT INTO "Visit" ("accountId", "datasetId", "leadId", "visitorId", at, url, ip, asn, "networkType")
        SELECT d."accountId", d.id, 'lead_preload', 'pre' || (g / 20), now() - (g % 1000)::float8 / 1000 * (now() - (date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')), 'https://www.bench.example/old/' || (g % 50),
          CASE WHEN g % 2 = 0 THEN '198.' || (18 + g / 2 % 2) || '.' || (g / 4 % 256) || '.' || (g / 1024 % 256)
               ELSE '100.' || (64 + g / 2 % 64) || '.' || (g / 128 % 256) || '.' || (g / 32768 % 256) END, 64500, 'isp'
        FROM "Dataset" d, generate_series($2::int, $3::int - 1) g WHERE d.id = $1`, [datasetId, from, Math.min(count, from + 100_000)]);
    }
    await client.query(`VACUUM ANALYZE "Visit"`);
    console.log(`preloaded ${count.toLocaleString("en")} visits in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  } finally {
    await client.end();
  }
}

/** CPU seconds (user + system) of these processes so far, by pid (0 for one that is gone). */
async function cpuSeconds(pids: readonly number[]): Promise<Map<number, number>> {
  const { readFile } = await import("node:fs/promises");
  const ticks = 100; // USER_HZ on Linux
  const entries = await Promise.all(
    pids.map(async (pid) => {
      const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      return [pid, stat ? (Number(fields[11]) + Number(fields[12])) / ticks : 0] as const;
    }),
  );
  return new Map(entries);
}

/** The service's process and its database's PostgreSQL backends: what a phase's CPU is measured on. */
async function measuredPids(client: pg.Client, servicePid: number | undefined): Promise<{ service: number[]; postgres: number[] }> {
  // the service's connections only: not this bench's, nor autovacuum's
  const rows = (
    await client.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`)
  ).rows;
  return { service: servicePid ? [servicePid] : [], postgres: rows.map((r) => r.pid) };
}

/** A running sum of CPU seconds over a phase: backends that appear during it count from zero. */
async function cpuOfPhase(client: pg.Client, servicePid: number | undefined, phase: () => Promise<void>): Promise<{ service: number; postgres: number }> {
  const before = await measuredPids(client, servicePid);
  const at0 = await cpuSeconds([...before.service, ...before.postgres]);
  await phase();
  const after = await measuredPids(client, servicePid);
  const at1 = await cpuSeconds([...after.service, ...after.postgres]);
  const spent = (pids: number[]) => pids.reduce((sum, pid) => sum + (at1.get(pid) ?? 0) - (at0.get(pid) ?? 0), 0);
  return { service: spent(after.service), postgres: spent(after.postgres) };
}

async function prepareDatabase(url: string): Promise<string> {
  const db = await openDatabase({ url });
  try {
    await db.migrate();
    const services = createServices(db.prisma, { config: loadConfig(HERMETIC_DNS_ENV) });
    const email = "bench@bench.example";
    const { accountId } = await accounts.createAccount(services, { name: "Bench", licenceDays: 1, admin: { email, name: "Bench" } });
    return await datasets.create(services, accountId, email, { name: "Bench site" });
  } finally {
    await db.close();
  }
}

/** The traffic's addresses: business ones, and ISP ones for the `--isp-share` of the requests. */
interface Addresses {
  business: string[];
  isp: string[];
}

/** POST /collect of `batchSize` page views of a new visitor from one of the addresses; 202 with all of them queued. */
function requests(datasetId: string, { business, isp }: Addresses): () => Request {
  const events = Array.from({ length: batchSize }, (_, i) => ({ type: "pageview", visitorId: "", url: `https://www.bench.example/page/${i}`, title: `Page ${i}` }));
  return () => {
    const visitorId = randomBytes(16).toString("hex");
    const addresses = isp.length && Math.random() < ispShare ? isp : business;
    return {
      path: `/collect?dataset=${datasetId}`,
      headers: {
        "content-type": "text/plain",
        "user-agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
        "x-forwarded-for": addresses[Math.floor(Math.random() * addresses.length)]!,
      },
      body: JSON.stringify({ events: events.map((e) => ({ ...e, visitorId })) }),
      expect: { status: 202, bodyIncludes: `"queued":${batchSize}` },
    };
  };
}

/**
 * What a row's database holds: the floor's events, or the service's events (visits and pending
 * events), its visits and its leads' count of them, without the preloaded history.
 */
async function stored(client: pg.Client, backend: Backend): Promise<{ events: number; visits: number; leadVisits: number }> {
  const count = async (sql: string) => Number((await client.query<{ n: string }>(sql)).rows[0]!.n);
  if (backend === "floor") return { events: await count(`SELECT count(*) AS n FROM floor_event`), visits: NaN, leadVisits: NaN };
  const visits = (await count(`SELECT count(*) AS n FROM "Visit"`)) - preloadVisits;
  const pending = await count(`SELECT count(*) AS n FROM "PendingEvent"`);
  return { events: visits + pending, visits, leadVisits: (await count(`SELECT coalesce(sum("visitCount"), 0) AS n FROM "Lead"`)) - preloadVisits };
}

/** Seconds until `expected` events are stored (undefined when they were not within 120 s), and what was stored then. */
async function drained(client: pg.Client, backend: Backend, expected: number, loadEnded: number) {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const now = await stored(client, backend);
    if (now.events >= expected) return { seconds: (performance.now() - loadEnded) / 1000, ...now };
    if (Date.now() > deadline) return { seconds: undefined, ...now };
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

interface Row {
  backend: Backend;
  max: LoadResult;
  maxDrain: Awaited<ReturnType<typeof drained>>;
  paced: OpenLoopResult;
  pacedDrain: Awaited<ReturnType<typeof drained>>;
  rate: number;
  /** CPU seconds of the closed-loop phase (its load, its drain and LEARNING_SETTLE_MS after it). */
  cpu?: { service: number; postgres: number };
  problems: string[];
}

/** After a phase drained, the learning steps of its last batches still run (after their commit): the CPU measure waits this long more. */
const LEARNING_SETTLE_MS = 2_000;

const acknowledged = (run: { statuses: Map<number, number> }, unexpected: number) => ((run.statuses.get(202) ?? 0) - unexpected) * batchSize;

async function startServer(backend: Backend, url: string, stream: string): Promise<{ port: number; pid?: number; stop: () => Promise<void> }> {
  const port = await freePort();
  if (backend === "floor") {
    const child = startProcess("bench/collect-floor.ts", { DATABASE_URL: url, PORT: String(port) });
    for (let tries = 0; tries < 300; tries++) {
      const up = await fetch(`http://127.0.0.1:${port}/`).then(() => true, () => false);
      if (up) return { port, stop: () => stopService(child) };
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error("the floor did not start listening");
  }
  const logEnv: Record<string, string> =
    backend === "jetstream" ? { INGEST_LOG_URL: natsUrl, INGEST_LOG_STREAM: stream, INGEST_LOG_SUBJECT: `bench.${stream}`, INGEST_LOG_REPLICAS: "1" } : {};
  // production mode: what the service and the writer process require
  const production = { DATABASE_URL: url, CTD_ENCRYPTION_KEY: randomBytes(32).toString("hex"), SMTP_URL: "smtp://127.0.0.1:2525", ...logEnv };
  const service = await startService(port, {
    ...production,
    TRUST_PROXY: "loopback",
    REQUIRE_HTTPS: "false",
    COLLECT_IP_REQUESTS_PER_MINUTE: "1000000000",
    COLLECT_DATASET_EVENTS_PER_MINUTE: "1000000000",
    INGEST_WRITER: separateWriter ? "off" : "on",
  });
  const writer: ChildProcess | undefined = separateWriter
    ? startProcess("scripts/ingest.ts", { ...production, NODE_ENV: "production", LOG_LEVEL: "warn" })
    : undefined;
  return {
    port,
    // the writer's own process is not measured: the CPU figures need --writer in-process
    pid: separateWriter ? undefined : service.pid,
    async stop() {
      await stopService(service);
      if (writer) await stopService(writer);
    },
  };
}

async function deleteStream(stream: string): Promise<void> {
  const nc = await connect({ servers: natsUrl, timeout: 2000 });
  try {
    await (await jetstreamManager(nc)).streams.delete(stream).catch(() => false);
  } finally {
    await nc.close();
  }
}

async function measure(backend: Backend, addresses: Addresses, rateOf: () => number): Promise<Row> {
  const stamp = `${Date.now()}_${randomBytes(3).toString("hex")}`;
  const name = `bench_collect_${backend}_${stamp}`;
  const stream = `BENCH_COLLECT_${stamp}`;
  const { url, drop } = await scratchDatabase(serverUrl, name);
  const client = new pg.Client({ connectionString: url });
  try {
    const datasetId = backend === "floor" ? "ds_floor" : await prepareDatabase(url);
    if (backend !== "floor" && preloadVisits) await preload(url, datasetId, preloadVisits);
    const server = await startServer(backend, url, stream);
    await client.connect();
    const next = requests(datasetId, addresses);
    try {
      console.log(`${backend}: closed loop, ${connections} connections for ${duration} s, batches of ${batchSize} page views`);
      let max!: LoadResult;
      let maxDrain!: Awaited<ReturnType<typeof drained>>;
      const cpu = await cpuOfPhase(client, server.pid, async () => {
        max = await runLoad({ port: server.port, connections, seconds: duration, next });
        maxDrain = await drained(client, backend, acknowledged(max, max.unexpected), performance.now());
        await new Promise((resolve) => setTimeout(resolve, LEARNING_SETTLE_MS));
      });
      const afterMax = acknowledged(max, max.unexpected);
      const rate = rateOf() || (max.requests / max.seconds) * 0.5;
      console.log(`${backend}: open loop at ${rate.toFixed(0)} requests/s (${(rate * batchSize).toFixed(0)} page views/s) for ${duration} s`);
      const paced = await runOpenLoop({ port: server.port, rate, seconds: duration, next });
      const afterPaced = afterMax + acknowledged(paced, paced.unexpected);
      const pacedDrain = await drained(client, backend, afterPaced, performance.now());
      const final = await stored(client, backend);
      // a request without an answer (timed out) may have been stored: at most its events besides
      const unanswered = (max.errors + paced.errors) * batchSize;
      const problems = [
        ...(max.unexpected || max.errors ? [`closed loop: ${max.unexpected} wrong answers, ${max.errors} errors (${max.examples.join(" | ")})`] : []),
        ...(paced.unexpected || paced.errors ? [`open loop: ${paced.unexpected} wrong answers, ${paced.errors} errors (${paced.examples.join(" | ")})`] : []),
        ...(paced.achievedRate < TARGETS.achievedShare * rate ? [`open loop: achieved ${paced.achievedRate.toFixed(0)} requests/s of ${rate.toFixed(0)} asked (below ${TARGETS.achievedShare * 100}%)`] : []),
        ...(final.events < afterPaced ? [`${afterPaced - final.events} acknowledged events not written within 120 s (lost)`] : []),
        ...(final.events > afterPaced + unanswered ? [`${final.events - afterPaced - unanswered} events written beyond those acknowledged or unanswered (duplicated)`] : []),
        ...(backend !== "floor" && final.leadVisits !== final.visits ? [`the leads count ${final.leadVisits} visits, the visits table ${final.visits}`] : []),
      ];
      return { backend, max, maxDrain, paced, pacedDrain, rate, ...(backend !== "floor" && { cpu }), problems };
    } finally {
      await server.stop();
    }
  } finally {
    await client.end().catch(() => {});
    await drop();
    if (backend === "jetstream") await deleteStream(stream).catch(() => {});
  }
}

const verdict = (ok: boolean) => (ok ? "meets" : "MISSES");
const n0 = (v: number) => Math.round(v).toLocaleString("en");
const ms = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : "-");

function report(row: Row): void {
  const { max, paced } = row;
  const maxPv = acknowledged(max, max.unexpected) / max.seconds;
  const drain = (d: Row["maxDrain"]) => (row.backend === "floor" ? "-" : d.seconds === undefined ? "NOT DRAINED" : `${d.seconds.toFixed(1)} s`);
  console.log(
    `${row.backend.padEnd(9)} max: ${n0(maxPv)} page views/s acknowledged (${n0(max.requests / max.seconds)} requests/s; p50 ${ms(percentile(max.latencies, 0.5))} ms, p99 ${ms(percentile(max.latencies, 0.99))} ms), written ${drain(row.maxDrain)} after the load` +
      (row.cpu ? ` | CPU per 1,000 page views of the closed loop: service ${ms((row.cpu.service * 1e6) / acknowledged(max, max.unexpected))} ms, PostgreSQL ${ms((row.cpu.postgres * 1e6) / acknowledged(max, max.unexpected))} ms` : "") +
      ` | fixed ${n0(row.rate)} requests/s: achieved ${n0(paced.achievedRate)} (${((paced.achievedRate / row.rate) * 100).toFixed(1)}%), from the scheduled send p50 ${ms(percentile(paced.latencies, 0.5))} ms, p99 ${ms(percentile(paced.latencies, 0.99))} ms, max ${ms(paced.latencies[paced.latencies.length - 1] ?? NaN)} ms (generator lag max ${ms(paced.maxSendLagMs)} ms), written ${drain(row.pacedDrain)} after the load`,
  );
}

function compare(row: Row, floor: Row | undefined): void {
  if (!floor || row.backend === "floor") return;
  const pv = (r: Row) => acknowledged(r.max, r.max.unexpected) / r.max.seconds;
  const ratio = pv(row) / pv(floor);
  const p99 = percentile(row.paced.latencies, 0.99) / percentile(floor.paced.latencies, 0.99);
  const drain = Math.max(row.maxDrain.seconds ?? Infinity, row.pacedDrain.seconds ?? Infinity);
  console.log(
    `${row.backend.padEnd(9)} vs floor: ${ratio.toFixed(2)}x its page views/s [target >= ${TARGETS.floorRatio}x: ${verdict(ratio >= TARGETS.floorRatio)}]; p99 at the fixed rate ${p99.toFixed(2)}x its p99 [target <= ${TARGETS.p99Ratio}x: ${verdict(p99 <= TARGETS.p99Ratio)}]; written ${drain.toFixed(1)} s after the load at most [target <= ${TARGETS.drainSeconds} s: ${verdict(drain <= TARGETS.drainSeconds)}]`,
  );
}

async function main(): Promise<void> {
  if (!(globalThis as { gc?: unknown }).gc) console.log("(run with node --expose-gc for exact memory figures: npm run bench:collect does)");
  const r = measureResolution();
  console.log(`resolution data: ${r.memoryMb.toFixed(0)} MB RSS (loaded in ${r.loadMs} ms)  [target <= ${TARGETS.resolutionMb} MB: ${verdict(r.memoryMb <= TARGETS.resolutionMb)}]`);
  console.log(
    `per address: network ${r.networkV4.toFixed(2)} µs (IPv4), ${r.networkV6.toFixed(2)} µs (IPv6)  [target <= ${TARGETS.microsPerAddress} µs: ${verdict(Math.max(r.networkV4, r.networkV6) <= TARGETS.microsPerAddress)}]; with city ${r.withCityV4.toFixed(2)} µs (IPv4; the collector asks the city of every address it queues events of)`,
  );
  const addresses = { business: addressesOfType(r.resolver, "business", 2000), isp: ispShare ? addressesOfType(r.resolver, "isp", 2000) : [] };
  console.log(
    `ingest writer: ${separateWriter ? "its own process (npm run ingest)" : "in the service's process"}; ${addresses.business.length} business addresses` +
      (ispShare ? `, ${addresses.isp.length} ISP addresses for ${(ispShare * 100).toFixed(0)}% of the requests` : "") +
      (preloadVisits ? `; ${preloadVisits.toLocaleString("en")} visits preloaded` : ""),
  );
  const rows: Row[] = [];
  // the fixed rate: as asked, or half the floor's maximum (the first row when the floor runs)
  const rateOf = () => askedRate ?? ((rows.find((row) => row.backend === "floor")?.max.requests ?? 0) / (rows.find((row) => row.backend === "floor")?.max.seconds ?? 1)) * 0.5;
  for (const backend of backends) rows.push(await measure(backend, addresses, rateOf));
  console.log("");
  for (const row of rows) report(row);
  const floor = rows.find((row) => row.backend === "floor");
  for (const row of rows) compare(row, floor);
  const problems = rows.flatMap((row) => row.problems.map((p) => `${row.backend}: ${p}`));
  console.log(problems.length ? `CHECK FAILED: ${problems.join("; ")}` : "check: every answer 202 with all events queued, every acknowledged event written exactly once, lead counts agree, every fixed rate achieved");
  if (problems.length) process.exitCode = 1;
}

await main();
