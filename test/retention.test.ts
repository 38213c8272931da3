// Retention: the daily `retention` job on the one queue, with an injected clock that the tests
// move forward. Visits and form submissions go after their dataset's retentionDays, in batches;
// finished jobs and settled webhook deliveries after their own retention. The visits' month
// partitions: made ahead, and dropped whole once every visit in them is past retention.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { maintainVisitPartitions, MONTHS_AHEAD, monthOf } from "../server/tracking/privacy/visit-partitions.ts";
import { RETENTION_JOB, type RetentionResult } from "../server/tracking/privacy/retention.ts";
import { as } from "./support/suite.ts";
import { ADDRESSES, startTracking, type TrackingSuite } from "./support/tracking.ts";

const DAY = 86_400_000;
/** The services' and the collector's clock: real time plus the days a test moves it on. */
let days = 0;
const now = () => new Date(Date.now() + days * DAY);
const BATCH = 2;
/** On a PostgreSQL server (TEST_DATABASE_URL), not the in-memory PGlite. */
const onServer = Boolean(process.env.TEST_DATABASE_URL);

let t: TrackingSuite;

beforeAll(async () => {
  t = await startTracking({}, { now, tracking: { now }, retention: { jobDays: 7, webhookDeliveryDays: 10, batchSize: BATCH, tombstoneHours: 48, deadLetterDays: 30 } });
});
afterAll(async () => {
  await t?.close();
});

const admin = () => ({ email: t.tenant.admin.email });
const newVisitor = () => `vid${randomBytes(8).toString("hex")}`;

/** Queues the day's retention job and runs the queue; the purge's log line. */
async function runRetention(): Promise<RetentionResult> {
  const logged = t.api.logs.length;
  await t.api.services.retention.schedule();
  await t.api.services.jobs.drain();
  const line = t.api.logs.slice(logged).find((l) => l.includes("retention purge"));
  expect(line, "the retention job ran").toBeDefined();
  return JSON.parse(line!);
}

/** The visits' partitions, from the catalog. */
async function partitionNames(): Promise<string[]> {
  const rows = await t.api.db.prisma.$queryRaw<{ name: string }[]>`
    SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = '"Visit"'::regclass ORDER BY 1`;
  return rows.map((r) => r.name);
}

/** Moves the clock to the middle of the month `offset` months from today's. */
function midMonth(offset: number): void {
  days = (monthOf(new Date(), offset).from.getTime() + 14 * DAY - Date.now()) / DAY;
}

async function visitsOf(datasetId: string): Promise<number> {
  const [lead] = await t.leads(datasetId);
  if (!lead) return 0;
  const res = await t.api.request().get(`/v1/leads/${lead.leadId}/visits`).query({ ...admin(), datasetId }).set(as(t.tenant.key));
  return res.body.data.length;
}

