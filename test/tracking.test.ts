// The collector (spec/collector.yaml) and what it writes, seen through the partner API: page views
// of an organisation's network become a lead with visits; bots are dropped; ISPs', hosting and mobile
// networks' wait pending (unlisted) for their address's identity; a batch over the limits is refused whole; masking stores no full address.
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { Ajv2020 } from "ajv/dist/2020.js";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ContactProfile } from "../server/contacts/profile.ts";
import { encodedScript } from "../server/tracking/collect/script-response.ts";
import { ADDRESSES, BOT_UA, ONLY_EVIDENCE, startTracking, type TrackingSuite, wiredWriter } from "./support/tracking.ts";
import { eventually } from "./support/eventually.ts";
import { as } from "./support/suite.ts";
import * as contacts from "../server/services/contacts.ts";
import * as credits from "../server/services/credits.ts";
import * as datasets from "../server/services/datasets.ts";

let t: TrackingSuite;
beforeAll(async () => {
  t = await startTracking();
});
afterAll(async () => {
  // no log line holds an address a test sent from (the request log has the path only)
  const sent = Object.values(ADDRESSES);
  expect(t.api.logs.filter((line) => sent.some((ip) => line.includes(ip)))).toEqual([]);
  await t?.close();
});

const profile: ContactProfile = {
  email: "kim.lee@apple-visitor.example",
  fullName: "Kim Lee",
  headline: "Procurement lead",
  languages: [],
  experience: [{ title: "Procurement lead", companyName: "Apple", current: true }],
};

let visitorSeq = 0;
const newVisitor = () => `visitor${String(++visitorSeq).padStart(4, "0")}${Date.now().toString(36)}`;

/** A fresh dataset of the tenant, so that each test sees only its own leads. */
async function dataset(name: string): Promise<string> {
  return datasets.create(t.api.services, t.tenant.accountId, t.tenant.admin.email, { name: `${name} ${visitorSeq++}` });
}

async function visitsOf(datasetId: string, leadId: string) {
  return t.api
    .request()
    .get(`/v1/leads/${leadId}/visits`)
    .query({ email: t.tenant.admin.email, datasetId })
    .set(as(t.tenant.key));
}

