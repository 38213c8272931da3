// Webhooks end to end against a real receiver on loopback: endpoints through the API, events
// written in the caller's transaction (outbox), attempts run by the shared job queue, and every
// request the receiver gets verified with the standardwebhooks library's own verifier.
import net, { type AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createSender } from "../server/notify/delivery.ts";
import * as webhookEvents from "../server/services/webhook-events.ts";
import { createServices } from "../server/services/index.ts";
import { startTestApi, type TestApi } from "./support/api.ts";
import { as } from "./support/suite.ts";
import { createTenant, type Tenant } from "./support/tenants.ts";
import { ADDRESSES, BROWSER_UA, testTrackingConfig, wiredWriter } from "./support/tracking.ts";
import { Receiver } from "./support/webhook-receiver.ts";
import { testConfig } from "./support/config.ts";

let api: TestApi;
let tenant: Tenant;
let receiver: Receiver;
/** The queue's and the services' clock: real time plus an offset the tests move forward. */
let offsetMs = 0;
const now = () => new Date(Date.now() + offsetMs);

beforeAll(async () => {
  api = await startTestApi({
    now,
    trustProxy: "loopback",
    tracking: { config: testTrackingConfig() },
    // loopback receivers, and every retry at once (the schedule's waits are checked on the job rows)
    webhooks: testConfig({ WEBHOOK_ALLOW_PRIVATE_ADDRESSES: "1", WEBHOOK_RETRY_SCHEDULE_SECONDS: "0,0,0,0,0,0,0" }).webhooks,
  });
  tenant = await createTenant(api.services, "Hooks");
  receiver = await new Receiver().start();
});
afterAll(async () => {
  await receiver?.close();
  await api?.close();
});
afterEach(() => {
  receiver.received = [];
  receiver.script = [];
});

const drain = () => api.services.jobs.drain();
const eventDeps = () => ({ db: api.db.prisma, jobs: api.services.jobs, now });

async function createEndpoint(eventTypes: string[] = ["lead.created"], url = receiver.url) {
  const res = await api.request().post("/v1/webhooks/endpoints").set(as(tenant.key)).send({ url, eventTypes });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  receiver.secret = res.body.secret;
  return res.body as { endpointId: string; secret: string };
}

async function deliveries(endpointId: string) {
  const res = await api.request().get(`/v1/webhooks/endpoints/${endpointId}/deliveries`).set(as(tenant.key));
  expect(res.status).toBe(200);
  return res.body.data as { deliveryId: string; state: string; eventType: string; attempts: { statusCode: number | null; errorClass: string | null }[] }[];
}

async function publish(type: "lead.created" | "lead.visited" | "contact.enriched" | "segment.lead_entered", data: Record<string, unknown> = { leadId: "lead_x" }) {
  return api.db.prisma.$transaction((tx) => webhookEvents.publishEvent(eventDeps(), tx, { accountId: tenant.accountId, type, data }));
}

describe("createWebhookEndpoint", () => {
  it("when an endpoint is created, then its whsec_ secret is shown once and never listed, and it is stored sealed", async () => {
    const { endpointId, secret } = await createEndpoint(["lead.created", "lead.visited"]);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/=]+$/);
    const list = await api.request().get("/v1/webhooks/endpoints").set(as(tenant.key));
    expect(list.status).toBe(200);
    const listed = list.body.data.find((e: { endpointId: string }) => e.endpointId === endpointId);
    expect(listed).toMatchObject({ url: receiver.url, eventTypes: ["lead.created", "lead.visited"], enabled: true, disabledReason: null });
    expect(JSON.stringify(list.body)).not.toContain(secret.slice(6));
    const row = await api.db.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: endpointId } });
    expect(row.secretSealed).not.toContain(secret.slice(6));
    await api.request().delete(`/v1/webhooks/endpoints/${endpointId}`).set(as(tenant.key)).expect(204);
  });

  it("when the URL is or resolves to a private address, then 400 invalid_webhook_url, unless the test switch allows it", async () => {
    // the same database, with the production default: private addresses refused
    const strict = api.appWith({ services: createServices(api.db.prisma, { config: testConfig(), logger: api.logger }) });
    const request = (url: string) =>
      import("supertest").then(({ default: st }) => st(strict).post("/v1/webhooks/endpoints").set(as(tenant.key)).send({ url, eventTypes: ["lead.created"] }));
    for (const url of ["http://127.0.0.1:8080/hook", "https://10.1.2.3/hook", "https://[::1]/hook", "https://169.254.169.254/latest", "https://localhost/hook", "https://user:pw@hooks.partner.example/"]) {
      const res = await request(url);
      expect(res.status, url).toBe(400);
      expect(res.body).toEqual({ error: "invalid_webhook_url", message: expect.any(String), details: [{ location: "body", field: "url", message: expect.any(String) }] });
    }
    // the test switch (WEBHOOK_ALLOW_PRIVATE_ADDRESSES) lets the loopback receiver in
    const allowed = await api.request().post("/v1/webhooks/endpoints").set(as(tenant.key)).send({ url: "http://127.0.0.1:8080/hook", eventTypes: ["lead.created"] });
    expect(allowed.status).toBe(201);
    await api.request().delete(`/v1/webhooks/endpoints/${allowed.body.endpointId}`).set(as(tenant.key)).expect(204);
  });

  it("when production requires HTTPS, then an http URL is refused", () => {
    expect(testConfig({ NODE_ENV: "production", SMTP_URL: "smtp://mail.example:587" }).webhooks.requireHttps).toBe(true);
    expect(() => testConfig({ NODE_ENV: "production", SMTP_URL: "smtp://mail.example:587", WEBHOOK_ALLOW_PRIVATE_ADDRESSES: "1" })).toThrow(/refused in production/);
  });
});