describe("retention job", () => {
  it("when events of a shared network waited longer than TRACKING_PENDING_DAYS (30) without an identity, then the retention job deletes them and keeps newer ones", async () => {
    const ds = t.tenant.datasets[0]!;
    const before = days;
    days -= 31;
    await t.collect(ds, ADDRESSES.isp, [t.pageView(newVisitor())]);
    days = before;
    await t.collect(ds, ADDRESSES.isp, [t.pageView(newVisitor())]);
    await t.writer.drain();
    const pendingOf = () => t.api.db.prisma.pendingEvent.count({ where: { datasetId: ds } });
    expect(await pendingOf()).toBe(2);
    const result = await runRetention();
    expect(result.pendingEvents).toBe(1);
    expect(await pendingOf()).toBe(1);
  });

  it("when a dataset keeps 30 days, then after 31 days its visits, forms and visitors are purged in batches, the lead keeps its count, and a dataset without retention keeps all", async () => {
    const [kept, purged] = t.tenant.datasets;
    for (const ds of [kept, purged]) await t.settings(ds, { formTracking: true });
    await t.api.request().patch(`/v1/datasets/${purged}/privacy`).query(admin()).set(as(t.tenant.key)).send({ retentionDays: 30 }).expect(200);
    const person = newVisitor();
    for (const ds of [kept, purged]) {
      await t.collect(ds, ADDRESSES.business, [t.pageView(person), t.pageView(newVisitor()), t.pageView(newVisitor()), t.form(person, { email: "old.visitor@customer.example" })]);
    }
    await t.writer.drain();

    days = 29;
    await runRetention();
    expect(await visitsOf(purged)).toBe(3);

    days = 31;
    const result = await runRetention();
    expect(result).toMatchObject({ visits: 3, formSubmissions: 1, visitors: 3 });
    expect(result.batches).toBeGreaterThanOrEqual(3 + 2); // 3 visits in batches of 2, and more
    expect(await visitsOf(purged)).toBe(0);
    expect(await visitsOf(kept)).toBe(3);
    expect((await t.leads(purged))[0]!.visitCount).toBe(3);
    const exported = await t.api.request().post("/v1/privacy/exports").query(admin()).set(as(t.tenant.key)).send({ subjectEmail: "old.visitor@customer.example" });
    expect(exported.body.visitors.map((v: { datasetId: string }) => v.datasetId)).toEqual([kept]);
  });

  it("when finished jobs and settled deliveries are older than their retention, then they are deleted and newer ones stay", async () => {
    days = 0;
    t.api.services.jobs.register("retention-test", async () => {}, { maxAttempts: 1, backoffMs: () => 0 });
    await t.api.services.jobs.enqueue(t.api.db.prisma, { kind: "retention-test", payload: { old: true } });
    await t.api.services.jobs.drain();
    const endpoint = await t.api.db.prisma.webhookEndpoint.create({
      data: { id: `whe_${randomBytes(8).toString("hex")}`, accountId: t.tenant.accountId, url: "https://hooks.example/x", eventTypes: ["lead.created"], secretSealed: "x" },
    });
    const delivery = (id: string, state: "delivered" | "pending", createdAt: Date) =>
      t.api.db.prisma.webhookDelivery.create({ data: { id, accountId: t.tenant.accountId, endpointId: endpoint.id, eventType: "lead.created", payload: "{}", state, createdAt } });
    await delivery("msg_old_delivered", "delivered", now());
    await delivery("msg_old_pending", "pending", now());

    days = 8;
    await t.api.services.jobs.enqueue(t.api.db.prisma, { kind: "retention-test", payload: { old: false } });
    await t.api.services.jobs.drain();
    await delivery("msg_new_delivered", "delivered", now());
    const result = await runRetention();
    expect(result.jobs).toBeGreaterThanOrEqual(1);
    const testJobs = await t.api.db.prisma.job.findMany({ where: { kind: "retention-test" } });
    expect(testJobs.map((j) => j.payload)).toEqual([{ old: false }]);
    expect(await t.api.db.prisma.webhookDelivery.count({ where: { endpointId: endpoint.id } })).toBe(3); // 8 days < 10

    days = 11;
    expect((await runRetention()).webhookDeliveries).toBe(1);
    const left = await t.api.db.prisma.webhookDelivery.findMany({ where: { endpointId: endpoint.id }, orderBy: { seq: "asc" } });
    expect(left.map((d) => d.id)).toEqual(["msg_old_pending", "msg_new_delivered"]);
  });

  it("when an erasure's tombstones are older than the ingest log's max age, then the retention job deletes them and keeps newer ones", async () => {
    days = 50;
    const erase = (body: object) => t.api.request().post("/v1/privacy/erasures").query(admin()).set(as(t.tenant.key)).send(body).expect(200);
    const tombstones = () => t.api.db.prisma.erasureTombstone.findMany({ where: { accountId: t.tenant.accountId }, select: { erasedAt: true } });
    await erase({ visitorId: newVisitor() });
    await erase({ subjectEmail: "gone@customer.example" });
    days = 51;
    await erase({ visitorId: newVisitor() });
    expect(await tombstones()).toHaveLength(3);

    days = 52.5; // 60 hours after the first two, 36 after the last: 48 hours kept
    const result = await runRetention();
    expect(result.tombstones).toBe(2);
    const left = await tombstones();
    expect(left).toHaveLength(1);
    expect(now().getTime() - left[0]!.erasedAt.getTime()).toBeLessThan(48 * 3_600_000);
  });

  it("when the day's job was queued, then queueing it again the same day adds none", async () => {
    days = 40;
    await t.api.services.retention.schedule();
    await t.api.services.retention.schedule();
    const day = now().toISOString().slice(0, 10);
    expect(await t.api.db.prisma.job.count({ where: { kind: RETENTION_JOB, dedupeKey: `${RETENTION_JOB}:${day}` } })).toBe(1);
  });

  it("when every visit of a past month is past its dataset's retention, then its partition is dropped whole; a month with a visit to keep stays and loses only the expired visits", async () => {
    const [short, keepAll] = t.other.datasets;
    const other = { email: t.other.admin.email };
    await t.api.request().patch(`/v1/datasets/${short}/privacy`).query(other).set(as(t.other.key)).send({ retentionDays: 30 }).expect(200);
    const oldest = monthOf(new Date(), -4);
    const older = monthOf(new Date(), -3);
    midMonth(-4); // no partition for these months yet: the visits land in the default partition
    await t.collect(short, ADDRESSES.business, [t.pageView(newVisitor()), t.pageView(newVisitor())]);
    midMonth(-3);
    await t.collect(short, ADDRESSES.business, [t.pageView(newVisitor())]);
    await t.collect(keepAll, ADDRESSES.business, [t.pageView(newVisitor())]);
    await t.writer.drain();
    const count = (datasetId: string) => t.api.db.prisma.visit.count({ where: { datasetId } });
    expect([await count(short), await count(keepAll)]).toEqual([3, 1]);

    days = 0;
    const result = await runRetention();
    const partitions = await partitionNames();
    expect(result.partitions).toMatchObject({ dropped: [oldest.name], busy: 0, failed: [] });
    expect(result.partitions.created).toEqual(expect.arrayContaining([oldest.name, older.name]));
    expect(result.partitions.moved).toBe(4);
    expect(partitions).not.toContain(oldest.name);
    expect(partitions).toContain(older.name);
    for (let i = 0; i <= MONTHS_AHEAD; i++) expect(partitions).toContain(monthOf(now(), i).name);
    expect(result.visits).toBe(1); // the short dataset's visit in the month that stays, deleted as a row
    expect([await count(short), await count(keepAll)]).toEqual([0, 1]);
    const [{ n }] = await t.api.db.prisma.$queryRaw<[{ n: bigint }]>`SELECT count(*) AS n FROM "Visit_default"`;
    expect(Number(n)).toBe(0);
  });

  // PostgreSQL only: the in-memory PGlite is one session, where no other transaction can hold a lock
  it.runIf(onServer)("when another transaction reads the visits, then making a month's partition gives up within its lock timeout, and a later run makes it and drops it", async () => {
    const [short] = t.other.datasets;
    const month = monthOf(new Date(), -6);
    midMonth(-6);
    await t.collect(short, ADDRESSES.business, [t.pageView(newVisitor())]);
    await t.writer.drain();
    days = 0;
    const db = t.api.db.prisma;
    const reader = new pg.Client({ connectionString: t.api.db.url });
    await reader.connect();
    try {
      await reader.query("BEGIN");
      await reader.query(`SELECT count(*) FROM "Visit"`); // holds every partition until its commit
      expect(await maintainVisitPartitions(db, now())).toMatchObject({ created: [], dropped: [], busy: 1, failed: [] });
      await reader.query("COMMIT");
    } finally {
      await reader.end();
    }
    expect(await maintainVisitPartitions(db, now())).toMatchObject({ created: [month.name], moved: 1, dropped: [month.name], busy: 0, failed: [] });
    expect(await partitionNames()).not.toContain(month.name);
  });
});
