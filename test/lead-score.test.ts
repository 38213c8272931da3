// The lead score (server/services/lead-score.ts): each component moves it by the documented amount,
// page weights apply at query time, and the answer, `sort=score` and a `score` filter agree.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertLeads, type NewLead } from "../server/services/leads.ts";
import { newLead, where } from "./support/leads.ts";
import { as } from "./support/suite.ts";
import { ADDRESSES, startTracking, type TrackingSuite } from "./support/tracking.ts";
import * as datasets from "../server/services/datasets.ts";

let t: TrackingSuite;
beforeAll(async () => {
  t = await startTracking();
});
afterAll(async () => {
  await t?.close();
});

const DAY = 86_400_000;
let seq = 0;
const visitor = () => `scorevisitor${String(++seq).padStart(4, "0")}${Date.now().toString(36)}`;
const dataset = () => datasets.create(t.api.services, t.tenant.accountId, t.tenant.admin.email, { name: `Score ${++seq}` });
const admin = () => t.tenant.admin.email;

function list(datasetId: string, query: Record<string, string | number> = {}) {
  return t.api.request().get("/v1/leads").query({ email: admin(), datasetId, ...query }).set(as(t.tenant.key));
}
const scores = async (datasetId: string, query: Record<string, string | number> = {}) => {
  const res = await list(datasetId, query);
  expect(res.status).toBe(200);
  return Object.fromEntries(res.body.data.map((l: { leadId: string; score: number }) => [l.leadId, l.score]));
};
const putWeights = (datasetId: string, body: unknown, email = admin()) =>
  t.api.request().put(`/v1/datasets/${datasetId}/page-weights`).query({ email }).set(as(t.tenant.key)).send(body as object);

async function inserted(leads: NewLead[]): Promise<string> {
  const datasetId = await dataset();
  await insertLeads(t.api.services, t.tenant.accountId, datasetId, leads);
  return datasetId;
}

const page = (vid: string, path: string) => t.pageView(vid, `https://www.customer.example${path}?utm_source=x`);

describe("listLeads score", () => {
  it("when leads differ only in their last visit, then recency halves every 7 days", async () => {
    const now = Date.now();
    const ds = await inserted([
      newLead({ leadId: "now", lastVisitAt: new Date(now) }),
      newLead({ leadId: "week", lastVisitAt: new Date(now - 7 * DAY) }),
      newLead({ leadId: "fortnight", lastVisitAt: new Date(now - 14 * DAY + 60_000) }),
      newLead({ leadId: "year", lastVisitAt: new Date(now - 365 * DAY) }),
    ]);
    // 30 * 0.5^(days / 7) + 20 * 1 / 20 (one page view)
    expect(await scores(ds)).toEqual({ now: 31, week: 16, fortnight: 9, year: 1 });
  });

  it("when leads differ only in page views, then frequency adds up to 20 points at 20 views", async () => {
    const old = new Date(Date.now() - 400 * DAY);
    const ds = await inserted([5, 10, 20, 40].map((visitCount) => newLead({ leadId: `v${visitCount}`, visitCount, lastVisitAt: old })));
    expect(await scores(ds)).toEqual({ v5: 5, v10: 10, v20: 20, v40: 20 });
  });

  it("when a lead's visitors view pages, identify themselves and submit forms, then depth, identified visitors and forms add their points", async () => {
    const ds = await dataset();
    await t.settings(ds, { formTracking: true, partialFormTracking: true });
    const [ann, bob] = [visitor(), visitor()];
    // 3 page views of 2 distinct pages (a trailing slash and the query do not make a new page)
    await t.collect(ds, ADDRESSES.business, [page(ann, "/Pricing"), page(ann, "/about"), page(bob, "/about/")]);
    await t.writer.drain();
    const [lead] = await t.leads(ds);
    // recency 30 (just now) + frequency 20 * 3 / 20 + depth 25 * 2 / 10
    expect(lead!.score).toBe(38);

    // a partial form counts for nothing, not even its e-mail address as a submitted form
    await t.collect(ds, ADDRESSES.business, [{ ...t.form(ann, { company: "Apple" }), partial: true }]);
    await t.writer.drain();
    expect((await t.leads(ds))[0]!.score).toBe(38);

    // two visitors give their e-mail address in two submitted forms: + 15 and + 10
    await t.collect(ds, ADDRESSES.business, [t.form(ann, { email: "ann@apple.com" }), t.form(bob, { email: "bob@apple.com" })]);
    await t.writer.drain();
    expect((await t.leads(ds))[0]!.score).toBe(63);
  });

  it("when the dataset weighs /pricing x3, then the next listing counts its past visits three times; weight 0 drops a page", async () => {
    const ds = await dataset();
    const vid = visitor();
    await t.collect(ds, ADDRESSES.business, [page(vid, "/pricing/teams"), page(vid, "/careers"), page(vid, "/blog")]);
    await t.writer.drain();
    const before = (await t.leads(ds))[0]!.score; // 30 + 3 + 25 * 3 / 10 = 40.5 -> 40 or 41 as recency has begun to decay
    expect([40, 41]).toContain(before);
    expect((await putWeights(ds, { weights: [{ pattern: "/PRICING/", weight: 3 }, { pattern: "/careers", weight: 0 }] })).status).toBe(204);
    // 30 + 3 + 25 * (3 + 0 + 1) / 10 = 43
    expect((await t.leads(ds))[0]!.score).toBe(43);
    const got = await t.api.request().get(`/v1/datasets/${ds}/page-weights`).set(as(t.tenant.key));
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ weights: [{ pattern: "/PRICING/", weight: 3 }, { pattern: "/careers", weight: 0 }] });
  });

  it("when a pattern has a wildcard or LIKE characters, then only what it says matches", async () => {
    const ds = await dataset();
    const vid = visitor();
    await t.collect(ds, ADDRESSES.business, [page(vid, "/blog/2025/demo"), page(vid, "/a_b"), page(vid, "/axb")]);
    await t.writer.drain();
    await putWeights(ds, { weights: [{ pattern: "/blog/*/demo", weight: 5 }, { pattern: "/a_b", weight: 2 }] });
    // depth: 5 + 2 + 1 (the underscore is not a wildcard) = 8 -> 25 * 8 / 10 = 20; + 30 + 3
    expect((await t.leads(ds))[0]!.score).toBe(53);
  });
});