describe("collect", () => {
  it("when a business network's visitor views two pages, then one lead with two visits is listed", async () => {
    const ds = await dataset("Pages");
    const vid = newVisitor();
    const res = await t.collect(ds, ADDRESSES.business, [t.pageView(vid), t.pageView(vid, "https://www.customer.example/about")]);
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ received: 2, queued: 2 });
    expect(res.headers["access-control-allow-origin"]).toBe("*");
    const [written] = await t.writer.drain();
    expect(written).toMatchObject({ events: 2, visits: 2, leadsCreated: [{ datasetId: ds }], leadsVisited: [] });
    const leads = await t.leads(ds);
    expect(leads).toHaveLength(1);
    expect(leads[0]).toMatchObject({ organizationName: "Apple Inc.", organizationDomain: "apple.com", visitCount: 2, country: "US", city: "Cupertino" });
    const visits = await visitsOf(ds, leads[0]!.leadId);
    expect(visits.status).toBe(200);
    expect(visits.body.data.map((v: { url: string }) => v.url).sort()).toEqual([
      "https://www.customer.example/about",
      "https://www.customer.example/pricing?utm_source=newsletter",
    ]);
    expect(visits.body.data[0]).toMatchObject({ visitorId: vid, utm: { source: "newsletter" }, networkType: "business", visitor: { email: null, enrichment: null, contact: null } });
  });

  it("when the writer's wake is handed on alone (as main.ts gives it to the collector), then the woken writer writes what was queued", async () => {
    const ds = await dataset("Woken");
    const writer = wiredWriter(t.api, ONLY_EVIDENCE);
    const { wake } = writer;
    try {
      expect((await t.collect(ds, ADDRESSES.business, [t.pageView(newVisitor())])).status).toBe(202);
      wake();
      await eventually(async () => expect(await t.leads(ds)).toMatchObject([{ organizationName: "Apple Inc.", visitCount: 1 }]), { message: "the woken writer wrote the page view" });
    } finally {
      await writer.stop();
    }
  });

  it("when the same organisation comes back in a later batch, then its lead is visited, not created again", async () => {
    const ds = await dataset("Return");
    await t.collect(ds, ADDRESSES.education, [t.pageView(newVisitor())]);
    await t.writer.drain();
    await t.collect(ds, ADDRESSES.education, [t.pageView(newVisitor())]);
    const [second] = await t.writer.drain();
    expect(second!.leadsCreated).toEqual([]);
    expect(second!.leadsVisited).toHaveLength(1);
    expect(await t.leads(ds)).toMatchObject([{ organizationName: "Massachusetts Institute of Technology", organizationDomain: "mit.edu", visitCount: 2 }]);
  });

  it("when a writer has two transactions and a backlog of two organisations' visitors, then batches overlap on PostgreSQL and every visit is counted once", async () => {
    const ds = await dataset("Lanes");
    const requests = 12;
    for (let i = 0; i < requests; i++) {
      const from = i % 2 ? ADDRESSES.education : ADDRESSES.business;
      await t.collect(ds, from, [t.pageView(newVisitor()), t.pageView(newVisitor(), "https://www.customer.example/about")]);
    }
    let open = 0;
    let mostOpen = 0;
    const writer = wiredWriter(t.api, {
      ...ONLY_EVIDENCE,
      batchSize: 2, // a request's batch per transaction
      transactions: 2,
      onIngested: async () => {
        mostOpen = Math.max(mostOpen, ++open);
        await new Promise((resolve) => setTimeout(resolve, 30));
        open--;
      },
    });
    const results = await writer.drain();
    expect(results.reduce((n, r) => n + r.visits, 0)).toBe(requests * 2);
    // the embedded database runs one transaction at a time (server/db/embedded-server.ts)
    expect(mostOpen).toBe(t.api.db.kind === "postgres" ? 2 : 1);
    expect((await t.leads(ds)).map((l) => l.visitCount)).toEqual([requests, requests]);
  });

  it("when the user agent is a bot, then nothing is written", async () => {
    const ds = await dataset("Bots");
    const res = await t.collect(ds, ADDRESSES.business, [t.pageView(newVisitor())], BOT_UA);
    expect(res.status).toBe(202);
    expect(res.body.queued).toBe(0);
    expect(await t.writer.drain()).toEqual([]);
    expect(await t.leads(ds)).toEqual([]);
    expect(await t.api.db.prisma.visit.count({ where: { datasetId: ds } })).toBe(0);
  });

  it.each([
    ["an ISP", ADDRESSES.isp],
    ["a hosting provider", ADDRESSES.hosting],
    ["a mobile carrier", ADDRESSES.mobile],
    ["no network (private)", "10.20.30.40"],
  ])("when the visitor is on %s's network, then the page view waits pending, unlisted: no lead, no visitor", async (_name, ip) => {
    const ds = await dataset("Pending");
    const res = await t.collect(ds, ip, [t.pageView(newVisitor())]);
    expect(res.status).toBe(202);
    expect(res.body.queued).toBe(1);
    await t.writer.drain();
    expect(await t.leads(ds)).toEqual([]);
    expect(await t.api.db.prisma.visitor.count({ where: { datasetId: ds } })).toBe(0);
    expect(await t.api.db.prisma.pendingEvent.count({ where: { datasetId: ds } })).toBe(1);
  });

  it("when the batch has more events than the limit, then it is refused whole and nothing is queued", async () => {
    const ds = await dataset("Limits");
    const vid = newVisitor();
    const before = await t.count("IngestQueue");
    const res = await t.collect(ds, ADDRESSES.business, Array.from({ length: 51 }, () => t.pageView(vid)));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: "invalid_batch", details: [{ location: "body", field: "events" }] });
    expect(await t.count("IngestQueue")).toBe(before);
  });

  it("when one event of a batch is malformed, then the whole batch is refused", async () => {
    const ds = await dataset("Malformed");
    const vid = newVisitor();
    const res = await t.collect(ds, ADDRESSES.business, [t.pageView(vid), { type: "pageview", visitorId: vid, url: "x".repeat(3000) }]);
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([expect.objectContaining({ field: "events.1.url" })]);
    await t.writer.drain();
    expect(await t.leads(ds)).toEqual([]);
  });

  it("when the body is not JSON, then 400 malformed_json", async () => {
    const ds = await dataset("Json");
    const res = await t.api.request().post(`/collect?dataset=${ds}`).set("x-forwarded-for", ADDRESSES.business).set("content-type", "text/plain").send("{nope");
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("malformed_json");
  });

  it("when the body is larger than 64 KiB, then 413 and nothing is queued", async () => {
    const ds = await dataset("Large");
    const before = await t.count("IngestQueue");
    const res = await t.api
      .request()
      .post(`/collect?dataset=${ds}`)
      .set("x-forwarded-for", ADDRESSES.business)
      .set("content-type", "text/plain")
      .send(JSON.stringify({ events: [{ type: "pageview", visitorId: newVisitor(), url: "https://a.example/", title: "x".repeat(70_000) }] }));
    expect(res.status).toBe(413);
    expect(await t.count("IngestQueue")).toBe(before);
  });

  it("when the dataset does not exist or is not named, then 404 unknown_dataset or 400", async () => {
    const unknown = await t.collect("ds_doesnotexist", ADDRESSES.business, [t.pageView(newVisitor())]);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe("unknown_dataset");
    const unnamed = await t.api.request().post("/collect").set("content-type", "text/plain").send(JSON.stringify({ events: [t.pageView(newVisitor())] }));
    expect(unnamed.status).toBe(400);
  });

  it("when the dataset allows masking, then no table holds the full address (IPv4 and IPv6)", async () => {
    const fresh = await startTracking(); // its own database: the dump below sees only this test's rows
    try {
      const ds = fresh.tenant.datasets[0];
      await fresh.settings(ds, { allowIpMasking: true });
      await fresh.collect(ds, ADDRESSES.business, [fresh.pageView(newVisitor())]);
      await fresh.collect(ds, ADDRESSES.businessV6, [fresh.pageView(newVisitor())]);
      const full = async () => {
        const prisma = fresh.api.db.prisma;
        const tables = await prisma.$queryRaw<{ name: string }[]>`
          SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`;
        const found: string[] = [];
        for (const { name } of tables) {
          const rows = await prisma.$queryRawUnsafe<{ row: string }[]>(`SELECT t::text AS row FROM "${name}" t`);
          found.push(...rows.map((r) => r.row).filter((row) => row.includes(ADDRESSES.business) || row.includes(ADDRESSES.businessV6)));
        }
        return found;
      };
      expect(await fresh.count("IngestQueue")).toBe(2);
      expect(await full()).toEqual([]); // the queue already holds the masked form
      await fresh.writer.drain();
      const visits = await fresh.api.db.prisma.visit.findMany({ select: { ip: true } });
      expect(visits.map((v) => v.ip).sort()).toEqual(["17.253.144.0", "2a03:2880:f10c::"]);
      expect(await full()).toEqual([]);
    } finally {
      await fresh.close();
    }
  });

  it("when the dataset does not mask, then the visit keeps the address as received", async () => {
    const ds = await dataset("Unmasked");
    await t.collect(ds, ADDRESSES.business, [t.pageView(newVisitor())]);
    await t.writer.drain();
    expect(await t.api.db.prisma.visit.findFirst({ where: { datasetId: ds }, select: { ip: true } })).toEqual({ ip: ADDRESSES.business });
  });

  it("when the pixel is requested, then the page view is queued and a GIF is answered", async () => {
    const ds = await dataset("Pixel");
    const res = await t.api
      .request()
      .get("/collect")
      .query({ dataset: ds, v: newVisitor(), u: "https://www.customer.example/", t: "Home" })
      .set("x-forwarded-for", ADDRESSES.business);
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("image/gif");
    await t.writer.drain();
    expect(await t.leads(ds)).toMatchObject([{ organizationName: "Apple Inc.", visitCount: 1 }]);
  });

  it("when an address sends more requests than its per-minute limit, then 429 with Retry-After", async () => {
    const limited = await startTracking({ ipRequestsPerMinute: 2 });
    try {
      const ds = limited.tenant.datasets[0];
      const send = () => limited.collect(ds, "17.253.144.11", [limited.pageView(newVisitor())]);
      expect((await send()).status).toBe(202);
      expect((await send()).status).toBe(202);
      const third = await send();
      expect(third.status).toBe(429);
      expect(Number(third.headers["retry-after"])).toBeGreaterThan(0);
      expect((await limited.collect(ds, "17.253.144.12", [limited.pageView(newVisitor())])).status).toBe(202);
    } finally {
      await limited.close();
    }
  });

  it("when a dataset sends more events than its per-minute limit, then 429 whatever the address", async () => {
    const limited = await startTracking({ datasetEventsPerMinute: 3 });
    try {
      const ds = limited.tenant.datasets[0];
      const vid = newVisitor();
      expect((await limited.collect(ds, "17.253.144.11", [limited.pageView(vid), limited.pageView(vid)])).status).toBe(202);
      expect((await limited.collect(ds, "17.253.144.12", [limited.pageView(vid), limited.pageView(vid)])).status).toBe(429);
    } finally {
      await limited.close();
    }
  });

  it("when a preflight asks, then POST is allowed from any origin", async () => {
    const res = await t.api.request().options("/collect").set("origin", "https://www.customer.example").set("access-control-request-method", "POST");
    expect(res.status).toBe(204);
    expect(res.headers["access-control-allow-origin"]).toBe("*");
    expect(res.headers["access-control-allow-methods"]).toContain("POST");
  });
});

