// Issue 23: an exclusion rule hides a lead from webhooks and segment alerts as from every listing.
// A visit of an excluded organisation publishes no lead.created, lead.visited or
// segment.lead_entered; a rule added after a lead entered a segment keeps it out of the alert mail.
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type IngestWriter } from "../server/tracking/writer.ts";
import { startTestApi, type TestApi } from "./support/api.ts";
import { where } from "./support/leads.ts";
import { eventually } from "./support/eventually.ts";
import { startSmtpServer, type TestSmtpServer } from "./support/smtp.ts";
import { as } from "./support/suite.ts";
import { createTenant, type Tenant } from "./support/tenants.ts";
import { collectPageView, testTrackingConfig, wiredWriter } from "./support/tracking.ts";
import { testConfig } from "./support/config.ts";

let api: TestApi;
let tenant: Tenant;
let smtp: TestSmtpServer;
let writer: IngestWriter;
/** The bodies the webhook receiver got. */
const received: { type: string; data: { datasetId: string } }[] = [];
const receiver = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    received.push(JSON.parse(Buffer.concat(chunks).toString("utf8")));
    res.end();
  });
});

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
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  await api.services.jobs.drain(); // the fixture's invitations
  smtp.messages.length = 0;
});
afterAll(async () => {
  await writer?.stop();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
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

async function createSegment(datasetId: string, name: string, frequency: "instant" | "daily"): Promise<number> {
  const res = await api
    .request()
    .post("/v1/segments")
    .query({ email: tenant.admin.email })
    .set(as(tenant.key))
    .send({ datasetId, name, filters: where("organizationDomain", "eq", "apple.com"), emailPreferences: { enabled: true, frequency } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.id;
}

const listed = async (datasetId: string) => (await api.request().get("/v1/leads").query({ email: tenant.admin.email, datasetId }).set(as(tenant.key))).body.data as unknown[];

describe("webhook events of excluded leads", () => {
  it("when a visit is of an organisation an exclusion rule hides, then no lead event is published for it; the same visit elsewhere is", async () => {
    const [hidden, shown] = tenant.datasets as [string, string];
    await exclude(hidden);
    await createSegment(hidden, "Apple (hidden)", "daily");
    await createSegment(shown, "Apple (shown)", "daily");
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const endpoint = await api.request().post("/v1/webhooks/endpoints").set(as(tenant.key)).send({ url, eventTypes: ["lead.created", "lead.visited", "segment.lead_entered"] });
    expect(endpoint.status).toBe(201);

    for (const datasetId of [hidden, hidden, shown]) await visit(datasetId);
    await api.services.jobs.drain();

    expect(await listed(hidden)).toEqual([]);
    expect(await listed(shown)).toHaveLength(1);
    expect(received.map((r) => [r.type, r.data.datasetId]).sort()).toEqual([
      ["lead.created", shown],
      ["segment.lead_entered", shown],
    ]);
    await api.request().delete(`/v1/webhooks/endpoints/${endpoint.body.endpointId}`).set(as(tenant.key)).expect(204);
  });
});

describe("segment alerts of excluded leads", () => {
  it("when a rule hides a lead after it entered an instant segment, then its alert mail is not sent", async () => {
    const datasetId = await api.services.datasets.create(tenant.accountId, tenant.admin.email, { name: "Alerts" });
    const segmentId = await createSegment(datasetId, "Apple (alert)", "instant");
    await visit(datasetId);
    expect(await api.db.prisma.segmentEntry.count({ where: { segmentId } })).toBe(1);
    await exclude(datasetId);
    await api.services.jobs.drain();
    expect(smtp.messages.filter((m) => m.subject.includes("Apple (alert)"))).toEqual([]);
  });

  it("when no rule hides it, then the alert mail is sent (the control)", async () => {
    const datasetId = await api.services.datasets.create(tenant.accountId, tenant.admin.email, { name: "Alerts shown" });
    await createSegment(datasetId, "Apple (mailed)", "instant");
    await visit(datasetId);
    await api.services.jobs.drain();
    const mails = await eventually(() => smtp.received(1));
    expect(mails.some((m) => m.subject.includes("Apple (mailed)"))).toBe(true);
  });
});
