// The ingest log on a real NATS JetStream server (test/support/jetstream.ts): what the collector
// acknowledged (202) is written exactly once whatever process is killed, writers share the
// stream, and without the log the collector answers 503 with Retry-After, never 202.
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newEncryptionKey } from "../server/security/secret-box.ts";
import type { Database } from "../server/db/database.ts";
import { jetstream } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import type { QueuedBatch } from "../server/tracking/collect/events.ts";
import { writeEvents } from "../server/tracking/write/batch.ts";
import { rowsOf } from "../server/tracking/collect/events.ts";
import { type IngestLog, openIngestLog } from "../server/tracking/log/ingest-log.ts";
import { createLogger } from "../server/logging.ts";
import { hermeticEnv } from "./support/config.ts";
import { eventually } from "./support/eventually.ts";
import { deleteStream, logConfigOf, messagesLeft, NATS_URL, natsServerBinary, privateNats, reachable, uniqueLogEnv } from "./support/jetstream.ts";
import { builtProgram, type ServerDatabase, type ServerProcess, prepareServerDatabase, startServerProcess } from "./support/server-process.ts";
import { ADDRESSES, BROWSER_UA, ONLY_EVIDENCE, startTracking, testTrackingConfig, type TrackingSuite, wiredWriter } from "./support/tracking.ts";

const available = await reachable();
if (!available) console.log(`JetStream ingest log tests skipped: no NATS server at ${NATS_URL} (start one: nats-server -a 127.0.0.1 -p 4222 -js)`);

const root = path.resolve(import.meta.dirname, "..");
const INGEST = builtProgram("scripts/ingest");
const EVENTS_PER_REQUEST = 5;
const quietLogger = createLogger("silent");

/** A visitor's page views, each with a URL of its own: the marker that tells whether it was written once. */
const batchOf = (request: number) => ({
  events: Array.from({ length: EVENTS_PER_REQUEST }, (_, i) => ({ type: "pageview", visitorId: `visitor${String(request).padStart(6, "0")}`, url: `https://www.customer.example/p/${request}-${i}` })),
});
const markersOf = (request: number) => batchOf(request).events.map((e) => e.url);

/** The visits per URL, and whether the leads' counters agree with the visits table. */
async function written(db: Database): Promise<{ perUrl: Map<string, number>; visits: number; leadVisits: number }> {
  const rows = await db.prisma.$queryRaw<{ url: string; n: bigint }[]>`SELECT url, count(*) AS n FROM "Visit" GROUP BY url`;
  const [lead] = await db.prisma.$queryRaw<{ total: bigint | null }[]>`SELECT sum("visitCount") AS total FROM "Lead"`;
  const perUrl = new Map(rows.map((r) => [r.url, Number(r.n)]));
  return { perUrl, visits: [...perUrl.values()].reduce((a, b) => a + b, 0), leadVisits: Number(lead?.total ?? 0) };
}

/** Every acknowledged marker written once, no marker twice, at most the unanswered ones besides. */
function expectExactlyOnce(found: Awaited<ReturnType<typeof written>>, acknowledged: number[], unanswered: number[]) {
  const twice = [...found.perUrl].filter(([, n]) => n > 1);
  expect(twice).toEqual([]);
  const missing = acknowledged.flatMap(markersOf).filter((url) => found.perUrl.get(url) !== 1);
  expect(missing).toEqual([]);
  const allowed = new Set([...acknowledged, ...unanswered].flatMap(markersOf));
  expect([...found.perUrl.keys()].filter((url) => !allowed.has(url))).toEqual([]);
  expect(found.leadVisits).toBe(found.visits);
}

/**
 * Posts batches (requests numbered from `from`) from `parallel` senders until `stop()`; which requests were answered 202 and
 * which had no answer (the process died with them in flight). Any other answer fails the test.
 */