describe("collect (forms)", () => {
  it("when form tracking is off, then a form submission is not recorded", async () => {
    const ds = await dataset("FormsOff");
    const vid = newVisitor();
    const res = await t.collect(ds, ADDRESSES.business, [t.pageView(vid), t.form(vid, { email: "someone@apple-visitor.example" })]);
    expect(res.body).toEqual({ received: 2, queued: 1 });
    await t.writer.drain();
    expect(await t.api.db.prisma.formSubmission.count({ where: { datasetId: ds } })).toBe(0);
    expect(await t.api.db.prisma.visitor.findFirst({ where: { datasetId: ds }, select: { email: true } })).toEqual({ email: null });
  });

  it("when a form carries card numbers or secrets, then those fields are never stored", async () => {
    const ds = await dataset("Sensitive");
    await t.settings(ds, { formTracking: true });
    const vid = newVisitor();
    await t.collect(ds, ADDRESSES.business, [
      t.pageView(vid),
      t.form(vid, { email: "x@apple-visitor.example", company: "Apple", note: "4111 1111 1111 1111", password: "hunter2", cvc: "123" }),
    ]);
    await t.writer.drain();
    const form = await t.api.db.prisma.formSubmission.findFirst({ where: { datasetId: ds } });
    expect(form?.fields).toEqual({ email: "x@apple-visitor.example", company: "Apple" });
  });

  it("when a partial form arrives and partialFormTracking is off, then it is dropped", async () => {
    const ds = await dataset("Partial");
    await t.settings(ds, { formTracking: true });
    const vid = newVisitor();
    const res = await t.collect(ds, ADDRESSES.business, [{ ...t.form(vid, { company: "Apple" }), partial: true }]);
    expect(res.body.queued).toBe(0);
    await t.settings(ds, { formTracking: true, partialFormTracking: true });
    expect((await t.collect(ds, ADDRESSES.business, [{ ...t.form(vid, { company: "Apple" }), partial: true }])).body.queued).toBe(1);
  });

  it("when contactEnrichment is on and the address has a profile, then the visitor is enriched and 1 credit charged", async () => {
    await contacts.upsertMany(t.api.services, [profile]);
    const ds = await dataset("Enriched");
    await t.settings(ds, { formTracking: true, contactEnrichment: true });
    const vid = newVisitor();
    await t.collect(ds, ADDRESSES.business, [t.pageView(vid), t.form(vid, { email: " Kim.Lee@apple-visitor.example " })]);
    await t.writer.drain();
    const [lead] = await t.leads(ds);
    const visits = await visitsOf(ds, lead!.leadId);
    expect(visits.body.data[0].visitor).toEqual({ email: profile.email, enrichment: "enriched", contact: profile });
    const ledger = await t.api.db.prisma.creditLedgerEntry.findMany({ where: { datasetId: ds } });
    expect(ledger).toMatchObject([{ operation: "formEnrichment", credits: 1, keyId: "tracking" }]);
    // the same address again charges nothing more
    await t.collect(ds, ADDRESSES.business, [t.form(vid, { email: profile.email })]);
    await t.writer.drain();
    expect(await t.api.db.prisma.creditLedgerEntry.count({ where: { datasetId: ds } })).toBe(1);
  });

  it("when a submitted form gave the visitor's address, then a partial form with another one (in the same batch and later) neither replaces it nor restarts its enrichment; a partial form alone sets none", async () => {
    const jane = { ...profile, email: "jane.doe@example.com" };
    await contacts.upsertMany(t.api.services, [jane]);
    const ds = await dataset("Identity");
    await t.settings(ds, { formTracking: true, partialFormTracking: true, contactEnrichment: true });
    const [vid, other] = [newVisitor(), newVisitor()];
    const half = { ...t.form(vid, { email: "half@filled.example" }), partial: true };
    await t.collect(ds, ADDRESSES.business, [t.pageView(vid), t.form(vid, { email: "Jane.Doe@Example.com" }), half]);
    await t.writer.drain();
    const visitor = () => t.api.db.prisma.visitor.findUnique({ where: { datasetId_id: { datasetId: ds, id: vid } }, select: { email: true, enrichment: true } });
    expect(await visitor()).toEqual({ email: "jane.doe@example.com", enrichment: "enriched" });

    await t.collect(ds, ADDRESSES.business, [half]);
    await t.writer.drain();
    await t.collect(ds, ADDRESSES.business, [t.pageView(vid), { ...half, fields: { email: "other-half@filled.example" } }]);
    await t.writer.drain();
    expect(await visitor()).toEqual({ email: "jane.doe@example.com", enrichment: "enriched" });
    expect(await t.api.db.prisma.creditLedgerEntry.count({ where: { datasetId: ds } })).toBe(1);
    // the partial forms are kept as such
    expect(await t.api.db.prisma.formSubmission.count({ where: { datasetId: ds, visitorId: vid, partial: true } })).toBe(3);

    await t.collect(ds, ADDRESSES.business, [t.pageView(other), { ...t.form(other, { email: "unsent@filled.example" }), partial: true }]);
    await t.writer.drain();
    expect(await t.api.db.prisma.visitor.findUnique({ where: { datasetId_id: { datasetId: ds, id: other } }, select: { email: true, enrichment: true } })).toEqual({ email: null, enrichment: null });
  });

  it("when contactEnrichment is off, then the address is attached but not enriched nor charged", async () => {
    await contacts.upsertMany(t.api.services, [profile]);
    const ds = await dataset("NotEnriched");
    await t.settings(ds, { formTracking: true });
    const vid = newVisitor();
    await t.collect(ds, ADDRESSES.business, [t.pageView(vid), t.form(vid, { email: profile.email })]);
    await t.writer.drain();
    const [lead] = await t.leads(ds);
    expect((await visitsOf(ds, lead!.leadId)).body.data[0].visitor).toEqual({ email: profile.email, enrichment: null, contact: null });
    expect(await t.api.db.prisma.creditLedgerEntry.count({ where: { datasetId: ds } })).toBe(0);
  });

  it("when the address has no profile, then not_found and nothing is charged", async () => {
    const ds = await dataset("NoProfile");
    await t.settings(ds, { formTracking: true, contactEnrichment: true });
    const vid = newVisitor();
    await t.collect(ds, ADDRESSES.business, [t.pageView(vid), t.form(vid, { email: "nobody@apple-visitor.example" })]);
    await t.writer.drain();
    const [lead] = await t.leads(ds);
    expect((await visitsOf(ds, lead!.leadId)).body.data[0].visitor).toMatchObject({ enrichment: "not_found", contact: null });
    expect(await t.api.db.prisma.creditLedgerEntry.count({ where: { datasetId: ds } })).toBe(0);
  });

  it("when the dataset has no credit left, then enrichment is skipped and marked, and the visit is recorded", async () => {
    await contacts.upsertMany(t.api.services, [profile]);
    const ds = await dataset("Broke");
    await credits.setMonthlyLimit(t.api.services, ds, 0);
    await t.settings(ds, { formTracking: true, contactEnrichment: true });
    const vid = newVisitor();
    await t.collect(ds, ADDRESSES.business, [t.pageView(vid), t.form(vid, { email: profile.email })]);
    await t.writer.drain();
    const [lead] = await t.leads(ds);
    expect(lead!.visitCount).toBe(1);
    expect((await visitsOf(ds, lead!.leadId)).body.data[0].visitor).toEqual({ email: profile.email, enrichment: "no_credit", contact: null });
    expect(await t.api.db.prisma.creditLedgerEntry.count({ where: { datasetId: ds } })).toBe(0);
  });
});

