// A frozen database is a bounded failure: the service reaches PostgreSQL through a TCP proxy
// that the test freezes (it stops forwarding bytes, as a SIGSTOPped server would look: the
// connections stay open, nothing answers). PostgreSQL only: the in-memory PGlite runs in the
// test's process and has no connection to freeze.
import net from "node:net";
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../server/app.ts";
import { type Database, openDatabase } from "../server/db/database.ts";
import { createLogger } from "../server/logging.ts";
import { memoryRateLimiter } from "../server/rate-limiter.ts";
import type { TestApi } from "./support/api.ts";
import { eventually } from "./support/eventually.ts";
import { as, startWithTenants } from "./support/suite.ts";
import type { Tenant } from "./support/tenants.ts";
import { testConfig } from "./support/config.ts";
import { createServices, type Services } from "../server/services/index.ts";
import { isTransientFault } from "../server/db/errors.ts";
import { metricsRegistry } from "../server/metrics.ts";
import { tableLog } from "../server/tracking/log/ingest-log.ts";
import { wiredIngestWriter } from "../server/runtime.ts";
import { ONLY_EVIDENCE } from "./support/tracking.ts";

const TIMEOUTS = { connectMs: 1_000, queryMs: 2_000 };
/** The documented bound of a request that needs the database, plus room for a loaded machine. */
const BOUND_MS = TIMEOUTS.connectMs + TIMEOUTS.queryMs + 1_500;

/** A TCP proxy to PostgreSQL that can stop forwarding bytes and start again. */
function freezableProxy(target: { host: string; port: number }) {
  let frozen = false;
  const pairs = new Set<[net.Socket, net.Socket]>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host);
    const pair: [net.Socket, net.Socket] = [client, upstream];
    pairs.add(pair);
    client.pipe(upstream);
    upstream.pipe(client);
    if (frozen) for (const s of pair) s.pause();
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
  });
  return {
    listen: () => new Promise<number>((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port))),
    freeze() {
      frozen = true;
      for (const pair of pairs) for (const s of pair) s.pause();
    },
    thaw() {
      frozen = false;
      for (const pair of pairs) for (const s of pair) s.resume();
    },
    close() {
      for (const pair of pairs) for (const s of pair) s.destroy();
      server.close();
    },
  };
}

const postgres = process.env.TEST_DATABASE_URL;

describe.skipIf(!postgres)("a frozen database", () => {
  let api: TestApi;
  let tenant: Tenant;
  let proxy: ReturnType<typeof freezableProxy>;
  let db: Database;
  let services: Services;
  let request: () => supertest.Agent;

  beforeAll(async () => {
    ({ api, tenant } = await startWithTenants());
    const url = new URL(api.db.url!);
    proxy = freezableProxy({ host: url.hostname, port: Number(url.port || 5432) });
    url.port = String(await proxy.listen());
    db = await openDatabase({ url: url.toString(), timeouts: TIMEOUTS });
    services = createServices(db.prisma, { config: testConfig() });
    const app = createApp({ db, services, logger: createLogger("silent"), rateLimiter: memoryRateLimiter({ requests: 1_000_000, windowSeconds: 60 }) });
    request = () => supertest.agent(app);
  });
  afterAll(async () => {
    proxy?.thaw();
    await db?.close();
    proxy?.close();
    await api?.close();
  });

  const listUsers = () => request().get("/v1/users").query({ email: tenant.admin.email }).set(as(tenant.key));
  const createDataset = (name: string) =>
    request().post("/v1/datasets").query({ email: tenant.admin.email }).set(as(tenant.key)).send({ name });

  async function timed<T>(run: () => PromiseLike<T>): Promise<{ ms: number; res: T }> {
    const start = performance.now();
    const res = await run();
    return { ms: performance.now() - start, res };
  }

  it("when PostgreSQL stops answering, then requests fail with 503 and Retry-After within the bound, /readyz is 503 within 2 s, and the service recovers when it answers again", async () => {
    expect((await listUsers()).status).toBe(200);
    expect((await request().get("/readyz")).status).toBe(200);

    proxy.freeze();
    const [read, write, ready] = await Promise.all([timed(listUsers), timed(() => createDataset("During the freeze")), timed(() => request().get("/readyz"))]);
    for (const { ms, res } of [read, write]) {
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ error: "service_unavailable" });
      expect(Number(res.headers["retry-after"])).toBeGreaterThan(0);
      expect(ms).toBeLessThan(BOUND_MS);
    }
    expect(ready.res.status).toBe(503);
    expect(ready.ms).toBeLessThan(2_000);
    // still frozen: a later request is bounded too (the pool does not keep a queue of stuck ones)
    const again = await timed(listUsers);
    expect(again.res.status).toBe(503);
    expect(again.ms).toBeLessThan(BOUND_MS);

    proxy.thaw();
    await eventually(async () => expect((await listUsers()).status).toBe(200), { intervalMs: 200 });
    expect((await request().get("/readyz")).status).toBe(200);
    expect((await createDataset("After the freeze")).status).toBe(200);
  });

  it("when PostgreSQL stops answering in the middle of a writer's transaction, then the failure counts as transient, nothing is set aside even at one allowed try, and the batch is written once it answers again", async () => {
    proxy.thaw(); // whatever an earlier test left
    const log = tableLog(db.prisma);
    const url = `https://www.customer.example/frozen/${Date.now()}`;
    await log.append([{
      accountId: tenant.accountId, datasetId: tenant.datasets[0], at: new Date().toISOString(), enrich: false,
      network: { leadId: "org_frozen", organizationName: "Frozen Inc", organizationDomain: null, asn: 714, networkType: "business", country: "US", city: null, ip: "17.253.144.10" },
      events: [{ type: "pageview", visitorId: "visitor_frozen", url }],
    }]);
    const failed = async (fault: string) => (await metricsRegistry.getSingleMetric("ingest_writer_failed_batches_total")!.get()).values.find((v) => v.labels.fault === fault)?.value ?? 0;
    const before = { transient: await failed("transient"), permanent: await failed("permanent") };
    let frozen = false;
    // the batch is claimed and written; the database stops answering before its commit
    const freezeOnce = async () => {
      if (!frozen) proxy.freeze();
      frozen = true;
    };
    const writer = wiredIngestWriter(db, services, createLogger("silent"), { ...ONLY_EVIDENCE, log, maxAttempts: 1, onIngested: freezeOnce });
    const failure = await writer.drain().then(() => undefined, (error: unknown) => error).finally(() => proxy.thaw());
    expect(isTransientFault(failure)).toBe(true);
    expect({ transient: await failed("transient"), permanent: await failed("permanent") }).toEqual({ transient: before.transient + 1, permanent: before.permanent });

    await eventually(() => writer.drain(), { intervalMs: 200 });
    const [row] = await api.db.prisma.$queryRaw<{ visits: bigint; letters: bigint; queued: bigint }[]>`
      SELECT (SELECT count(*) FROM "Visit" WHERE url = ${url}) AS visits, (SELECT count(*) FROM "IngestDeadLetter") AS letters,
             (SELECT count(*) FROM "IngestQueue") AS queued`;
    expect({ visits: Number(row!.visits), letters: Number(row!.letters), queued: Number(row!.queued) }).toEqual({ visits: 1, letters: 0, queued: 0 });
    await writer.stop();
  });
});
