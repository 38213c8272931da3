// LeadOperation: updateLeadTags, assignLead.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestApi } from "./support/api.ts";
import { newLead } from "./support/leads.ts";
import { type Tenant, uniqueEmail } from "./support/tenants.ts";
import { as, startWithTenants } from "./support/suite.ts";
import { insertLeads } from "../server/services/leads.ts";
import * as users from "../server/services/users.ts";

let api: TestApi;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => ({ api, tenant, other } = await startWithTenants()));
afterAll(() => api?.close());

/** A lead inserted as tracking would; returns its id. */
async function leadIn(t: Tenant, datasetId: string, fields: Parameters<typeof newLead>[0] = {}): Promise<string> {
  const lead = newLead(fields);
  await insertLeads(api.services, t.accountId, datasetId, [lead]);
  return lead.leadId;
}

/** The lead's tags and assignee as listLeads answers the admin of the dataset's account. */
async function stored(datasetId: string, leadId: string): Promise<{ tags: string[]; assigneeUserId: number | null } | undefined> {
  const t = other.datasets.includes(datasetId) ? other : tenant;
  let cursor: string | undefined;
  do {
    const query = { email: t.admin.email, datasetId, limit: 500, ...(cursor ? { cursor } : {}) };
    const res = await api.request().get("/v1/leads").query(query).set(as(t.key));
    expect(res.status).toBe(200);
    const lead = res.body.data.find((l: { leadId: string }) => l.leadId === leadId);
    if (lead) return { tags: lead.tags, assigneeUserId: lead.assigneeUserId };
    cursor = res.body.nextCursor ?? undefined;
  } while (cursor);
  return undefined;
}

describe("updateLeadTags", () => {
  const put = (t: Tenant, body: object) => api.request().put("/v1/management/lead-tags").set(as(t.key)).send(body);

  it("when tags are added and removed, then 204 and the lead has the normalised result in order", async () => {
    const leadId = await leadIn(tenant, tenant.datasets[0], { tags: ["cold", "vip"] });
    const res = await put(tenant, { datasetId: tenant.datasets[0], leadId, add: ["Hot", "  New   Lead "], remove: ["COLD"] });
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    expect(await stored(tenant.datasets[0], leadId)).toMatchObject({ tags: ["hot", "new lead", "vip"] });
  });

  it("when the same request is repeated, then the tags stay the same (no duplicates, absent tags ignored)", async () => {
    const leadId = await leadIn(tenant, tenant.datasets[0], { tags: ["vip"] });
    const body = { datasetId: tenant.datasets[0], leadId, add: ["hot", "HOT ", "vip"], remove: ["never-there"] };
    expect((await put(tenant, body)).status).toBe(204);
    expect((await put(tenant, body)).status).toBe(204);
    expect(await stored(tenant.datasets[0], leadId)).toMatchObject({ tags: ["hot", "vip"] });
  });

  it("when only remove is given, then only those tags go", async () => {
    const leadId = await leadIn(tenant, tenant.datasets[0], { tags: ["a", "b", "c"] });
    expect((await put(tenant, { datasetId: tenant.datasets[0], leadId, remove: ["b"] })).status).toBe(204);
    expect(await stored(tenant.datasets[0], leadId)).toMatchObject({ tags: ["a", "c"] });
  });

  it("when many requests add different tags to one lead at once, then none of them is lost", async () => {
    const leadId = await leadIn(tenant, tenant.datasets[0]);
    const tags = Array.from({ length: 10 }, (_, i) => `tag-${i}`);
    const responses = await Promise.all(tags.map((tag) => put(tenant, { datasetId: tenant.datasets[0], leadId, add: [tag] })));
    expect(responses.map((r) => r.status)).toEqual(tags.map(() => 204));
    expect(await stored(tenant.datasets[0], leadId)).toMatchObject({ tags: [...tags].sort() });
  });

  it("when a tag is both added and removed (after normalisation), then 400 and nothing changes", async () => {
    const leadId = await leadIn(tenant, tenant.datasets[0], { tags: ["vip"] });
    const res = await put(tenant, { datasetId: tenant.datasets[0], leadId, add: ["Hot"], remove: ["hot "] });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: "validation_failed",
      message: expect.any(String),
      details: [{ location: "body", field: "remove", message: expect.stringContaining("hot") }],
    });
    expect(await stored(tenant.datasets[0], leadId)).toMatchObject({ tags: ["vip"] });
  });

  it("when a tag grows beyond 64 characters once lower-cased, then 400 naming it", async () => {
    const leadId = await leadIn(tenant, tenant.datasets[0]);
    const res = await put(tenant, { datasetId: tenant.datasets[0], leadId, add: ["ok", "İ".repeat(64)] });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ location: "body", field: "add[1]", message: expect.any(String) }]);
    expect(await stored(tenant.datasets[0], leadId)).toMatchObject({ tags: [] });
  });

  it.each([
    ["a tag is longer than 64 characters", { add: ["x".repeat(65)] }, "add"],
    ["a tag is blank", { add: ["   "] }, "add"],
    ["more than 50 tags are added", { add: Array.from({ length: 51 }, (_, i) => `t${i}`) }, "add"],
    ["remove has duplicates", { remove: ["a", "a"] }, "remove"],
  ])("when %s, then 400 naming the field", async (_case, change, field) => {
    const leadId = await leadIn(tenant, tenant.datasets[0]);
    const res = await put(tenant, { datasetId: tenant.datasets[0], leadId, ...change });
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "body", field: expect.stringMatching(new RegExp(`^${field}`)) }));
  });

  it("when the lead would get more than 100 tags, then 409 and nothing changes; up to 100 is fine", async () => {
    const tags = Array.from({ length: 99 }, (_, i) => `t${String(i).padStart(3, "0")}`);
    const leadId = await leadIn(tenant, tenant.datasets[0], { tags });
    const tooMany = await put(tenant, { datasetId: tenant.datasets[0], leadId, add: ["x1", "x2"] });
    expect(tooMany.status).toBe(409);
    expect(tooMany.body).toEqual({ error: "conflict", message: expect.any(String) });
    expect((await stored(tenant.datasets[0], leadId))!.tags).toHaveLength(99);
    const oneMore = await put(tenant, { datasetId: tenant.datasets[0], leadId, add: ["x1", "t000"] });
    expect(oneMore.status).toBe(204);
    expect((await stored(tenant.datasets[0], leadId))!.tags).toHaveLength(100);
  });

  it("when the lead is in another dataset of the account, then 404 and it keeps its tags", async () => {
    const leadId = await leadIn(tenant, tenant.datasets[1], { tags: ["vip"] });
    const res = await put(tenant, { datasetId: tenant.datasets[0], leadId, add: ["hot"] });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "not_found", message: expect.any(String) });
    expect(await stored(tenant.datasets[1], leadId)).toMatchObject({ tags: ["vip"] });
  });

  it("when the dataset and lead are another account's, then 404 and the lead keeps its tags", async () => {
    const leadId = await leadIn(other, other.datasets[0], { tags: ["vip"] });
    const res = await put(tenant, { datasetId: other.datasets[0], leadId, remove: ["vip"] });
    expect(res.status).toBe(404);
    expect(await stored(other.datasets[0], leadId)).toMatchObject({ tags: ["vip"] });
  });

  it("when leadId is missing, then 400 naming it", async () => {
    const res = await put(tenant, { datasetId: tenant.datasets[0], add: ["hot"] });
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "body", field: "leadId" }));
  });
});

