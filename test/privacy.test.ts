// Privacy: a dataset's privacy settings, and the export and erasure of a data subject, seeded
// through the collector and the ingest writer as a real visit would be. The erasure test searches
// a dump of every table for the subject's address and visitor id.
import { randomBytes } from "node:crypto";
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ContactProfile } from "../server/contacts/profile.ts";
import { createServices } from "../server/services/index.ts";
import { type IngestWriter } from "../server/tracking/log/writer.ts";
import { sharedResolver } from "../server/tracking/ipdata/resolver.ts";
import { as } from "./support/suite.ts";
import { ADDRESSES, BROWSER_UA, startTracking, type TrackingSuite, wiredWriter } from "./support/tracking.ts";
import { testConfig } from "./support/config.ts";
import { dumpOfEveryTable as dumpOf } from "./support/dump.ts";
import * as contacts from "../server/services/contacts.ts";
import * as datasets from "../server/services/datasets.ts";

let t: TrackingSuite;
/** A writer composed as server/main.ts composes it: enrichment outcomes become contact.enriched deliveries. */
let writer: IngestWriter;

/** The collector's clock: real time plus days the tests move it on. */
let collectorDays = 0;
const collectorNow = () => new Date(Date.now() + collectorDays * 86_400_000);
const newVisitor = () => `vid${randomBytes(8).toString("hex")}`;
const newAddress = () => `Person.${randomBytes(4).toString("hex")}@Subject.example`;

beforeAll(async () => {
  t = await startTracking({}, { webhooks: testConfig({ WEBHOOK_ALLOW_PRIVATE_ADDRESSES: "1" }).webhooks, tracking: { now: collectorNow } });
  writer = wiredWriter(t.api);
  sharedResolver(); // the IP data loads within the hook's time, not the first test's
  // an endpoint that never answers: its deliveries stay pending, payload and all
  const endpoint = await t.api.request().post("/v1/webhooks/endpoints").set(as(t.tenant.key)).send({ url: "http://127.0.0.1:9/hooks", eventTypes: ["contact.enriched", "lead.created"] });
  expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(201);
});
afterAll(async () => {
  await writer?.stop();
  await t?.close();
});

const admin = () => ({ email: t.tenant.admin.email });
const dumpOfEveryTable = () => dumpOf(t.api);

function erase(body: object, key = t.tenant.key, email = t.tenant.admin.email) {
  return t.api.request().post("/v1/privacy/erasures").query({ email }).set(as(key)).send(body);
}

function exportOf(body: object) {
  return t.api.request().post("/v1/privacy/exports").query(admin()).set(as(t.tenant.key)).send(body);
}

/** A visitor who views a page and submits a form with `address` (enriched when the store has a profile). */
async function seedPerson(datasetId: string, address: string, visitorId = newVisitor()) {
  await t.settings(datasetId, { formTracking: true, contactEnrichment: true });
  const res = await t.collect(datasetId, ADDRESSES.business, [t.pageView(visitorId), t.form(visitorId, { email: address, company: "Apple" })]);
  expect(res.status).toBe(202);
  await writer.drain();
  return visitorId;
}

async function profileFor(address: string): Promise<ContactProfile> {
  const profile: ContactProfile = { email: address.toLowerCase(), fullName: "Pat Subject", headline: "Buyer", languages: [], experience: [] };
  await contacts.upsertMany(t.api.services, [profile]);
  return profile;
}