describe("listLeadVisits", () => {
  it("when an exclusion rule hides the organisation, then its visits are recorded but never listed", async () => {
    const ds = await dataset("Excluded");
    const save = await t.api
      .request()
      .post("/v1/dataset-exclusion")
      .set(as(t.tenant.key))
      .send({ datasetId: ds, type: "organizationDomain", data: "Apple.com" });
    expect(save.status).toBe(204);
    await t.collect(ds, ADDRESSES.business, [t.pageView(newVisitor()), t.pageView(newVisitor())]);
    await t.writer.drain();
    expect(await t.api.db.prisma.visit.count({ where: { datasetId: ds } })).toBe(2);
    expect(await t.leads(ds)).toEqual([]);
    const leadId = (await t.api.db.prisma.lead.findFirstOrThrow({ where: { datasetId: ds } })).id;
    const visits = await visitsOf(ds, leadId);
    expect(visits.status).toBe(404);
    expect(visits.body.error).toBe("lead_not_found");
    const domain = await t.api.request().get("/v1/domain-lookup").query({ domain: "apple.com" }).set(as(t.tenant.key));
    expect(domain.body.leads.map((l: { datasetId: string }) => l.datasetId)).not.toContain(ds);
  });

  it("when a use_id rule names a visitor id, then that visitor's visits are hidden and the lead stays", async () => {
    const ds = await dataset("UseId");
    const [hidden, shown] = [newVisitor(), newVisitor()];
    await t.collect(ds, ADDRESSES.business, [t.pageView(hidden), t.pageView(shown)]);
    await t.writer.drain();
    await t.api.request().post("/v1/dataset-exclusion").set(as(t.tenant.key)).send({ datasetId: ds, type: "use_id", data: hidden }).expect(204);
    const [lead] = await t.leads(ds);
    expect(lead!.visitCount).toBe(2);
    const visits = await visitsOf(ds, lead!.leadId);
    expect(visits.body.data.map((v: { visitorId: string }) => v.visitorId)).toEqual([shown]);
  });

  it("when there are more visits than the limit, then the pages follow each other without repeats", async () => {
    const ds = await dataset("Paged");
    const vid = newVisitor();
    await t.collect(ds, ADDRESSES.business, Array.from({ length: 5 }, (_, i) => t.pageView(vid, `https://www.customer.example/p${i}`)));
    await t.writer.drain();
    const [lead] = await t.leads(ds);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await t.api
        .request()
        .get(`/v1/leads/${lead!.leadId}/visits`)
        .query({ email: t.tenant.admin.email, datasetId: ds, limit: 2, ...(cursor && { cursor }) })
        .set(as(t.tenant.key));
      expect(page.status).toBe(200);
      seen.push(...page.body.data.map((v: { visitId: string }) => v.visitId));
      cursor = page.body.nextCursor ?? undefined;
    } while (cursor);
    expect(new Set(seen).size).toBe(5);
  });

  it("when the member cannot reach the dataset or the lead is unknown, then 403 or 404", async () => {
    const forbidden = await t.api
      .request()
      .get("/v1/leads/org_x/visits")
      .query({ email: t.tenant.member.email, datasetId: t.tenant.datasets[1] })
      .set(as(t.tenant.key));
    expect(forbidden.status).toBe(403);
    const unknown = await visitsOf(t.tenant.datasets[0], "org_unknown");
    expect(unknown.status).toBe(404);
    const bad = await t.api.request().get("/v1/leads/org_x/visits").query({ email: t.tenant.admin.email, datasetId: t.tenant.datasets[0], cursor: "nope" }).set(as(t.tenant.key));
    expect(bad.status).toBe(400);
    const anonymous = await t.api.request().get("/v1/leads/org_x/visits").query({ email: t.tenant.admin.email, datasetId: t.tenant.datasets[0] });
    expect(anonymous.status).toBe(401);
  });
});

