// Retention: the daily `retention` job on the one queue, with an injected clock that the tests
// move forward. Visits and form submissions go after their dataset's retentionDays, in batches;
// finished jobs and settled webhook deliveries after their own retention.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RETENTION_JOB } from "../server/jobs/retention.ts";
import { as } from "./support/suite.ts";
import { ADDRESSES, startTracking, type TrackingSuite } from "./support/tracking.ts";

const DAY = 86_400_000;
/** The services' clock (queue, retention): real time plus the days a test moves it on. */
let days = 0;
const now = () => new Date(Date.now() + days * DAY);
const BATCH = 2;

let t: TrackingSuite;

beforeAll(async () => {
  t = await startTracking({}, { now, retention: { jobDays: 7, webhookDeliveryDays: 10, batchSize: BATCH } });
});
afterAll(async () => {
  await t?.close();
});

const admin = () => ({ email: t.tenant.admin.email });
const newVisitor = () => `vid${randomBytes(8).toString("hex")}`;

/** Queues the day's retention job and runs the queue; the purge's log line. */
async function runRetention(): Promise<Record<string, number>> {
  const logged = t.api.logs.length;
  await t.api.services.retention.schedule();
  await t.api.services.jobs.drain();
  const line = t.api.logs.slice(logged).find((l) => l.includes("retention purge"));
  expect(line, "the retention job ran").toBeDefined();
  return JSON.parse(line!);
}

async function visitsOf(datasetId: string): Promise<number> {
  const [lead] = await t.leads(datasetId);
  if (!lead) return 0;
  const res = await t.api.request().get(`/v1/leads/${lead.leadId}/visits`).query({ ...admin(), datasetId }).set(as(t.tenant.key));
  return res.body.data.length;
}

describe("retention job", () => {
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

  it("when the day's job was queued, then queueing it again the same day adds none", async () => {
    days = 40;
    await t.api.services.retention.schedule();
    await t.api.services.retention.schedule();
    const day = now().toISOString().slice(0, 10);
    expect(await t.api.db.prisma.job.count({ where: { kind: RETENTION_JOB, dedupeKey: `${RETENTION_JOB}:${day}` } })).toBe(1);
  });
});