describe("eraseDataSubject", () => {
  it("when a person who submitted a form, was enriched and sent in a webhook is erased by address, then no table holds the address or the visitor id", async () => {
    const ds = t.tenant.datasets[0];
    const address = newAddress();
    await profileFor(address);
    const visitorId = await seedPerson(ds, address);
    // an event still queued carries the address too
    expect((await t.collect(ds, ADDRESSES.business, [t.form(visitorId, { mail: address })])).body.queued).toBe(1);
    const before = (await dumpOfEveryTable()).toLowerCase();
    expect(before).toContain(address.toLowerCase());
    expect(before).toContain(visitorId);
    const deliveries = await t.api.db.prisma.webhookDelivery.count({ where: { eventType: "contact.enriched", payload: { contains: visitorId } } });
    expect(deliveries).toBe(1);

    const res = await erase({ subjectEmail: address.toUpperCase() });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      datasetId: null,
      subjectType: "person",
      actorUserId: t.tenant.admin.id,
      counts: { visitors: 1, visits: 1, formSubmissions: 1, queuedEvents: 1, webhookDeliveries: 1 },
    });

    const after = (await dumpOfEveryTable()).toLowerCase();
    expect(after).not.toContain(address.toLowerCase());
    expect(after).not.toContain(visitorId.toLowerCase());
    // the operator's contact store is not the account's data: it stays
    expect(await contacts.find(t.api.services, address.toLowerCase())).toBeDefined();
  });

  it("when a visitor is erased, then its lead's visit count drops, a lead left without visits is removed, other visitors stay, and the receipt counts each lead once", async () => {
    const ds = t.tenant.datasets[1];
    await t.settings(ds, { formTracking: true });
    const [gone, stays] = [newVisitor(), newVisitor()];
    await t.collect(ds, ADDRESSES.business, [t.pageView(gone), t.pageView(gone), t.pageView(stays)]);
    await t.collect(ds, ADDRESSES.education, [t.pageView(gone)]);
    await writer.drain();
    const before = await t.leads(ds);
    expect(before.map((l) => l.visitCount).sort()).toEqual([1, 3]);

    const res = await erase({ visitorId: gone, datasetId: ds });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.counts).toEqual({ visitors: 1, visits: 3, formSubmissions: 0, queuedEvents: 0, pendingEvents: 0, withdrawnVisits: 0, webhookDeliveries: 0, leadsAdjusted: 1, leadsRemoved: 1 });
    const after = await t.leads(ds);
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ organizationName: before.find((l) => l.visitCount === 3)!.organizationName, visitCount: 1 });
    expect((await exportOf({ visitorId: stays, datasetId: ds })).body.visitors).toHaveLength(1);
  });

  it("when a queued batch holds events of the erased visitor and of another, then only the erased visitor's leave the queue and the other's are written", async () => {
    const ds = t.tenant.datasets[1];
    const [gone, stays] = [newVisitor(), newVisitor()];
    // one request: one queued batch with both visitors' page views
    await t.collect(ds, ADDRESSES.business, [t.pageView(gone), t.pageView(stays), t.pageView(gone)]);
    await t.collect(ds, ADDRESSES.business, [t.pageView(gone)]);
    const res = await erase({ visitorId: gone, datasetId: ds });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.counts).toMatchObject({ queuedEvents: 3, visits: 0 });
    await writer.drain();
    expect((await exportOf({ visitorId: gone, datasetId: ds })).body.visitors).toHaveLength(0);
    const { visitors } = (await exportOf({ visitorId: stays, datasetId: ds })).body;
    expect(visitors).toHaveLength(1);
    expect(visitors[0].visits).toHaveLength(1);
  });

  it("when the same erasure is asked again, then it answers counts of zero and records it again", async () => {
    const ds = t.tenant.datasets[1];
    const vid = newVisitor();
    await t.collect(ds, ADDRESSES.business, [t.pageView(vid)]);
    await writer.drain();
    expect((await erase({ visitorId: vid })).body.counts.visits).toBe(1);
    const again = await erase({ visitorId: vid });
    expect(again.status).toBe(200);
    expect(again.body.counts).toEqual({ visitors: 0, visits: 0, formSubmissions: 0, queuedEvents: 0, pendingEvents: 0, withdrawnVisits: 0, webhookDeliveries: 0, leadsAdjusted: 0, leadsRemoved: 0 });
  });

  it("when the erasure names one dataset, then the same visitor id in another dataset stays", async () => {
    const [first, second] = t.tenant.datasets;
    const vid = newVisitor();
    await t.collect(first, ADDRESSES.business, [t.pageView(vid)]);
    await t.collect(second, ADDRESSES.business, [t.pageView(vid)]);
    await writer.drain();
    expect((await erase({ visitorId: vid, datasetId: first })).body.counts.visitors).toBe(1);
    const left = await exportOf({ visitorId: vid });
    expect(left.body.visitors.map((v: { datasetId: string }) => v.datasetId)).toEqual([second]);
  });

  it("when the dataset is another account's, then 404 and nothing is erased", async () => {
    const vid = newVisitor();
    await t.collect(t.other.datasets[0], ADDRESSES.business, [t.pageView(vid)]);
    await writer.drain();
    const res = await erase({ visitorId: vid, datasetId: t.other.datasets[0] });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe("not_found");
    // the other account's own erasure still finds it
    expect((await erase({ visitorId: vid }, t.other.key, t.other.admin.email)).body.counts.visits).toBe(1);
  });

  it("when the acting user is a member, not an admin, then 403", async () => {
    const res = await erase({ visitorId: newVisitor() }, t.tenant.key, t.tenant.member.email);
    expect(res.status).toBe(403);
  });

  it("when neither or both of visitorId and subjectEmail are given, then 400 naming them", async () => {
    for (const body of [{}, { visitorId: newVisitor(), subjectEmail: newAddress() }]) {
      const res = await erase(body);
      expect(res.status).toBe(400);
      expect(res.body.details[0].field).toBe("visitorId");
    }
  });
});

