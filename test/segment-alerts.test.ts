// Segment alerts end to end, on a real SMTP server on loopback: a visit (through the collector and
// the ingest writer), a tag, an assignment or a changed filter makes a lead enter a segment once;
// `instant` mails once, `daily` sends one digest with a CSV per (segment, period) even with two
// job queues on the database, and an empty period sends nothing.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JobQueue } from "../server/jobs/queue.ts";
import { registerMailJobs } from "../server/notify/mail.ts";
import { lastPeriod, registerSegmentAlertJobs, segmentAlertService } from "../server/notify/segment-alerts.ts";
import * as segmentEntries from "../server/services/segment-entries.ts";
import { type IngestWriter } from "../server/tracking/log/writer.ts";
import { startTestApi, type TestApi } from "./support/api.ts";
import { testConfig } from "./support/config.ts";
import { eventually } from "./support/eventually.ts";
import { newLead, where } from "./support/leads.ts";
import { startSmtpServer, type TestSmtpServer } from "./support/smtp.ts";
import { as } from "./support/suite.ts";
import { createTenant, type Tenant } from "./support/tenants.ts";
import { collectPageView, testTrackingConfig, wiredWriter } from "./support/tracking.ts";
import { insertLeads } from "../server/services/leads.ts";

let api: TestApi;
let tenant: Tenant;
let smtp: TestSmtpServer;
let writer: IngestWriter;
let clock = new Date("2026-11-23T09:00:00Z");
const mail = () => ({ smtpUrl: smtp.url, from: "Lead Intelligence <alerts@leadintel.example>", outboxDir: "/nonexistent" });

beforeAll(async () => {
  smtp = await startSmtpServer();
  api = await startTestApi({ now: () => clock, trustProxy: "loopback", tracking: { config: testTrackingConfig() }, mail: mail(), notify: { digestHourUtc: 7 } });
  tenant = await createTenant(api.services, "Acme");
  writer = wiredWriter(api);
  await api.services.jobs.drain(); // the fixture's invitations
  smtp.messages.length = 0;
});
afterAll(async () => {
  await writer?.stop();
  await api?.close();
  await smtp?.close();
});

async function createSegment(datasetId: string, name: string, filters: object, frequency: "instant" | "daily" | "weekly"): Promise<number> {
  const res = await api
    .request()
    .post(`/v1/segments?email=${encodeURIComponent(tenant.admin.email)}`)
    .set(as(tenant.key))
    .send({ datasetId, name, filters, emailPreferences: { enabled: true, frequency } });
  expect(res.body, JSON.stringify(res.body)).toHaveProperty("id");
  return res.body.id;
}

const entries = (segmentId: number) => api.db.prisma.segmentEntry.findMany({ where: { segmentId }, orderBy: { leadId: "asc" } });

async function visit(datasetId: string, visitorId: string): Promise<void> {
  const res = await collectPageView(api, datasetId, visitorId);
  expect(res.status).toBeLessThan(300);
  await writer.drain();
}