describe("lookupIp", () => {
  it.each([
    [ADDRESSES.business, { asn: 714, organizationName: "Apple Inc.", organizationDomain: "apple.com", networkType: "business", networkTypeSource: "rule", country: "US", city: "Cupertino" }],
    [ADDRESSES.isp, { asn: 7922, networkType: "isp", networkTypeSource: "curated", organizationDomain: null }],
    [ADDRESSES.hosting, { asn: 15169, networkType: "hosting", networkTypeSource: "curated" }],
    [ADDRESSES.businessV6, { asn: 32934, networkType: "business", networkTypeSource: "rule", organizationDomain: "facebook.com" }],
  ])("when %s is looked up, then its network answers", async (ip, expected) => {
    const res = await t.api.request().get("/v1/ip-lookup").query({ ip }).set(as(t.tenant.key));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ip, ...expected });
  });

  it("when the address is private or not an address, then 404 or 400, and nothing is charged", async () => {
    const ledger = await t.count("CreditLedgerEntry");
    expect((await t.api.request().get("/v1/ip-lookup").query({ ip: "192.168.1.1" }).set(as(t.tenant.key))).status).toBe(404);
    expect((await t.api.request().get("/v1/ip-lookup").query({ ip: "not-an-ip" }).set(as(t.tenant.key))).status).toBe(400);
    expect((await t.api.request().get("/v1/ip-lookup").query({ ip: ADDRESSES.business })).status).toBe(401);
    expect(await t.count("CreditLedgerEntry")).toBe(ledger);
  });
});