describe("exportDataSubject", () => {
  it("when a person is exported, then visits, forms, the paid contact profile and the deliveries naming them are listed; after erasure nothing", async () => {
    const ds = t.tenant.datasets[0];
    const address = newAddress();
    const profile = await profileFor(address);
    const vid = await seedPerson(ds, address);
    const res = await exportOf({ subjectEmail: address, datasetId: ds });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.visitors).toEqual([
      expect.objectContaining({ visitorId: vid, email: address.toLowerCase(), enrichment: "enriched", truncated: false }),
    ]);
    expect(res.body.visitors[0].visits).toEqual([expect.objectContaining({ url: "https://www.customer.example/pricing?utm_source=newsletter", ip: ADDRESSES.business })]);
    expect(res.body.visitors[0].formSubmissions[0].fields).toEqual({ email: address, company: "Apple" });
    expect(res.body.contacts).toEqual([profile]);
    expect(res.body.webhookDeliveries.map((d: { eventType: string }) => d.eventType)).toEqual(["contact.enriched"]);
    await erase({ subjectEmail: address, datasetId: ds });
    const after = await exportOf({ subjectEmail: address, datasetId: ds });
    expect(after.body).toMatchObject({ visitors: [], otherFormSubmissions: [], contacts: [], webhookDeliveries: [] });
  });

  it("when the subject's events still wait in the queue (no writer ran), then they are listed as queued events, as received; once written, under the visitor instead", async () => {
    const ds = t.tenant.datasets[0];
    await t.settings(ds, { formTracking: true });
    const [subject, bystander] = [newVisitor(), newVisitor()];
    const address = newAddress();
    await t.collect(ds, ADDRESSES.business, [t.pageView(subject), t.pageView(bystander)]);
    await t.collect(ds, ADDRESSES.business, [t.form(subject, { email: address, company: "Apple" })]);
    const queued = [
      {
        datasetId: ds, visitorId: subject, type: "pageview", receivedAt: expect.any(String), url: "https://www.customer.example/pricing?utm_source=newsletter",
        referrer: "https://www.google.com/", title: "Pricing", leadId: expect.stringMatching(/^org_/), ip: ADDRESSES.business, country: "US", city: expect.any(String),
      },
      {
        datasetId: ds, visitorId: subject, type: "form", receivedAt: expect.any(String), url: "https://www.customer.example/contact",
        partial: false, fields: { email: address, company: "Apple" }, leadId: expect.stringMatching(/^org_/), ip: ADDRESSES.business, country: "US", city: expect.any(String),
      },
    ];
    // by address: the queued form names the visitor, so its page view is the person's too
    const byAddress = await exportOf({ subjectEmail: address });
    expect(byAddress.status, JSON.stringify(byAddress.body)).toBe(200);
    expect(byAddress.body).toMatchObject({ visitors: [], queuedEvents: queued, queuedEventsTruncated: false });
    expect((await exportOf({ visitorId: subject, datasetId: ds })).body.queuedEvents).toEqual(queued);
    expect((await exportOf({ visitorId: subject, datasetId: t.tenant.datasets[1] })).body.queuedEvents).toEqual([]);

    await writer.drain();
    const written = await exportOf({ subjectEmail: address });
    expect(written.body.queuedEvents).toEqual([]);
    expect(written.body.visitors).toEqual([expect.objectContaining({ visitorId: subject, email: address.toLowerCase() })]);
    expect(written.body.visitors[0].visits).toHaveLength(1);
  });

  it("when the service's JetStream ingest log does not answer, then the export answers 503 with Retry-After", async () => {
    const services = createServices(t.api.db.prisma, { config: testConfig({ INGEST_LOG_URL: "nats://127.0.0.1:9" }), logger: t.api.logger });
    const res = await supertest(t.api.appWith({ services })).post("/v1/privacy/exports").query(admin()).set(as(t.tenant.key)).send({ visitorId: newVisitor() });
    expect(res.status, JSON.stringify(res.body)).toBe(503);
    expect(res.body.error).toBe("service_unavailable");
    expect(res.headers["retry-after"]).toBe("2");
  });

  it("when another visitor's form carries the address, then it is listed under otherFormSubmissions", async () => {
    const ds = t.tenant.datasets[0];
    const address = newAddress();
    const colleague = newVisitor();
    await t.collect(ds, ADDRESSES.business, [t.form(colleague, { email: newAddress(), cc: ` ${address} ` })]);
    await writer.drain();
    const res = await exportOf({ subjectEmail: address });
    expect(res.body.visitors).toEqual([]);
    expect(res.body.otherFormSubmissions).toHaveLength(1);
    expect((await erase({ subjectEmail: address })).body.counts).toMatchObject({ visitors: 0, formSubmissions: 1 });
  });
});