describe("publishEvent", () => {
  it("when the transaction that publishes rolls back, then no delivery and no job exist", async () => {
    const { endpointId } = await createEndpoint();
    const jobsBefore = await api.db.prisma.job.count();
    await expect(
      api.db.prisma.$transaction(async (tx) => {
        expect(await webhookEvents.publishEvent(eventDeps(), tx, { accountId: tenant.accountId, type: "lead.created", data: { leadId: "lead_gone" } })).toBe(1);
        throw new Error("the caller's write failed");
      }),
    ).rejects.toThrow("the caller's write failed");
    expect(await deliveries(endpointId)).toEqual([]);
    expect(await api.db.prisma.job.count()).toBe(jobsBefore);
    await drain();
    expect(receiver.received).toEqual([]);
    await api.request().delete(`/v1/webhooks/endpoints/${endpointId}`).set(as(tenant.key)).expect(204);
  });

  it("when an event is published, then only enabled endpoints subscribed to its type get a delivery", async () => {
    const subscribed = await createEndpoint(["lead.visited"]);
    const other = await createEndpoint(["contact.enriched"]);
    receiver.secret = (await api.request().post(`/v1/webhooks/endpoints/${subscribed.endpointId}/secret/rotate`).set(as(tenant.key))).body.secret;
    expect(await publish("lead.visited", { leadId: "lead_v" })).toBe(1);
    await drain();
    expect(receiver.received.map((r) => r.verified.type)).toEqual(["lead.visited"]);
    expect(receiver.received[0]!.verified.data).toEqual({ leadId: "lead_v" });
    expect(await deliveries(other.endpointId)).toEqual([]);
    for (const e of [subscribed, other]) await api.request().delete(`/v1/webhooks/endpoints/${e.endpointId}`).set(as(tenant.key)).expect(204);
  });
});

