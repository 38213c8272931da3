// Erasure, export and the JetStream ingest log (test/support/jetstream.ts: a real NATS server):
// events accepted into the stream while no writer runs, then erased, are not written once a writer
// starts (nor kept when written before the writer learnt whose they were); what is received
// after the erasure is new data and is written. An export lists what waits in the stream without
// taking it from there.
import { randomBytes } from "node:crypto";
import pg from "pg";
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../server/logging.ts";
import { type IngestLog, openIngestLog } from "../server/tracking/log/ingest-log.ts";
import { type WriterOptions } from "../server/tracking/log/writer.ts";
import { eventually } from "./support/eventually.ts";
import { dumpOfEveryTable } from "./support/dump.ts";
import { deleteStream, logConfigOf, messagesLeft, NATS_URL, reachable, uniqueLogEnv } from "./support/jetstream.ts";
import { testConfig } from "./support/config.ts";
import { sharedResolver } from "../server/tracking/ipdata/resolver.ts";
import { as } from "./support/suite.ts";
import { ADDRESSES, BROWSER_UA, ONLY_EVIDENCE, startTracking, testTrackingConfig, type TrackingSuite, wiredWriter } from "./support/tracking.ts";

const available = await reachable();
if (!available) console.log(`Erasure-on-JetStream tests skipped: no NATS server at ${NATS_URL} (start one: nats-server -a 127.0.0.1 -p 4222 -js)`);

const newVisitor = () => `vid${randomBytes(8).toString("hex")}`;
/** On a PostgreSQL server (TEST_DATABASE_URL): sessions of their own, where one transaction can wait for another's lock. */
const onServer = Boolean(process.env.TEST_DATABASE_URL);
const newAddress = () => `Person.${randomBytes(4).toString("hex")}@Subject.example`;