describe("lookupDomain", () => {
  it("when the domain is a curated organisation with leads, then both answer", async () => {
    const ds = await dataset("Domain");
    await t.collect(ds, ADDRESSES.business, [t.pageView(newVisitor())]);
    await t.writer.drain();
    const res = await t.api.request().get("/v1/domain-lookup").query({ domain: "APPLE.com." }).set(as(t.tenant.key));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ domain: "apple.com", organizationName: "Apple Inc.", country: "US", asns: [714] });
    expect(res.body.leads).toContainEqual(expect.objectContaining({ datasetId: ds, organizationName: "Apple Inc.", visitCount: 1 }));
    // another account sees the organisation, never this account's leads
    const other = await t.api.request().get("/v1/domain-lookup").query({ domain: "apple.com" }).set(as(t.other.key));
    expect(other.body.leads).toEqual([]);
  });

  it("when nothing is known of the domain, then 404; when it is not a host name, then 400", async () => {
    expect((await t.api.request().get("/v1/domain-lookup").query({ domain: "unknown-company.example" }).set(as(t.tenant.key))).status).toBe(404);
    expect((await t.api.request().get("/v1/domain-lookup").query({ domain: "not a domain" }).set(as(t.tenant.key))).status).toBe(400);
  });
});

describe("getTrackingScript", () => {
  it("when the script is fetched, then it carries the dataset's settings, may be cached briefly and is under 4 KB gzipped", async () => {
    const ds = await dataset("Script");
    await t.settings(ds, { formTracking: true, partialFormTracking: true });
    const res = await t.api.request().get("/t.js").query({ dataset: ds });
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^application\/javascript/);
    expect(res.headers["cache-control"]).toMatch(/^public, max-age=\d+$/);
    expect(res.headers["access-control-allow-origin"]).toBe("*");
    expect(res.headers["cross-origin-resource-policy"]).toBe("cross-origin");
    expect(res.text).toContain(JSON.stringify({ dataset: ds, formTracking: true, partialFormTracking: true, formInputAttribute: "name" }).slice(0, -1));
    expect(res.text).toContain('"consentMode":"none","respectDoNotTrack":true');
    expect(gzipSync(res.text).length).toBeLessThanOrEqual(4096);
    // a settings change reaches the script (here at once: the tests' cache time is 0)
    await t.settings(ds, { formTracking: false });
    expect((await t.api.request().get("/t.js").query({ dataset: ds })).text).toContain('"formTracking":false');
  });

  it("when the browser accepts br or gzip, then the script comes compressed once per script, with a strong ETag per encoding, Vary, and a 304 to If-None-Match", async () => {
    const ds = await dataset("Compressed");
    const fetchScript = (acceptEncoding: string, ifNoneMatch?: string) => {
      const request = t.api.request().get("/t.js").query({ dataset: ds }).set("accept-encoding", acceptEncoding);
      return ifNoneMatch ? request.set("if-none-match", ifNoneMatch) : request;
    };
    const plain = await fetchScript("identity");
    expect(plain.headers["content-encoding"]).toBeUndefined();
    const [gzip, br] = [await fetchScript("gzip, deflate"), await fetchScript("gzip, deflate, br, zstd")];
    expect([gzip.headers["content-encoding"], br.headers["content-encoding"]]).toEqual(["gzip", "br"]);
    // what was sent, decoded by the client, is the script; the bytes on the wire are about a third
    for (const res of [gzip, br]) {
      expect(res.text).toBe(plain.text);
      expect(Number(res.headers["content-length"])).toBeLessThan(Buffer.byteLength(plain.text) / 2);
      expect(res.headers.vary).toMatch(/\bAccept-Encoding\b/);
      expect(res.headers["cache-control"]).toMatch(/^public, max-age=\d+$/);
    }
    expect(await fetchScript("br;q=0, gzip").then((res) => res.headers["content-encoding"])).toBe("gzip");
    // strong tags, one per representation
    const tags = [plain, gzip, br].map((res) => res.headers.etag as string);
    expect(tags).toEqual([expect.stringMatching(/^"[\w-]+"$/), `${tags[0]!.slice(0, -1)}-gzip"`, `${tags[0]!.slice(0, -1)}-br"`]);
    const unchanged = await fetchScript("gzip", tags[1]);
    expect({ status: unchanged.status, etag: unchanged.headers.etag, body: unchanged.text ?? "", cors: unchanged.headers["access-control-allow-origin"] }).toEqual({ status: 304, etag: tags[1], body: "", cors: "*" });
    expect((await fetchScript("br", tags[1])).status).toBe(200); // another representation
    // the same script is compressed once; a settings change is a new script with a new tag
    expect(encodedScript(plain.text)).toBe(encodedScript(plain.text));
    await t.settings(ds, { formTracking: false });
    const changed = await fetchScript("gzip", tags[1]);
    expect(changed.status).toBe(200);
    expect(changed.headers.etag).not.toBe(tags[1]);
  });

  it("when fetched on an active custom tracking domain, then that domain's dataset is served without ?dataset=", async () => {
    const ds = await dataset("Ctd");
    await t.api.db.prisma.trackingDomain.create({ data: { accountId: t.tenant.accountId, datasetId: ds, domain: "t.tracked-site.example", state: "active" } });
    await t.api.db.prisma.trackingDomain.create({ data: { accountId: t.tenant.accountId, datasetId: await dataset("CtdPending"), domain: "t.pending-site.example", state: "pending_dns" } });
    const res = await t.api.request().get("/t.js").set("host", "T.Tracked-Site.example");
    expect(res.status).toBe(200);
    expect(res.text).toContain(`"dataset":"${ds}"`);
    expect((await t.api.request().get("/t.js").set("host", "t.pending-site.example")).status).toBe(400);
    expect((await t.api.request().get("/t.js").query({ dataset: t.tenant.datasets[0] }).set("host", "t.tracked-site.example")).status).toBe(400);
    // and the collector takes the domain's dataset the same way
    const sent = await t.api
      .request()
      .post("/collect")
      .set("host", "t.tracked-site.example")
      .set("x-forwarded-for", ADDRESSES.business)
      .set("content-type", "application/json")
      .send({ events: [t.pageView(newVisitor())] });
    expect(sent.status).toBe(202);
    await t.writer.drain();
    expect(await t.leads(ds)).toMatchObject([{ organizationName: "Apple Inc." }]);
  });

  it("when the dataset is unknown, then 404", async () => {
    expect((await t.api.request().get("/t.js").query({ dataset: "ds_nothere" })).status).toBe(404);
  });
});