describe("segment entries", () => {
  it("when a visit makes a lead match an instant segment, then one entry and one mail; a second visit sends nothing", async () => {
    const datasetId = tenant.datasets[0];
    const segmentId = await createSegment(datasetId, "Apple visitors", where("organizationDomain", "eq", "apple.com"), "instant");
    expect(await entries(segmentId)).toEqual([]);
    await visit(datasetId, "v-instant-1");
    const [entry] = await entries(segmentId);
    expect(entry).toMatchObject({ segmentId, datasetId });
    await api.services.jobs.drain();
    const [alert] = await eventually(() => smtp.received(1));
    expect(alert!.envelopeTo).toEqual([tenant.admin.email.toLowerCase()]);
    expect(alert!.subject).toContain("Apple visitors");
    expect(alert!.html).toContain("Apple");

    await visit(datasetId, "v-instant-2");
    await api.services.jobs.drain();
    expect(await entries(segmentId)).toHaveLength(1);
    expect(smtp.messages).toHaveLength(1);
    expect(api.logs.some((line) => line.toLowerCase().includes(tenant.admin.email.toLowerCase()))).toBe(false);
  });

  it("when a tag, an assignment or a changed filter makes a lead match, then it enters once", async () => {
    const datasetId = tenant.datasets[1];
    const [hot, other] = [newLead({ organizationName: "Hot Corp" }), newLead({ organizationName: "Other Corp" })];
    await insertLeads(api.services, tenant.accountId, datasetId, [hot, other]);
    const byTag = await createSegment(datasetId, "Hot ones", where("tags", "contains", "hot"), "weekly");
    const byAssignee = await createSegment(datasetId, "Ada's", where("assigneeUserId", "eq", tenant.admin.id), "weekly");
    const put = (path: string, body: object) => api.request().put(path).set(as(tenant.key)).send(body);
    expect((await put("/v1/management/lead-tags", { datasetId, leadId: hot.leadId, add: ["Hot"] })).status).toBe(204);
    expect((await put("/v1/management/lead-tags", { datasetId, leadId: hot.leadId, add: ["hot", "vip"] })).status).toBe(204);
    expect((await entries(byTag)).map((e) => e.leadId)).toEqual([hot.leadId]);
    expect((await put("/v1/management/assign-leads", { datasetId, leadId: other.leadId, assigneeUserId: tenant.admin.id })).status).toBe(204);
    expect((await entries(byAssignee)).map((e) => e.leadId)).toEqual([other.leadId]);
    // the filter widens: the other lead enters too, the first does not enter again
    const res = await api
      .request()
      .put(`/v1/segments/${byTag}`)
      .query({ segmentName: "Hot or named" })
      .set(as(tenant.key))
      .send({ filters: { match: "any", conditions: [{ field: "tags", operator: "contains", value: "hot" }, { field: "organizationName", operator: "eq", value: "Other Corp" }] } });
    expect(res.status).toBe(204);
    expect((await entries(byTag)).map((e) => e.leadId).sort()).toEqual([hot.leadId, other.leadId].sort());
  });

  it("when a listener is registered, then it gets the new entries inside the transaction", async () => {
    const datasetId = tenant.datasets[1];
    const seen: string[] = [];
    const off = segmentEntries.onSegmentEntered(api.services, async (entered) => void seen.push(...entered.map((e) => e.leadId)));
    const lead = newLead({ organizationName: "Listener Corp" });
    await insertLeads(api.services, tenant.accountId, datasetId, [lead]);
    await createSegment(datasetId, "Listener", where("organizationName", "eq", "Listener Corp"), "weekly");
    off();
    expect(seen).toEqual([lead.leadId]);
  });
});