describe.skipIf(!available)("erasure and export of events still in the JetStream ingest log", () => {
  let t: TrackingSuite;
  let log: IngestLog;
  const logEnv = uniqueLogEnv(NATS_URL, 1);

  beforeAll(async () => {
    // the services know the stream too: an export reads what waits there
    t = await startTracking({}, { config: testConfig(logEnv) });
    log = await openIngestLog(t.api.db.prisma, logConfigOf(logEnv), createLogger("silent"));
    sharedResolver(); // the IP data loads within the hook's time, not the first test's
  }, 120_000);
  afterAll(async () => {
    await log?.close();
    await deleteStream(logEnv);
    await t?.close();
  });

  /** POST /collect through a collector that appends to the stream. */
  async function collect(datasetId: string, events: object[]) {
    const app = t.api.appWith({ trustProxy: "loopback", tracking: { config: testTrackingConfig(), log } });
    const res = await supertest(app).post(`/collect?dataset=${datasetId}`).set("x-forwarded-for", ADDRESSES.business).set("user-agent", BROWSER_UA)
      .set("content-type", "text/plain").send(JSON.stringify({ events }));
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body.queued).toBe(events.length);
  }

  const erase = (body: object) => t.api.request().post("/v1/privacy/erasures").query({ email: t.tenant.admin.email }).set(as(t.tenant.key)).send(body);
  const exportOf = (body: object) => t.api.request().post("/v1/privacy/exports").query({ email: t.tenant.admin.email }).set(as(t.tenant.key)).send(body);

  /** A writer on the stream (one collector request per batch: `batchSize` 10), drained until the stream is empty. */
  async function drainStream(options: WriterOptions = {}) {
    const writer = wiredWriter(t.api, { ...ONLY_EVIDENCE, log, batchSize: 10, ...options });
    try {
      await writer.drain();
    } finally {
      await writer.stop();
    }
    expect(await log.oldestUnwritten()).toBeUndefined();
  }

  const visitorsOf = async (datasetId: string) =>
    (await t.api.db.prisma.visitor.findMany({ where: { datasetId }, select: { id: true } })).map((v) => v.id);

  it("when a page view and a form with an e-mail address wait in the stream and the person is erased before a writer runs, then nothing of that visitor is written and a dump finds neither the address nor the visitor id", async () => {
    const ds = t.tenant.datasets[0]!;
    await t.settings(ds, { formTracking: true, contactEnrichment: true });
    const [subject, bystander] = [newVisitor(), newVisitor()];
    const address = newAddress();
    // one request per writer batch (below): the page view is written before the writer meets the form
    await collect(ds, [t.pageView(subject)]);
    await collect(ds, [t.pageView(bystander)]);
    await collect(ds, [t.form(subject, { email: address, company: "Apple" })]);
    // the same visitor's next page carries no address
    await collect(ds, [t.pageView(subject, "https://www.customer.example/thanks")]);
    expect(await t.count("IngestQueue")).toBe(0); // the stream holds them, not the queue table
    expect(await log.oldestUnwritten()).toBeDefined();

    const res = await erase({ subjectEmail: address.toUpperCase() });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.counts).toMatchObject({ visitors: 0, visits: 0, formSubmissions: 0, queuedEvents: 0 });
    await drainStream();

    expect(await visitorsOf(ds)).toEqual([bystander]);
    expect((await t.leads(ds)).map((l) => l.visitCount)).toEqual([1]); // the subject's visit written first is not counted either
    const dump = (await dumpOfEveryTable(t.api)).toLowerCase();
    expect(dump).toContain(bystander); // the writer did write what the erasure did not reach
    expect(dump).not.toContain(address.toLowerCase());
    expect(dump).not.toContain(subject);
  });

  it("when a visitor is erased in one dataset while its events wait in the stream, then those are not written, the same id in another dataset is, and a page view received after the erasure is", async () => {
    const [erased, other] = t.tenant.datasets as [string, string];
    const vid = newVisitor();
    await collect(erased, [t.pageView(vid), t.pageView(vid, "https://www.customer.example/docs")]);
    await collect(other, [t.pageView(vid)]);

    expect((await erase({ visitorId: vid, datasetId: erased })).status).toBe(200);
    await collect(erased, [t.pageView(vid, "https://www.customer.example/after")]);
    await drainStream();

    const visits = await t.api.db.prisma.visit.findMany({ where: { visitorId: vid }, select: { datasetId: true, url: true }, orderBy: { datasetId: "asc" } });
    expect(visits).toEqual(
      expect.arrayContaining([
        { datasetId: erased, url: "https://www.customer.example/after" },
        { datasetId: other, url: "https://www.customer.example/pricing?utm_source=newsletter" },
      ]),
    );
    expect(visits).toHaveLength(2);
  });

  it.runIf(onServer)("when an erasure comes while a writer's batch of the visitor is in hand, then it waits for that batch's commit and erases it, and the batches after it are dropped", async () => {
    const ds = t.tenant.datasets[0]!;
    const vid = newVisitor();
    for (let i = 0; i < 3; i++) await collect(ds, [t.pageView(vid, `https://www.customer.example/race/${i}`)]);
    const watcher = new pg.Client({ connectionString: t.api.db.url });
    await watcher.connect();
    let erasing: ReturnType<typeof erase> | undefined;
    try {
      await drainStream({
        // inside the first batch's transaction, its visit written but not committed: the erasure starts and must wait
        async onIngested(result) {
          if (erasing || !result.visits) return;
          erasing = erase({ visitorId: vid, datasetId: ds });
          void erasing.then(() => {}); // supertest sends the request once it is awaited
          await eventually(async () => {
            const { rows } = await watcher.query(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`);
            expect(rows[0].n).toBeGreaterThan(0);
          }, { timeoutMs: 60_000, intervalMs: 50 });
        },
      });
    } finally {
      await watcher.end();
    }
    expect((await erasing)?.status).toBe(200);
    expect(await t.api.db.prisma.visit.count({ where: { visitorId: vid } })).toBe(0);
    expect(await visitorsOf(ds)).not.toContain(vid);
  });

  it("when a person's page view and form wait in the stream, then the export lists them as queued events and leaves them there; a writer then writes them all and the export lists them under the visitor", async () => {
    const ds = t.tenant.datasets[1]!;
    await t.settings(ds, { formTracking: true });
    const [subject, bystander] = [newVisitor(), newVisitor()];
    const address = newAddress();
    // the page view comes before the form that names its visitor
    await collect(ds, [t.pageView(subject)]);
    await collect(ds, [t.pageView(bystander)]);
    await collect(ds, [t.form(subject, { email: address })]);
    const waiting = await messagesLeft(logEnv);
    expect(waiting).toBeGreaterThanOrEqual(3);

    const res = await exportOf({ subjectEmail: address.toUpperCase() });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ visitors: [], queuedEventsTruncated: false });
    expect(res.body.queuedEvents).toEqual([
      expect.objectContaining({ datasetId: ds, visitorId: subject, type: "pageview", url: "https://www.customer.example/pricing?utm_source=newsletter", ip: ADDRESSES.business }),
      expect.objectContaining({ datasetId: ds, visitorId: subject, type: "form", fields: { email: address }, partial: false }),
    ]);
    expect((await exportOf({ visitorId: subject, datasetId: ds })).body.queuedEvents).toHaveLength(2);
    expect(await messagesLeft(logEnv)).toBe(waiting); // read, not consumed

    await drainStream();
    expect(await visitorsOf(ds)).toEqual(expect.arrayContaining([subject, bystander]));
    const written = await exportOf({ subjectEmail: address });
    expect(written.body.queuedEvents).toEqual([]);
    expect(written.body.visitors).toEqual([expect.objectContaining({ visitorId: subject, email: address.toLowerCase() })]);
    expect(written.body.visitors[0].visits).toHaveLength(1);
  });

  it("when a visitor is erased while its events wait in the stream, then the export lists none of them though the stream still holds them", async () => {
    const ds = t.tenant.datasets[1]!;
    const vid = newVisitor();
    await collect(ds, [t.pageView(vid)]);
    expect((await exportOf({ visitorId: vid })).body.queuedEvents).toHaveLength(1);
    expect((await erase({ visitorId: vid })).status).toBe(200);
    expect(await messagesLeft(logEnv)).toBeGreaterThan(0);
    const res = await exportOf({ visitorId: vid });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ visitors: [], queuedEvents: [], queuedEventsTruncated: false });
    await drainStream();
    expect(await t.api.db.prisma.visit.count({ where: { visitorId: vid } })).toBe(0);
  });
});