describe("demo page", () => {
  it("when /demo is opened, then it loads the script of the dataset and links its second page", async () => {
    const ds = t.tenant.datasets[0];
    const res = await t.api.request().get("/demo").query({ dataset: ds });
    expect(res.status).toBe(200);
    expect(res.text).toContain(`<script src="/t.js?dataset=${ds}" async></script>`);
    expect(res.text).toContain("page=2");
    expect(res.text).toContain("db-ip.com");
    expect(res.text).toContain("Headless and automated browsers");
    expect(res.text).not.toContain("bot-warning");
  });

  it("when /demo is opened by a headless browser, then the page says that its visit records nothing", async () => {
    const headless = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0.0.0 Safari/537.36";
    const res = await t.api.request().get("/demo").query({ dataset: t.tenant.datasets[0] }).set("user-agent", headless);
    expect(res.status).toBe(200);
    expect(res.text).toContain("bot-warning");
  });
});

describe("spec/collector.yaml", () => {
  it("when the collector answers, then its bodies match the collector's document", async () => {
    const doc = parse(readFileSync(new URL("../spec/collector.yaml", import.meta.url), "utf8")) as { components: { schemas: object } };
    const ajv = new Ajv2020({ strict: false });
    ajv.addSchema({ $id: "collector", components: doc.components });
    const check = (schema: string, body: unknown) => expect(ajv.validate(`collector#/components/schemas/${schema}`, body), JSON.stringify(ajv.errors)).toBe(true);
    const ds = await dataset("Spec");
    const batch = { events: [t.pageView(newVisitor())] };
    check("Batch", batch);
    check("Accepted", (await t.collect(ds, ADDRESSES.business, batch.events)).body);
    check("Error", (await t.collect(ds, ADDRESSES.business, [])).body);
    check("Error", (await t.collect("ds_nothere", ADDRESSES.business, batch.events)).body);
    expect(ajv.validate("collector#/components/schemas/Batch", { events: [{ ...t.pageView(newVisitor()), extra: 1 }] })).toBe(false);
  });
});