describe("listErasures", () => {
  it("when erasures were made, then their records list newest first with who, when and counts, and never the subject", async () => {
    const vid = newVisitor();
    const address = newAddress();
    const first = await erase({ visitorId: vid });
    const second = await erase({ subjectEmail: address, datasetId: t.tenant.datasets[0] });
    const page = await t.api.request().get("/v1/privacy/erasures").query({ ...admin(), limit: 2 }).set(as(t.tenant.key));
    expect(page.status).toBe(200);
    expect(page.body.data).toEqual([second.body, first.body]);
    expect(page.body.nextCursor).toEqual(expect.any(String));
    const text = JSON.stringify(await t.api.db.prisma.privacyErasure.findMany({ where: { accountId: t.tenant.accountId } }), (_k, v) => (typeof v === "bigint" ? String(v) : v));
    expect(text).not.toContain(vid);
    expect(text.toLowerCase()).not.toContain(address.toLowerCase());
    const next = await t.api.request().get("/v1/privacy/erasures").query({ ...admin(), cursor: page.body.nextCursor }).set(as(t.tenant.key));
    expect(next.body.data.map((r: { erasureId: string }) => r.erasureId)).not.toContain(first.body.erasureId);
  });

  it("when another account lists, then it sees none of this account's records", async () => {
    await erase({ visitorId: newVisitor() });
    const res = await t.api.request().get("/v1/privacy/erasures").query({ email: t.other.admin.email }).set(as(t.other.key));
    expect(res.body.data.every((r: { actorUserId: number }) => r.actorUserId === t.other.admin.id)).toBe(true);
  });
});

describe("updatePrivacySettings", () => {
  it("when a dataset is new, then it tracks without consent, honours GPC and DNT and keeps data until erased", async () => {
    const ds = t.tenant.datasets[1];
    const res = await t.api.request().get(`/v1/datasets/${ds}/privacy`).query(admin()).set(as(t.tenant.key));
    expect(res.body).toEqual({ datasetId: ds, consentMode: "none", respectDoNotTrack: true, retentionDays: null });
  });

  it("when some fields are changed, then those change and the others stay", async () => {
    const ds = t.tenant.datasets[1];
    const patch = (body: object) => t.api.request().patch(`/v1/datasets/${ds}/privacy`).query(admin()).set(as(t.tenant.key)).send(body);
    expect((await patch({ consentMode: "required", retentionDays: 30 })).body).toEqual({ datasetId: ds, consentMode: "required", respectDoNotTrack: true, retentionDays: 30 });
    expect((await patch({ respectDoNotTrack: false })).body).toEqual({ datasetId: ds, consentMode: "required", respectDoNotTrack: false, retentionDays: 30 });
    expect((await patch({ retentionDays: null, consentMode: "none", respectDoNotTrack: true })).body.retentionDays).toBeNull();
    expect((await patch({ consentMode: "sometimes" })).status).toBe(400);
  });

  it("when the dataset is another account's, then 404 and it is unchanged", async () => {
    const ds = t.other.datasets[0];
    const res = await t.api.request().patch(`/v1/datasets/${ds}/privacy`).query(admin()).set(as(t.tenant.key)).send({ consentMode: "cookieless" });
    expect(res.status).toBe(404);
    const own = await t.api.request().get(`/v1/datasets/${ds}/privacy`).query({ email: t.other.admin.email }).set(as(t.other.key));
    expect(own.body.consentMode).toBe("none");
  });
});

