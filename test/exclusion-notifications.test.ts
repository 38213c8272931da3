// Issue 23: an exclusion rule hides a lead from webhooks and segment alerts as from every listing.
// A visit of an excluded organisation publishes no lead.created, lead.visited or
// segment.lead_entered; a rule added after a lead entered a segment keeps it out of the alert mail.
// Issue 32: once the rule is removed, a consumer's first event of such a lead is lead.created.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type IngestWriter } from "../server/tracking/log/writer.ts";
import { startTestApi, type TestApi } from "./support/api.ts";
import { where } from "./support/leads.ts";
import { eventually } from "./support/eventually.ts";
import { startSmtpServer, type TestSmtpServer } from "./support/smtp.ts";
import { as } from "./support/suite.ts";
import { createTenant, type Tenant } from "./support/tenants.ts";
import { collectPageView, testTrackingConfig, wiredWriter } from "./support/tracking.ts";
import { testConfig } from "./support/config.ts";
import { Receiver } from "./support/webhook-receiver.ts";
import * as datasets from "../server/services/datasets.ts";

let api: TestApi;
let tenant: Tenant;
let smtp: TestSmtpServer;
let writer: IngestWriter;
/** The loopback receiver of the webhook tests: it verifies every request's signature. */
const receiver = new Receiver();
beforeAll(async () => {
  smtp = await startSmtpServer();
  api = await startTestApi({
    trustProxy: "loopback",
    tracking: { config: testTrackingConfig() },
    webhooks: testConfig({ WEBHOOK_ALLOW_PRIVATE_ADDRESSES: "1" }).webhooks,
    mail: { smtpUrl: smtp.url, from: "Lead Intelligence <alerts@leadintel.example>", outboxDir: "/nonexistent" },
  });
  tenant = await createTenant(api.services, "Excluding");
  writer = wiredWriter(api); // as every process wires it
  await receiver.start();
  await api.services.jobs.drain(); // the fixture's invitations
  smtp.messages.length = 0;
});
afterAll(async () => {
  await writer?.stop();
  await receiver.close();
  await api?.close();
  await smtp?.close();
});

let seq = 0;
async function visit(datasetId: string): Promise<void> {
  const res = await collectPageView(api, datasetId, `excluded${++seq}${Date.now().toString(36)}`, "https://www.customer.example/");
  expect(res.status).toBe(202);
  await writer.drain();
}

/** The dataset's rule hiding the visitor network's organisation (Apple, apple.com). */
async function exclude(datasetId: string): Promise<void> {
  const res = await api.request().post("/v1/dataset-exclusion").set(as(tenant.key)).send({ datasetId, type: "organizationDomain", data: "Apple.com" });
  expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
}

/** Removes that rule: the leads it hid show again. */
async function unexclude(datasetId: string): Promise<void> {
  const res = await api.request().delete("/v1/dataset-exclusion").set(as(tenant.key)).send({ datasetId, type: "organizationDomain", data: "apple.com" });
  expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
}

/** The test's endpoint (deleted after each test, also a failed one: its deliveries would be signed with another secret). */
let endpointId: string | undefined;

/** An endpoint on the loopback receiver subscribed to the lead events. */
async function createEndpoint(): Promise<void> {
  const res = await api.request().post("/v1/webhooks/endpoints").set(as(tenant.key)).send({ url: receiver.url, eventTypes: ["lead.created", "lead.visited", "segment.lead_entered"] });
  expect(res.status).toBe(201);
  receiver.secret = res.body.secret;
  endpointId = res.body.endpointId;
}

/** What the receiver got for this dataset, in the order it got it: [type, leadId]. */
const receivedOf = (datasetId: string) =>
  receiver.received.filter((r) => r.verified.data.datasetId === datasetId).map((r) => [r.verified.type, r.verified.data.leadId]);