describe("listLeads sort and filter by score", () => {
  const now = Date.now();
  const ranked = [
    newLead({ leadId: "a", visitCount: 20, lastVisitAt: new Date(now) }), // 50
    newLead({ leadId: "b", visitCount: 10, lastVisitAt: new Date(now) }), // 40
    newLead({ leadId: "c", visitCount: 10, lastVisitAt: new Date(now - 2 * 365 * DAY) }), // 10
    newLead({ leadId: "d", visitCount: 10, lastVisitAt: new Date(now - 3 * 365 * DAY) }), // 10
    newLead({ leadId: "e", visitCount: 2, lastVisitAt: new Date(now - 7 * DAY) }), // 17
  ];

  it("when sorted by score, then highest first (ties by leadId, descending) across pages", async () => {
    const ds = await inserted(ranked);
    const seen: string[] = [];
    let cursor: string | null | undefined;
    do {
      const res = await list(ds, { sort: "score", limit: 2, ...(cursor ? { cursor } : {}) });
      expect(res.status).toBe(200);
      seen.push(...res.body.data.map((l: { leadId: string }) => l.leadId));
      cursor = res.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(["a", "b", "e", "d", "c"]);
  });

  it("when a score cursor is used without sort=score, then 400", async () => {
    const ds = await inserted([newLead(), newLead(), newLead()]);
    const first = await list(ds, { sort: "score", limit: 1 });
    const res = await list(ds, { cursor: first.body.nextCursor, limit: 1 });
    expect(res.status).toBe(400);
  });

  it("when filtered by score gte, then exactly the leads whose listed score reaches it", async () => {
    const ds = await inserted(ranked);
    const res = await list(ds, { filter: JSON.stringify(where("score", "gte", 17)) });
    expect(res.status).toBe(200);
    // the default order (last visit): a and b visited at the same time, so by leadId descending
    expect(res.body.data.map((l: { leadId: string; score: number }) => [l.leadId, l.score])).toEqual([
      ["b", 40],
      ["a", 50],
      ["e", 17],
    ]);
  });

  it("when a segment filters by score, then its leads are those above the line", async () => {
    const ds = await inserted(ranked);
    const created = await t.api
      .request()
      .post("/v1/segments")
      .query({ email: admin() })
      .set(as(t.tenant.key))
      .send({ datasetId: ds, name: "Hot", filters: where("score", "gte", 40) });
    expect(created.status).toBe(200);
    const res = await list(ds, { segmentId: created.body.id });
    expect(res.status).toBe(200);
    expect(res.body.data.map((l: { leadId: string }) => l.leadId)).toEqual(["b", "a"]);
  });

  it("when a score condition's value is not an integer, then 400 naming it", async () => {
    const ds = await inserted([newLead()]);
    const res = await list(ds, { filter: JSON.stringify(where("score", "gte", "high")) });
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ field: "filter.conditions[0].value" }));
  });
});

describe("setPageWeights", () => {
  it("when a pattern does not start with /, a weight is above 10 or a pattern repeats, then 400 and nothing changes", async () => {
    const ds = await dataset();
    expect((await putWeights(ds, { weights: [{ pattern: "/pricing", weight: 2 }] })).status).toBe(204);
    for (const weights of [[{ pattern: "pricing", weight: 2 }], [{ pattern: "/pricing", weight: 11 }], [{ pattern: "/a", weight: 1 }, { pattern: "/A/", weight: 2 }]]) {
      const res = await putWeights(ds, { weights });
      expect(res.status, JSON.stringify(weights)).toBe(400);
      expect(res.body.details?.[0]?.field).toMatch(/weights/);
    }
    const got = await t.api.request().get(`/v1/datasets/${ds}/page-weights`).set(as(t.tenant.key));
    expect(got.body).toEqual({ weights: [{ pattern: "/pricing", weight: 2 }] });
  });

  it("when the acting user is not an admin, then 403", async () => {
    const ds = await dataset();
    expect((await putWeights(ds, { weights: [] }, t.tenant.member.email)).status).toBe(403);
  });

  it("when the dataset is another account's, then 404 both ways", async () => {
    const ds = await datasets.create(t.api.services, t.other.accountId, t.other.admin.email, { name: "Theirs" });
    expect((await putWeights(ds, { weights: [] })).status).toBe(404);
    expect((await t.api.request().get(`/v1/datasets/${ds}/page-weights`).set(as(t.tenant.key))).status).toBe(404);
  });
});