describe("segment digests", () => {
  it("when two job queues run the daily digest, then it is sent once, as HTML with a CSV attachment; an empty period sends nothing", async () => {
    const datasetId = tenant.datasets[0];
    clock = new Date("2026-11-24T10:00:00Z"); // inside the period 2026-11-24 07:00 .. 2026-11-25 07:00
    const lead = newLead({ organizationName: "Digest, \"Quoted\" GmbH", organizationDomain: "digest.example", country: "DE" });
    await insertLeads(api.services, tenant.accountId, datasetId, [lead]);
    const segmentId = await createSegment(datasetId, "Digest DE", where("country", "eq", "DE"), "daily");
    expect((await entries(segmentId)).map((e) => e.leadId)).toEqual([lead.leadId]);
    await api.services.jobs.drain();
    const before = smtp.messages.length;

    // a second "instance": its own queue and scheduler on the same database
    const second = new JobQueue(api.db.prisma, api.logger, { pollMs: 1_000, now: () => clock });
    registerMailJobs(second, api.services.mailer, api.logger);
    registerSegmentAlertJobs(api.db.prisma, second, api.services.mailer, api.logger);
    const secondAlerts = segmentAlertService(api.db.prisma, second, { now: () => clock, digestHourUtc: 7 });

    // before 07:00 the period is not over: nothing is queued
    clock = new Date("2026-11-25T06:59:00Z");
    expect(await api.services.segmentAlerts.scheduleDigests()).toBe(0);
    clock = new Date("2026-11-25T07:00:30Z");
    const queued = (await Promise.all([api.services.segmentAlerts.scheduleDigests(), secondAlerts.scheduleDigests(), secondAlerts.scheduleDigests()])).reduce(
      (a, b) => a + b,
    );
    expect(queued).toBe(1);
    await Promise.all([api.services.jobs.drain(), second.drain()]);
    const digests = (await eventually(() => smtp.received(before + 1))).slice(before);
    expect(digests).toHaveLength(1);
    const [digest] = digests;
    expect(digest!.subject).toContain("Daily digest");
    expect(digest!.html).toContain("Digest DE");
    expect(digest!.attachments).toHaveLength(1);
    expect(digest!.attachments[0]!.contentType).toBe("text/csv");
    const csv = digest!.attachments[0]!.content.split("\r\n");
    expect(csv[0]).toBe("leadId,organizationName,organizationDomain,industry,employeeCount,country,city,lastVisitAt,enteredAt");
    expect(csv[1]).toContain(`${lead.leadId},"Digest, ""Quoted"" GmbH",digest.example`);

    // later in the same period, from either instance: nothing new
    clock = new Date("2026-11-25T12:00:00Z");
    expect(await secondAlerts.scheduleDigests()).toBe(0);
    // the next period has no entries: nothing is queued or sent
    clock = new Date("2026-11-26T07:01:00Z");
    expect(await api.services.segmentAlerts.scheduleDigests()).toBe(0);
    await Promise.all([api.services.jobs.drain(), second.drain()]);
    expect(smtp.messages.length).toBe(before + 1);
    expect(await api.db.prisma.job.count({ where: { kind: "segment-digest" } })).toBe(1);
  });

  it("when the digest job runs for a period whose entries are gone, then it sends nothing", async () => {
    const before = smtp.messages.length;
    const segment = await api.db.prisma.segment.findFirstOrThrow({ where: { name: "Digest DE" } });
    await api.services.jobs.enqueue(api.db.prisma, {
      kind: "segment-digest",
      payload: { segmentId: segment.id, frequency: "daily", start: "2020-01-01T07:00:00.000Z", end: "2020-01-02T07:00:00.000Z" },
    });
    await api.services.jobs.drain();
    expect(smtp.messages.length).toBe(before);
  });

  it("when the digest scheduling is queued twice, then one job per period end: the ended one runs at once, the next waits for its hour", async () => {
    clock = new Date("2026-12-02T08:00:00Z");
    expect(await api.services.segmentAlerts.queueScheduling()).toBe(2);
    expect(await api.services.segmentAlerts.queueScheduling()).toBe(0); // another instance, or the next hour
    await api.services.jobs.drain();
    const schedules = await api.db.prisma.job.findMany({ where: { kind: "segment-digest-schedule" }, orderBy: { runAfter: "asc" } });
    expect(schedules.map((job) => [job.runAfter.toISOString(), job.state])).toEqual([
      ["2026-12-02T07:00:00.000Z", "done"],
      ["2026-12-03T07:00:00.000Z", "queued"],
    ]);
  });

  it("the periods: daily ends at the hour, weekly on Monday at the hour", () => {
    expect(lastPeriod("daily", new Date("2026-11-25T06:59:00Z"), 7)).toEqual({ start: new Date("2026-11-23T07:00:00Z"), end: new Date("2026-11-24T07:00:00Z") });
    expect(lastPeriod("daily", new Date("2026-11-25T07:00:00Z"), 7)).toEqual({ start: new Date("2026-11-24T07:00:00Z"), end: new Date("2026-11-25T07:00:00Z") });
    // 2026-11-23 is a Monday
    expect(lastPeriod("weekly", new Date("2026-11-26T12:00:00Z"), 7)).toEqual({ start: new Date("2026-11-16T07:00:00Z"), end: new Date("2026-11-23T07:00:00Z") });
    expect(lastPeriod("weekly", new Date("2026-11-23T06:00:00Z"), 7)).toEqual({ start: new Date("2026-11-09T07:00:00Z"), end: new Date("2026-11-16T07:00:00Z") });
  });
});

describe("the wake after commit", () => {
  it("when a writer's batch commits an entry of an instant segment, then a started queue polling only every 10 minutes sends the alert at once", async () => {
    const idle = await startTestApi({ config: testConfig({ JOB_POLL_MS: "600000" }), trustProxy: "loopback", tracking: { config: testTrackingConfig() }, mail: mail() });
    try {
      const owner = await createTenant(idle.services, "Initech");
      idle.services.jobs.start();
      const res = await idle
        .request()
        .post(`/v1/segments?email=${encodeURIComponent(owner.admin.email)}`)
        .set(as(owner.key))
        .send({ datasetId: owner.datasets[0], name: "Apple at once", filters: where("organizationDomain", "eq", "apple.com"), emailPreferences: { enabled: true, frequency: "instant" } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      // the fixture's invitations are sent (their enqueue woke the queue): from here it is idle
      await eventually(async () => expect(await idle.db.prisma.job.count({ where: { state: { in: ["queued", "running"] } } })).toBe(0));
      const before = smtp.messages.length;
      // wired as every writer is: onCommitted wakes the queue once the batch's transaction committed
      const wired = wiredWriter(idle);
      expect((await collectPageView(idle, owner.datasets[0], "v-wake-1")).status).toBeLessThan(300);
      await wired.drain();
      await wired.stop();
      const [alert] = (await eventually(() => smtp.received(before + 1), { timeoutMs: 60_000 })).slice(before);
      expect(alert!.subject).toContain("Apple at once");
    } finally {
      await idle.services.jobs.stop();
      await idle.close();
    }
  });
});