async function createSegment(datasetId: string, name: string, frequency: "instant" | "daily", filters = where("organizationDomain", "eq", "apple.com")): Promise<number> {
  const res = await api
    .request()
    .post("/v1/segments")
    .query({ email: tenant.admin.email })
    .set(as(tenant.key))
    .send({ datasetId, name, filters, emailPreferences: { enabled: true, frequency } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id;
}

const listed = async (datasetId: string) => (await api.request().get("/v1/leads").query({ email: tenant.admin.email, datasetId }).set(as(tenant.key))).body.data as unknown[];

// four visits, each drained by the writer, and the deliveries: slow on a busy machine
const slow = 120_000;

describe("webhook events of excluded leads", () => {
  afterEach(async () => {
    if (endpointId) await api.request().delete(`/v1/webhooks/endpoints/${endpointId}`).set(as(tenant.key)).expect(204);
    endpointId = undefined;
  }, slow);

  it("when a visit is of an organisation an exclusion rule hides, then no lead event is published for it; the same visit elsewhere is, lead.created first", async () => {
    const [hidden, shown] = tenant.datasets as [string, string];
    await exclude(hidden);
    await createSegment(hidden, "Apple (hidden)", "daily");
    await createSegment(shown, "Apple (shown)", "daily");
    await createEndpoint();

    for (const datasetId of [hidden, hidden, shown]) await visit(datasetId);
    await api.services.jobs.drain();

    expect(await listed(hidden)).toEqual([]);
    expect(await listed(shown)).toHaveLength(1);
    expect(receivedOf(hidden)).toEqual([]);
    expect(receivedOf(shown).map(([type]) => type)).toEqual(["lead.created", "segment.lead_entered"]);
  }, slow);

  it("when a lead first seen while a rule hid it visits after the rule is removed, then the consumer gets lead.created first, then lead.visited and segment.lead_entered, and lead.created once", async () => {
    const datasetId = await datasets.create(api.services, tenant.accountId, tenant.admin.email, { name: "Hidden, then shown" });
    await exclude(datasetId);
    await createSegment(datasetId, "Apple (revealed)", "daily");
    await createEndpoint();

    await visit(datasetId); // the lead is created while the rule hides it
    await visit(datasetId);
    await api.services.jobs.drain();
    expect(receivedOf(datasetId)).toEqual([]);

    await unexclude(datasetId);
    await visit(datasetId);
    await api.services.jobs.drain(); // one delivery at a time, in the order they were queued
    const [lead] = (await listed(datasetId)) as { leadId: string; visitCount: number }[];
    expect(lead).toMatchObject({ visitCount: 3 });
    expect(receivedOf(datasetId)).toEqual([
      ["lead.created", lead!.leadId],
      ["lead.visited", lead!.leadId],
      ["segment.lead_entered", lead!.leadId],
    ]);
    const created = receiver.received.find((r) => r.verified.type === "lead.created" && r.verified.data.datasetId === datasetId)!;
    expect(created.verified.data.lead).toMatchObject({ visitCount: 3 }); // the lead as it is when it shows

    await visit(datasetId);
    await api.services.jobs.drain();
    expect(receivedOf(datasetId).map(([type]) => type)).toEqual(["lead.created", "lead.visited", "segment.lead_entered", "lead.visited"]);
  }, slow);

  it("when such a lead's first event after the rule is removed is entering a segment by a tag, then lead.created comes first", async () => {
    const datasetId = await datasets.create(api.services, tenant.accountId, tenant.admin.email, { name: "Hidden, then tagged" });
    await exclude(datasetId);
    await createSegment(datasetId, "Tagged hot", "daily", where("tags", "contains", "hot"));
    await createEndpoint();
    await visit(datasetId);
    const { id: leadId } = await api.db.prisma.lead.findFirstOrThrow({ where: { datasetId } });

    await unexclude(datasetId);
    await api.request().put("/v1/management/lead-tags").set(as(tenant.key)).send({ datasetId, leadId, add: ["hot"] }).expect(204);
    await api.services.jobs.drain();
    expect(receivedOf(datasetId)).toEqual([
      ["lead.created", leadId],
      ["segment.lead_entered", leadId],
    ]);
  }, slow);
});

describe("segment alerts of excluded leads", () => {
  it("when a rule hides a lead after it entered an instant segment, then its alert mail is not sent", async () => {
    const datasetId = await datasets.create(api.services, tenant.accountId, tenant.admin.email, { name: "Alerts" });
    const segmentId = await createSegment(datasetId, "Apple (alert)", "instant");
    await visit(datasetId);
    expect(await api.db.prisma.segmentEntry.count({ where: { segmentId } })).toBe(1);
    await exclude(datasetId);
    await api.services.jobs.drain();
    expect(smtp.messages.filter((m) => m.subject.includes("Apple (alert)"))).toEqual([]);
  });

  it("when no rule hides it, then the alert mail is sent (the control)", async () => {
    const datasetId = await datasets.create(api.services, tenant.accountId, tenant.admin.email, { name: "Alerts shown" });
    await createSegment(datasetId, "Apple (mailed)", "instant");
    await visit(datasetId);
    await api.services.jobs.drain();
    const mails = await eventually(() => smtp.received(1));
    expect(mails.some((m) => m.subject.includes("Apple (mailed)"))).toBe(true);
  });
});