function loadOn(port: () => number, datasetId: string, from: number, parallel = 6) {
  const acknowledged: number[] = [];
  const unanswered: number[] = [];
  const otherStatuses: number[] = [];
  let next = from;
  let stopped = false;
  const sender = async () => {
    while (!stopped) {
      const request = next++;
      try {
        const res = await fetch(`http://127.0.0.1:${port()}/collect?dataset=${datasetId}`, {
          method: "POST",
          headers: { "content-type": "text/plain", "x-forwarded-for": ADDRESSES.business, "user-agent": BROWSER_UA },
          body: JSON.stringify(batchOf(request)),
        });
        await res.arrayBuffer();
        if (res.status === 202) acknowledged.push(request);
        else otherStatuses.push(res.status);
      } catch {
        unanswered.push(request);
        return; // the collector is gone
      }
    }
  };
  const running = Promise.all(Array.from({ length: parallel }, sender));
  return {
    acknowledged,
    unanswered,
    otherStatuses,
    async stop() {
      stopped = true;
      await running;
    },
  };
}

/** `npm run ingest` on the ingest log of `env`. */
function startWriterProcess(env: Record<string, string>): ChildProcess {
  return spawn(INGEST[0]!, INGEST.slice(1), {
    cwd: root,
    env: hermeticEnv({ PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: "warn", ...env }),
    stdio: ["ignore", "ignore", "inherit"],
  });
}