describe("delivery", () => {
  it("when the receiver fails four times then succeeds, then the fifth attempt delivers it with the same webhook-id, each attempt recorded", async () => {
    const { endpointId, secret } = await createEndpoint();
    receiver.script = [{ status: 500 }, { status: 503 }, { status: 502 }, { status: 400 }];
    await publish("lead.created", { leadId: "lead_five" });
    await drain();
    expect(receiver.received).toHaveLength(5);
    const ids = new Set(receiver.received.map((r) => r.headers["webhook-id"]));
    expect(ids.size).toBe(1);
    expect(receiver.received.every((r) => r.verified.type === "lead.created")).toBe(true);
    const [delivery] = await deliveries(endpointId);
    expect(delivery!.deliveryId).toBe([...ids][0]);
    expect(delivery!.state).toBe("delivered");
    expect(delivery!.attempts.map((a) => [a.statusCode, a.errorClass])).toEqual([
      [500, "http_status"],
      [503, "http_status"],
      [502, "http_status"],
      [400, "http_status"],
      [200, null],
    ]);
    // the secret is never logged
    expect(api.logs.filter((line) => line.includes(secret.slice(6)))).toEqual([]);
    await api.request().delete(`/v1/webhooks/endpoints/${endpointId}`).set(as(tenant.key)).expect(204);
  });

  it("when an attempt fails, then the next one is due after the Standard Webhooks schedule's wait", async () => {
    const config = testConfig().webhooks;
    expect(config.retryScheduleMs).toEqual([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    expect(config.timeoutMs).toBe(15_000);
  });

  it("when the receiver answers 503 with Retry-After, then the next attempt waits that long, then delivers", async () => {
    const { endpointId } = await createEndpoint();
    receiver.script = [{ status: 503, headers: { "retry-after": "120" } }];
    await publish("lead.created");
    await drain();
    expect(receiver.received).toHaveLength(1);
    const [pending] = await deliveries(endpointId);
    expect(pending!.state).toBe("pending");
    const job = await api.db.prisma.job.findFirstOrThrow({ where: { kind: "webhook", state: "queued" }, orderBy: { id: "desc" } });
    const waitMs = job.runAfter.getTime() - now().getTime();
    expect(waitMs).toBeGreaterThan(110_000);
    expect(waitMs).toBeLessThanOrEqual(120_000);
    offsetMs += 121_000;
    await drain();
    expect(receiver.received).toHaveLength(2);
    expect(receiver.received[1]!.headers["webhook-id"]).toBe(receiver.received[0]!.headers["webhook-id"]);
    expect((await deliveries(endpointId))[0]!.state).toBe("delivered");
    await api.request().delete(`/v1/webhooks/endpoints/${endpointId}`).set(as(tenant.key)).expect(204);
  });

  it("when the receiver answers 410, then the endpoint is disabled, the delivery fails and later events are not sent", async () => {
    const { endpointId } = await createEndpoint();
    receiver.script = [{ status: 410 }];
    await publish("lead.created");
    await drain();
    expect(receiver.received).toHaveLength(1);
    const endpoint = await api.request().get(`/v1/webhooks/endpoints/${endpointId}`).set(as(tenant.key));
    expect(endpoint.body).toMatchObject({ enabled: false, disabledReason: "gone" });
    const [delivery] = await deliveries(endpointId);
    expect(delivery).toMatchObject({ state: "failed", attempts: [{ statusCode: 410, errorClass: "http_status" }] });
    expect(await publish("lead.created")).toBe(0);
    const test = await api.request().post(`/v1/webhooks/endpoints/${endpointId}/test`).set(as(tenant.key));
    expect(test.status).toBe(409);
    expect(test.body.error).toBe("endpoint_disabled");
    await api.request().delete(`/v1/webhooks/endpoints/${endpointId}`).set(as(tenant.key)).expect(204);
  });

  it("when delivery runs without the test switch, then a loopback receiver is never connected to (non_public_address)", async () => {
    const send = createSender({ timeoutMs: 2000, allowPrivateAddresses: false, now });
    const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    for (const url of [receiver.url, receiver.url.replace("127.0.0.1", "localhost")]) {
      const outcome = await send({ url, id: "msg_guarded", secret, body: "{}" });
      expect(outcome, url).toMatchObject({ ok: false, statusCode: null, errorClass: "non_public_address" });
    }
    expect(receiver.received).toEqual([]);
  });

  it("when the receiver never answers, then the attempt ends at the timeout as timeout", async () => {
    const sockets: net.Socket[] = [];
    const silent = net.createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const send = createSender({ timeoutMs: 300, allowPrivateAddresses: true, now });
    const outcome = await send({ url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/`, id: "msg_silent", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", body: "{}" });
    expect(outcome).toMatchObject({ ok: false, statusCode: null, errorClass: "timeout" });
    expect(sockets).toHaveLength(1);
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });

  it("when the receiver redirects, then the attempt fails as redirect and is not followed", async () => {
    const { endpointId } = await createEndpoint();
    receiver.script = [{ status: 302, headers: { location: "http://169.254.169.254/" } }];
    await publish("lead.created");
    await drain();
    const [delivery] = await deliveries(endpointId);
    expect(delivery!.attempts.map((a) => [a.statusCode, a.errorClass])).toEqual([
      [302, "redirect"],
      [200, null],
    ]);
    await api.request().delete(`/v1/webhooks/endpoints/${endpointId}`).set(as(tenant.key)).expect(204);
  });

  it("when an endpoint has failed for 5 days, then the next failure disables it (failing)", async () => {
    const { endpointId } = await createEndpoint();
    await api.db.prisma.webhookEndpoint.update({ where: { id: endpointId }, data: { failingSince: new Date(now().getTime() - 5 * 86_400_000 - 60_000) } });
    receiver.script = [{ status: 500 }];
    await publish("lead.created");
    await drain();
    expect(receiver.received).toHaveLength(1);
    const endpoint = await api.request().get(`/v1/webhooks/endpoints/${endpointId}`).set(as(tenant.key));
    expect(endpoint.body).toMatchObject({ enabled: false, disabledReason: "failing" });
    expect((await deliveries(endpointId))[0]!.state).toBe("failed");
    // the account's admin is e-mailed (a mail job, written with the disabling)
    const mails = await api.db.prisma.job.findMany({ where: { kind: "mail", dedupeKey: { startsWith: `webhook-disabled:${endpointId}:` } } });
    expect(mails).toHaveLength(1);
    expect(mails[0]!.dedupeKey).toMatch(new RegExp(`:${tenant.admin.id}$`));
    // enabling starts afresh
    const enabled = await api.request().patch(`/v1/webhooks/endpoints/${endpointId}`).set(as(tenant.key)).send({ enabled: true });
    expect(enabled.body).toMatchObject({ enabled: true, disabledReason: null });
    expect((await api.db.prisma.webhookEndpoint.findUniqueOrThrow({ where: { id: endpointId } })).failingSince).toBeNull();
    await api.request().delete(`/v1/webhooks/endpoints/${endpointId}`).set(as(tenant.key)).expect(204);
  });
});

describe("sendWebhookTestEvent, replayWebhookDelivery and replayWebhookDeliveries", () => {
  it("when a test event is sent and replayed, then the receiver gets it twice with one webhook-id, and both attempts are listed", async () => {
    const { endpointId } = await createEndpoint(["segment.lead_entered"]);
    const sent = await api.request().post(`/v1/webhooks/endpoints/${endpointId}/test`).set(as(tenant.key));
    expect(sent.status).toBe(202);
    expect(sent.body).toMatchObject({ eventType: "webhook.test", state: "pending", attempts: [] });
    await drain();
    const replay = await api.request().post(`/v1/webhooks/endpoints/${endpointId}/deliveries/${sent.body.deliveryId}/replay`).set(as(tenant.key));
    expect(replay.status).toBe(202);
    await drain();
    expect(receiver.received.map((r) => [r.headers["webhook-id"], r.verified.type])).toEqual([
      [sent.body.deliveryId, "webhook.test"],
      [sent.body.deliveryId, "webhook.test"],
    ]);
    const [delivery] = await deliveries(endpointId);
    expect(delivery).toMatchObject({ state: "delivered", attempts: [{ statusCode: 200 }, { statusCode: 200 }] });
    const unknown = await api.request().post(`/v1/webhooks/endpoints/${endpointId}/deliveries/msg_nosuchdelivery0/replay`).set(as(tenant.key));
    expect(unknown.status).toBe(404);
    await api.request().delete(`/v1/webhooks/endpoints/${endpointId}`).set(as(tenant.key)).expect(204);
  });

  it("when a time range is replayed, then its failed deliveries are sent again and delivered", async () => {
    const { endpointId } = await createEndpoint();
    const from = new Date(now().getTime() - 1000).toISOString();
    receiver.script = Array.from({ length: 8 }, () => ({ status: 500 }));
    await publish("lead.created");
    await drain();
    expect(receiver.received).toHaveLength(8);
    expect((await deliveries(endpointId))[0]).toMatchObject({ state: "failed" });
    const replay = await api.request().post(`/v1/webhooks/endpoints/${endpointId}/replay`).set(as(tenant.key)).send({ from });
    expect(replay.status).toBe(202);
    expect(replay.body).toEqual({ replayed: 1 });
    await drain();
    expect(receiver.received).toHaveLength(9);
    expect(new Set(receiver.received.map((r) => r.headers["webhook-id"])).size).toBe(1);
    expect((await deliveries(endpointId))[0]).toMatchObject({ state: "delivered" });
    const bad = await api.request().post(`/v1/webhooks/endpoints/${endpointId}/replay`).set(as(tenant.key)).send({ from, to: from });
    expect(bad.status).toBe(400);
    await api.request().delete(`/v1/webhooks/endpoints/${endpointId}`).set(as(tenant.key)).expect(204);
  });
});

describe("listWebhookDeliveries", () => {
  it("when there are more deliveries than the limit, then pages follow newest first without overlap, and another account sees 404", async () => {
    const { endpointId } = await createEndpoint();
    for (let i = 0; i < 3; i++) await publish("lead.created", { leadId: `lead_${i}` });
    const first = await api.request().get(`/v1/webhooks/endpoints/${endpointId}/deliveries?limit=2`).set(as(tenant.key));
    expect(first.body.data).toHaveLength(2);
    const second = await api.request().get(`/v1/webhooks/endpoints/${endpointId}/deliveries?limit=2&cursor=${first.body.nextCursor}`).set(as(tenant.key));
    expect(second.body.data).toHaveLength(1);
    expect(second.body.nextCursor).toBeNull();
    const leads = [...first.body.data, ...second.body.data].map((d: { payload: { data: { leadId: string } } }) => d.payload.data.leadId);
    expect(leads).toEqual(["lead_2", "lead_1", "lead_0"]);
    const other = await createTenant(api.services, "Other");
    expect((await api.request().get(`/v1/webhooks/endpoints/${endpointId}/deliveries`).set(as(other.key))).status).toBe(404);
    await drain();
    await api.request().delete(`/v1/webhooks/endpoints/${endpointId}`).set(as(tenant.key)).expect(204);
  });
});

describe("segment.lead_entered", () => {
  it("when a lead enters a segment, then the segment's entry is published to subscribed endpoints in the same transaction", async () => {
    const { endpointId } = await createEndpoint(["segment.lead_entered"]);
    await api.db.prisma.$transaction((tx) =>
      webhookEvents.onSegmentEntered(eventDeps(), [{ accountId: tenant.accountId, datasetId: tenant.datasets[0], segmentId: 7, leadId: "lead_entered", enteredAt: now() }], tx),
    );
    await drain();
    expect(receiver.received.map((r) => r.verified)).toEqual([
      { type: "segment.lead_entered", timestamp: expect.any(String), data: { accountId: tenant.accountId, datasetId: tenant.datasets[0], leadId: "lead_entered", segmentId: 7 } },
    ]);
    await api.request().delete(`/v1/webhooks/endpoints/${endpointId}`).set(as(tenant.key)).expect(204);
  });
});

describe("tracking", () => {
  it("when a tracked visit creates a lead that matches a segment, then signed lead.created and segment.lead_entered deliveries carry it", async () => {
    const { endpointId } = await createEndpoint(["lead.created", "lead.visited", "segment.lead_entered"]);
    // wired as every writer is (server/main.ts, npm run ingest): the services' ingest wiring
    const writer = wiredWriter(api);
    const datasetId = tenant.datasets[0];
    const segment = await api.request().post("/v1/segments").query({ email: tenant.admin.email }).set(as(tenant.key)).send({
      datasetId,
      name: "US visitors",
      filters: { match: "all", conditions: [{ field: "country", operator: "eq", value: "US" }] },
    });
    expect(segment.status, JSON.stringify(segment.body)).toBe(200);
    const visit = (visitorId: string) =>
      api
        .request()
        .post(`/collect?dataset=${datasetId}`)
        .set("x-forwarded-for", ADDRESSES.business)
        .set("user-agent", BROWSER_UA)
        .set("content-type", "text/plain")
        .send(JSON.stringify({ events: [{ type: "pageview", visitorId, url: "https://www.customer.example/pricing", referrer: "https://www.google.com/", title: "Pricing" }] }));
    expect((await visit(`hookvisitor1${Date.now().toString(36)}`)).status).toBeLessThan(300);
    await writer.drain();
    expect((await visit(`hookvisitor2${Date.now().toString(36)}`)).status).toBeLessThan(300);
    await writer.drain();
    await writer.stop();
    await drain();
    const leads = await api.request().get("/v1/leads").query({ email: tenant.admin.email, datasetId }).set(as(tenant.key));
    const [lead] = leads.body.data;
    expect(receiver.received.map((r) => r.verified.type).sort()).toEqual(["lead.created", "lead.visited", "segment.lead_entered"]);
    const entered = receiver.received.find((r) => r.verified.type === "segment.lead_entered")!;
    expect(entered.verified.data).toMatchObject({ datasetId, leadId: lead.leadId, segmentId: segment.body.id });
    receiver.received = receiver.received.filter((r) => r !== entered);
    expect(receiver.received[0]!.verified.data).toMatchObject({ accountId: tenant.accountId, datasetId, leadId: lead.leadId, lead: { organizationName: lead.organizationName } });
    expect(Buffer.byteLength(receiver.received[0]!.body)).toBeLessThan(20 * 1024);
    expect((await deliveries(endpointId)).map((d) => d.state)).toEqual(["delivered", "delivered", "delivered"]);
    await api.request().delete(`/v1/webhooks/endpoints/${endpointId}`).set(as(tenant.key)).expect(204);
  });
});