describe("assignLead", () => {
  const put = (t: Tenant, body: object) => api.request().put("/v1/management/assign-leads").set(as(t.key)).send(body);

  it("when the assignee reaches the dataset, then 204 and the lead is assigned; a second assignment replaces it", async () => {
    const leadId = await leadIn(tenant, tenant.datasets[0]);
    const first = await put(tenant, { datasetId: tenant.datasets[0], leadId, assigneeUserId: tenant.member.id });
    expect(first.status).toBe(204);
    expect(await stored(tenant.datasets[0], leadId)).toMatchObject({ assigneeUserId: tenant.member.id });
    const second = await put(tenant, { datasetId: tenant.datasets[0], leadId, assigneeUserId: tenant.admin.id });
    expect(second.status).toBe(204);
    expect(await stored(tenant.datasets[0], leadId)).toMatchObject({ assigneeUserId: tenant.admin.id });
  });

  it("when the assignee is an admin without an association, then 204 (admins reach every dataset)", async () => {
    const email = uniqueEmail("admin2");
    const adminId = await users.addMember(api.services, tenant.accountId, tenant.admin.email, { email, name: "Admin Two", role: "admin" });
    const leadId = await leadIn(tenant, tenant.datasets[1]);
    expect((await put(tenant, { datasetId: tenant.datasets[1], leadId, assigneeUserId: adminId })).status).toBe(204);
    expect(await stored(tenant.datasets[1], leadId)).toMatchObject({ assigneeUserId: adminId });
  });

  it("when the assignee cannot reach the dataset, then 409 and the lead stays unassigned", async () => {
    const leadId = await leadIn(tenant, tenant.datasets[1]);
    const res = await put(tenant, { datasetId: tenant.datasets[1], leadId, assigneeUserId: tenant.member.id });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: "conflict", message: expect.any(String) });
    expect(await stored(tenant.datasets[1], leadId)).toMatchObject({ assigneeUserId: null });
  });

  it("when the assignee is another account's user, then 404 and the lead stays unassigned", async () => {
    const leadId = await leadIn(tenant, tenant.datasets[0]);
    const res = await put(tenant, { datasetId: tenant.datasets[0], leadId, assigneeUserId: other.admin.id });
    expect(res.status).toBe(404);
    expect(await stored(tenant.datasets[0], leadId)).toMatchObject({ assigneeUserId: null });
  });

  it("when the lead does not exist and the assignee cannot reach the dataset, then the 404 wins", async () => {
    const res = await put(tenant, { datasetId: tenant.datasets[1], leadId: "lead_missing", assigneeUserId: tenant.member.id });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "not_found", message: expect.any(String) });
  });

  it("when the dataset and lead are another account's, then 404 and that lead stays unassigned", async () => {
    const leadId = await leadIn(other, other.datasets[0]);
    const res = await put(tenant, { datasetId: other.datasets[0], leadId, assigneeUserId: tenant.admin.id });
    expect(res.status).toBe(404);
    expect(await stored(other.datasets[0], leadId)).toMatchObject({ assigneeUserId: null });
  });

  it("when assigneeUserId is not a positive integer, then 400 naming it", async () => {
    const leadId = await leadIn(tenant, tenant.datasets[0]);
    const res = await put(tenant, { datasetId: tenant.datasets[0], leadId, assigneeUserId: 0 });
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "body", field: "assigneeUserId" }));
  });
});