describe("collector consent", () => {
  const privacy = (datasetId: string, body: object) =>
    t.api.request().patch(`/v1/datasets/${datasetId}/privacy`).query(admin()).set(as(t.tenant.key)).send(body).expect(200);
  const newDataset = (name: string) => datasets.create(t.api.services, t.tenant.accountId, t.tenant.admin.email, { name });

  it("when a cookieless dataset's visitor returns the same day, then it is one derived visitor; the next day another, and the past day's salt is deleted", async () => {
    const ds = await newDataset("Cookieless");
    await privacy(ds, { consentMode: "cookieless" });
    const sent = newVisitor();
    await t.collect(ds, ADDRESSES.business, [t.pageView(sent)]);
    await t.collect(ds, ADDRESSES.business, [{ ...t.pageView(sent), visitorId: undefined }]);
    collectorDays += 1;
    try {
      await t.collect(ds, ADDRESSES.business, [t.pageView(sent)]);
    } finally {
      collectorDays -= 1;
    }
    await writer.drain();
    const [lead] = await t.leads(ds);
    const visits = await t.api.request().get(`/v1/leads/${lead!.leadId}/visits`).query({ ...admin(), datasetId: ds }).set(as(t.tenant.key));
    const ids = visits.body.data.map((v: { visitorId: string }) => v.visitorId).reverse();
    expect(ids).toHaveLength(3);
    expect(ids[0]).toMatch(/^cl/);
    expect(ids[1]).toBe(ids[0]);
    expect(ids[2]).not.toBe(ids[0]);
    expect(ids).not.toContain(sent);
    const salts = await t.api.db.prisma.visitorSalt.findMany();
    // the next day's salt was made and today's deleted with it
    expect(salts.map((s) => s.day.toISOString().slice(0, 10))).toEqual([new Date(Date.now() + 86_400_000).toISOString().slice(0, 10)]);
  });

  it("when the browser sends Sec-GPC or DNT, then nothing is queued unless the dataset opted out of honouring them", async () => {
    const ds = await newDataset("Signals");
    const send = (header: string) =>
      t.api.request().post(`/collect?dataset=${ds}`).set("x-forwarded-for", ADDRESSES.business).set("user-agent", BROWSER_UA).set(header, "1").set("content-type", "text/plain")
        .send(JSON.stringify({ events: [t.pageView(newVisitor())] }));
    expect((await send("sec-gpc")).body).toEqual({ received: 1, queued: 0 });
    expect((await send("dnt")).body).toEqual({ received: 1, queued: 0 });
    await privacy(ds, { respectDoNotTrack: false });
    expect((await send("sec-gpc")).body).toEqual({ received: 1, queued: 1 });
  });

  it("when a dataset that uses the cookie gets an event without a visitor id, then the batch is refused whole", async () => {
    const ds = await newDataset("Cookie");
    const res = await t.collect(ds, ADDRESSES.business, [t.pageView(newVisitor()), { ...t.pageView(newVisitor()), visitorId: undefined }]);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("invalid_batch");
    expect(await t.api.db.prisma.ingestQueue.count({ where: { datasetId: ds } })).toBe(0);
  });
});

describe("demo page", () => {
  it("when the dataset requires consent, then /demo shows a consent banner that tells the script; otherwise none", async () => {
    const ds = await datasets.create(t.api.services, t.tenant.accountId, t.tenant.admin.email, { name: "Demo consent" });
    const page = async () => (await t.api.request().get("/demo").query({ dataset: ds }).expect(200)).text;
    expect(await page()).not.toContain('role="dialog"');
    await t.api.request().patch(`/v1/datasets/${ds}/privacy`).query(admin()).set(as(t.tenant.key)).send({ consentMode: "required" }).expect(200);
    const html = await page();
    expect(html).toContain('<div id="consent" role="dialog"');
    expect(html).toContain('<script src="/demo-consent.js"></script>');
    expect((await t.api.request().get("/demo-consent.js").expect(200)).text).toContain('leadIntel("consent", choice[1])');
  });
});