async function kill(child: ChildProcess | ServerProcess | undefined): Promise<void> {
  if (!child) return;
  if ("stop" in child) {
    await child.stop("SIGKILL");
    return;
  }
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

describe.skipIf(!available)("the ingest log on JetStream, processes killed", () => {
  let database: ServerDatabase;
  const logEnv = uniqueLogEnv();
  const processes: (ChildProcess | ServerProcess)[] = [];
  const env = () => ({
    ...database.envFor(0),
    ...logEnv,
    CTD_ENCRYPTION_KEY: newEncryptionKey().toString("hex"),
    TRUST_PROXY: "loopback",
    INGEST_WRITER: "off",
    COLLECT_IP_REQUESTS_PER_MINUTE: "1000000",
  });

  beforeAll(async () => {
    database = await prepareServerDatabase();
  }, 120_000);
  afterAll(async () => {
    for (const p of processes) await kill(p);
    await deleteStream(logEnv);
    await database?.close();
  });

  it("when a collector is SIGKILLed under load and then a writer is SIGKILLed mid-drain, then every acknowledged event is written exactly once by the writers after them", async () => {
    const settings = env();
    const datasetId = database.tenant.datasets[0]!;
    // 1. a collector killed while requests are in flight
    const first = await startServerProcess(settings);
    processes.push(first);
    const load = loadOn(() => first.port, datasetId, 0);
    await eventually(() => expect(load.acknowledged.length).toBeGreaterThanOrEqual(150), { timeoutMs: 60_000, intervalMs: 20 });
    await kill(first);
    await load.stop();
    expect(load.otherStatuses).toEqual([]);

    // 2. a second collector goes on accepting
    const second = await startServerProcess(settings);
    processes.push(second);
    const more = loadOn(() => second.port, datasetId, 100_000);
    await eventually(() => expect(more.acknowledged.length).toBeGreaterThanOrEqual(150), { timeoutMs: 60_000, intervalMs: 20 });
    await more.stop();
    expect(more.otherStatuses).toEqual([]);
    const acknowledged = [...load.acknowledged, ...more.acknowledged];

    // 3. a writer (small batches) killed once it has written some, while it holds more
    const writerEnv = { ...settings, INGEST_BATCH_SIZE: "20", INGEST_POLL_MS: "50" };
    const doomed = startWriterProcess(writerEnv);
    processes.push(doomed);
    const leadVisits = async () => {
      const res = await fetch(`http://127.0.0.1:${second.port}/v1/leads?email=${database.tenant.admin.email}&datasetId=${datasetId}`, { headers: { "x-api-key": database.tenant.key } });
      const body = (await res.json()) as { data: { visitCount: number }[] };
      return body.data.reduce((n, lead) => n + lead.visitCount, 0);
    };
    await eventually(async () => expect(await leadVisits()).toBeGreaterThan(0), { timeoutMs: 60_000, intervalMs: 20 });
    await kill(doomed);
    const partly = await leadVisits();
    expect(partly).toBeLessThan(acknowledged.length * EVENTS_PER_REQUEST);

    // 4. two writers share what is left (the killed writer's batches come back after the acknowledgement wait)
    const writers = [startWriterProcess(writerEnv), startWriterProcess(writerEnv)];
    processes.push(...writers);
    await eventually(async () => expect(await leadVisits()).toBeGreaterThanOrEqual(acknowledged.length * EVENTS_PER_REQUEST), { timeoutMs: 120_000, intervalMs: 200 });
    // the count can be reached by events of unanswered requests that were stored too: wait until
    // the stream holds nothing (every batch written and acknowledged, the killed writer's included)
    await eventually(async () => expect(await messagesLeft(logEnv)).toBe(0), { timeoutMs: 120_000, intervalMs: 200 });
    for (const w of writers) await kill(w);
    await kill(second);
    // the embedded database's own process outlives a killed service for a moment
    const found = await eventually(() => database.inspect(written), { timeoutMs: 30_000, intervalMs: 250 });
    expectExactlyOnce(found, acknowledged, [...load.unanswered, ...more.unanswered]);
  }, 300_000);
});

describe.skipIf(!available)("the ingest log on JetStream, in process", () => {
  let t: TrackingSuite;
  const logEnv = uniqueLogEnv(NATS_URL, 1);
  const logs: IngestLog[] = [];
  const open = async () => {
    const log = await openIngestLog(t.api.db.prisma, logConfigOf(logEnv), quietLogger);
    logs.push(log);
    return log;
  };
  const writerOn = (log: IngestLog, batchSize = 1000) =>
    wiredWriter(t.api, { ...ONLY_EVIDENCE, log, batchSize }, quietLogger);

  beforeAll(async () => {
    t = await startTracking();
  }, 120_000);
  afterAll(async () => {
    for (const log of logs) await log.close();
    await deleteStream(logEnv);
    await t?.close();
  });

  /** The batch the collector would append for request `n` of the tenant's first dataset. */
  const queuedBatchOf = (n: number): QueuedBatch => ({
    accountId: t.tenant.accountId,
    datasetId: t.tenant.datasets[0]!,
    at: new Date().toISOString(),
    enrich: false,
    network: { leadId: "org_jetstreamtest", organizationName: "JetStream Test Inc", organizationDomain: null, asn: 714, networkType: "business", country: "US", city: null, ip: ADDRESSES.business },
    events: batchOf(n).events.map((event) => ({ ...event, type: "pageview" as const })),
  });

  it("when a batch comes back after its writer committed (its acknowledgement lost), then the next writer acknowledges it and writes nothing twice", async () => {
    const log = await open();
    // what a writer that died between its commit and its acknowledgement leaves: the message in
    // the stream, its events and its id in the database (a message as the version before batches
    // published it, one element per event: still read)
    const rows = rowsOf(queuedBatchOf(1));
    const nc = await connect({ servers: NATS_URL });
    try {
      await jetstream(nc).publish(logEnv.INGEST_LOG_SUBJECT!, JSON.stringify(rows), { msgID: "committed-not-acknowledged" });
    } finally {
      await nc.close();
    }
    await t.api.db.prisma.$transaction(async (tx) => {
      await writeEvents(tx, rows);
      await tx.$executeRaw`INSERT INTO "IngestedBatch" ("id") VALUES ('committed-not-acknowledged')`;
    });
    const before = await written(t.api.db);
    expect(await log.oldestUnwritten()).toBeDefined();

    const results = await writerOn(log).drain();
    expect(results.reduce((n, r) => n + r.events, 0)).toBe(0);
    expect(await log.oldestUnwritten()).toBeUndefined();
    expect(await written(t.api.db)).toEqual(before);
    expectExactlyOnce(before, [1], []);
    // its acknowledgement is confirmed now: the id may be pruned once no redelivery can be in flight
    const [id] = await t.api.db.prisma.$queryRaw<{ acknowledged: boolean }[]>`
      SELECT "acknowledgedAt" IS NOT NULL AS acknowledged FROM "IngestedBatch" WHERE id = 'committed-not-acknowledged'`;
    expect(id?.acknowledged).toBe(true);
  });

  it("when two writers drain one stream at once, then both write batches and every event is written once", async () => {
    const collectorLog = await open();
    const before = await written(t.api.db);
    const requests = Array.from({ length: 60 }, (_, i) => 1000 + i);
    for (const n of requests) await collectorLog.append([queuedBatchOf(n)]);
    const [a, b] = [writerOn(await open(), 50), writerOn(await open(), 50)];
    const [byA, byB] = await Promise.all([a.drain(), b.drain()]);
    const count = (results: { events: number }[]) => results.reduce((n, r) => n + r.events, 0);
    expect(count(byA)).toBeGreaterThan(0);
    expect(count(byB)).toBeGreaterThan(0);
    expect(count(byA) + count(byB)).toBe(requests.length * EVENTS_PER_REQUEST);
    const after = await written(t.api.db);
    expect(after.visits - before.visits).toBe(requests.length * EVENTS_PER_REQUEST);
    expectExactlyOnce(after, [1, ...requests], []);
  });
});

const binary = natsServerBinary();
if (available && !binary) console.log("JetStream 'log down' test skipped: no nats-server binary to start and stop a private server");

describe.skipIf(!available || !binary)("the ingest log on JetStream, log down", () => {
  let t: TrackingSuite;
  let nats: Awaited<ReturnType<typeof privateNats>>;
  let log: IngestLog | undefined;

  beforeAll(async () => {
    nats = await privateNats(binary!);
    await nats.start();
    t = await startTracking();
  }); // the default hook bound (300 s): up to three starts of nats-server on a loaded machine
  afterAll(async () => {
    await log?.close();
    await t?.close();
    await nats?.close();
  });

  it("when the NATS server dies, then the collector answers 503 with Retry-After and never 202 until it is back, and what it acknowledged is still there", async () => {
    // 3 s of tries, not the default's 10: the server stays down here
    const retryMs = 3000;
    const env = { ...uniqueLogEnv(nats.url), INGEST_LOG_TIMEOUT_MS: "500", INGEST_LOG_RETRY_MS: String(retryMs) };
    log = await openIngestLog(t.api.db.prisma, logConfigOf(env), quietLogger);
    const app = t.api.appWith({ trustProxy: "loopback", tracking: { config: testTrackingConfig(), log } });
    const datasetId = t.tenant.datasets[0]!;
    const post = (n: number) =>
      supertest(app).post(`/collect?dataset=${datasetId}`).set("x-forwarded-for", ADDRESSES.business).set("user-agent", BROWSER_UA).set("content-type", "text/plain").send(JSON.stringify(batchOf(n)));
    expect((await post(1)).status).toBe(202);

    await nats.kill();
    const waited: number[] = [];
    for (let n = 2; n < 6; n++) {
      const sentAt = performance.now();
      const res = await post(n);
      waited.push(performance.now() - sentAt);
      expect(res.status).toBe(503);
      expect(Number(res.headers["retry-after"])).toBeGreaterThanOrEqual(1);
      expect(res.body.error).toBe("service_unavailable");
    }
    // the first request waited for the retries; once they were used up, the next ones are answered without them
    expect(waited[0]).toBeGreaterThanOrEqual(retryMs);
    for (const ms of waited.slice(1)) expect(ms).toBeLessThan(retryMs);

    await nats.start();
    await eventually(async () => expect((await post(6)).status).toBe(202), { timeoutMs: 60_000, intervalMs: 250 });
    const before = await written(t.api.db);
    const writer = wiredWriter(t.api, { ...ONLY_EVIDENCE, log }, quietLogger);
    await writer.drain();
    const after = await written(t.api.db);
    expect(after.perUrl.get(markersOf(1)[0]!)).toBe(1);
    expect(after.perUrl.get(markersOf(2)[0]!)).toBeUndefined();
    expect(after.visits - before.visits).toBeGreaterThanOrEqual(2 * EVENTS_PER_REQUEST);
  }, 120_000);
});
