// Segments: getSegments, createSegment, updateSegment, deleteSegment, updateSegmentUser.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SegmentFilter } from "../server/services/lead-filter.ts";
import type { TestApi } from "./support/api.ts";
import { where } from "./support/leads.ts";
import { createTenant, type Tenant, uniqueEmail } from "./support/tenants.ts";
import { as, startWithTenants } from "./support/suite.ts";
import * as segments from "../server/services/segments.ts";
import * as segmentPreferences from "../server/services/segment-preferences.ts";
import * as userDatasets from "../server/services/user-datasets.ts";
import * as users from "../server/services/users.ts";

let api: TestApi;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => ({ api, tenant, other } = await startWithTenants()));
afterAll(() => api?.close());

const germany = where("country", "eq", "DE");
const enterprise: SegmentFilter = {
  match: "all",
  conditions: [
    { field: "employeeCount", operator: "gte", value: 500 },
    { field: "tags", operator: "in", value: ["hot", "warm"] },
  ],
};

let counter = 0;
const freshName = (what = "Segment") => `${what} ${++counter} ${Math.random().toString(36).slice(2, 8)}`;

/** A segment made through the service (the admin as its user unless another acting e-mail is given). */
function newSegment(t: Tenant, datasetId = t.datasets[0], name = freshName(), actor = t.admin.email): Promise<number> {
  return segments.create(api.services, t.accountId, actor, { datasetId, name, filters: germany });
}

const stored = (id: number) =>
  api.db.prisma.segment.findUnique({
    where: { id },
    select: { name: true, userId: true, filters: true, emailEnabled: true, emailFrequency: true, datasetId: true, updatedAt: true },
  });

/** The names of a dataset's segments, as getSegments pages them for the account's admin. */
async function segmentNames(t: Tenant, datasetId: string): Promise<string[]> {
  const names: string[] = [];
  let cursor: string | undefined;
  do {
    const query = { accountId: t.accountId, email: t.admin.email, datasetId, limit: 500, ...(cursor ? { cursor } : {}) };
    const res = await api.request().get("/v1/segments").query(query).set(as(t.key));
    expect(res.status).toBe(200);
    names.push(...res.body.data.map((segment: { name: string }) => segment.name));
    cursor = res.body.nextCursor ?? undefined;
  } while (cursor);
  return names;
}

/** A new member of the account with access to the given datasets. */
async function newMember(t: Tenant, datasetIds: string[]): Promise<{ id: number; email: string }> {
  const email = uniqueEmail("extra");
  return { id: await users.addMember(api.services, t.accountId, t.admin.email, { email, name: "Extra", role: "member", datasetIds }), email };
}

describe("createSegment", () => {
  const create = (t: Tenant, email: string, body: object) =>
    api.request().post(`/v1/segments?email=${encodeURIComponent(email)}`).set(as(t.key)).send(body);

  it("when a member who reaches the dataset creates a segment, then 200 with its integer id and the member as its user", async () => {
    const name = freshName("Enterprise");
    const res = await create(tenant, tenant.member.email, {
      datasetId: tenant.datasets[0],
      name,
      filters: enterprise,
      emailPreferences: { enabled: true, frequency: "weekly" },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: expect.any(Number) });
    expect(Number.isInteger(res.body.id)).toBe(true);
    expect(await stored(res.body.id)).toMatchObject({
      name,
      datasetId: tenant.datasets[0],
      userId: BigInt(tenant.member.id),
      filters: enterprise,
      emailEnabled: true,
      emailFrequency: "weekly",
    });
  });

  it("when emailPreferences are omitted, then the segment gets disabled daily e-mails", async () => {
    const res = await create(tenant, tenant.admin.email, { datasetId: tenant.datasets[1], name: freshName(), filters: germany });
    expect(res.status).toBe(200);
    expect(await stored(res.body.id)).toMatchObject({ emailEnabled: false, emailFrequency: "daily", userId: BigInt(tenant.admin.id) });
  });

  it("when the acting e-mail carries a raw @, then 200", async () => {
    const name = freshName();
    const res = await api
      .request()
      .post("/v1/segments?email=" + tenant.admin.email)
      .set(as(tenant.key))
      .send({ datasetId: tenant.datasets[0], name, filters: germany });
    expect(res.status).toBe(200);
    expect(await stored(res.body.id)).toMatchObject({ name });
  });

  it("when the dataset has a segment of that name in another case, then 409 and nothing is written", async () => {
    const name = freshName("Taken");
    await newSegment(tenant, tenant.datasets[0], name);
    const before = await segmentNames(tenant, tenant.datasets[0]);
    const res = await create(tenant, tenant.admin.email, { datasetId: tenant.datasets[0], name: name.toUpperCase(), filters: germany });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: "conflict", message: expect.any(String) });
    expect(await segmentNames(tenant, tenant.datasets[0])).toEqual(before);
  });

  it("when another dataset has a segment of that name, then 200", async () => {
    const name = freshName("Shared");
    await newSegment(tenant, tenant.datasets[0], name);
    const res = await create(tenant, tenant.admin.email, { datasetId: tenant.datasets[1], name, filters: germany });
    expect(res.status).toBe(200);
    expect(await stored(res.body.id)).toMatchObject({ name, datasetId: tenant.datasets[1] });
  });

  it.each([
    ["an operator that does not fit a text field", where("country", "gte", "DE"), "filters.conditions[0].operator"],
    ["an operator that does not fit a date field", where("lastVisitAt", "eq", "2025-06-01"), "filters.conditions[0].operator"],
    ["an operator that does not fit tags", where("tags", "eq", "hot"), "filters.conditions[0].operator"],
    ["a text value for a numeric field", where("employeeCount", "gte", "many"), "filters.conditions[0].value"],
    ["a fractional number", where("visitCount", "eq", 2.5), "filters.conditions[0].value"],
    ["a date that is not a date", where("firstVisitAt", "gte", "last tuesday"), "filters.conditions[0].value"],
    ["exists with a non-boolean", where("city", "exists", "yes"), "filters.conditions[0].value"],
    ["in with a scalar", where("country", "in", "DE"), "filters.conditions[0].value"],
    ["in with an empty list", where("country", "in", []), "filters.conditions[0].value"],
    ["in with numbers for a text field", where("industry", "in", ["Software", 7]), "filters.conditions[0].value"],
    ["contains with an empty string", where("organizationName", "contains", ""), "filters.conditions[0].value"],
    ["a blank tag", where("tags", "contains", "   "), "filters.conditions[0].value"],
    [
      "a bad second condition",
      { match: "any", conditions: [{ field: "country", operator: "eq", value: "DE" }, { field: "visitCount", operator: "contains", value: "1" }] },
      "filters.conditions[1].operator",
    ],
  ])("when the filter has %s, then 400 naming the condition and nothing is written", async (_case, filters, field) => {
    const name = freshName("Invalid");
    const res = await create(tenant, tenant.admin.email, { datasetId: tenant.datasets[0], name, filters });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: "validation_failed",
      message: expect.any(String),
      details: [{ location: "body", field, message: expect.any(String) }],
    });
    expect(await segmentNames(tenant, tenant.datasets[0])).not.toContain(name);
  });

  it("when a condition names a field that leads do not have, then 400 from the contract", async () => {
    const res = await create(tenant, tenant.admin.email, {
      datasetId: tenant.datasets[0],
      name: freshName(),
      filters: where("revenue", "gte", 10),
    });
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "body", field: expect.stringMatching(/^filters\.conditions/) }));
  });

  it("when the filter has both a bad condition and the acting user is not a member, then the 400 wins", async () => {
    const res = await create(tenant, other.admin.email, { datasetId: tenant.datasets[0], name: freshName(), filters: where("country", "lte", "DE") });
    expect(res.status).toBe(400);
  });

  it("when a member creates a segment on a dataset it cannot reach, then 403 and nothing is written", async () => {
    const name = freshName();
    const res = await create(tenant, tenant.member.email, { datasetId: tenant.datasets[1], name, filters: germany });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: "forbidden", message: expect.any(String) });
    expect(await segmentNames(tenant, tenant.datasets[1])).not.toContain(name);
  });

  it("when the acting e-mail is not a member of the account, then 403", async () => {
    const name = freshName();
    const res = await create(tenant, other.admin.email, { datasetId: tenant.datasets[0], name, filters: germany });
    expect(res.status).toBe(403);
    expect(await segmentNames(tenant, tenant.datasets[0])).not.toContain(name);
  });

  it("when the dataset is another account's, then 404 and nothing is written", async () => {
    const name = freshName();
    const res = await create(tenant, tenant.admin.email, { datasetId: other.datasets[0], name, filters: germany });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "not_found", message: expect.any(String) });
    expect(await segmentNames(other, other.datasets[0])).not.toContain(name);
  });
});

describe("getSegments", () => {
  let t: Tenant;
  let ids: number[];
  beforeAll(async () => {
    t = await createTenant(api.services, "Lister");
    ids = [];
    for (const name of ["Alpha", "Beta", "Gamma", "Delta", "Epsilon"]) ids.push(await newSegment(t, t.datasets[0], name));
    await newSegment(t, t.datasets[1], "Other dataset");
  });
  const list = (query: Record<string, string | number>, email = t.admin.email, key = t.key) =>
    api.request().get("/v1/segments").query({ email, accountId: t.accountId, datasetId: t.datasets[0], ...query }).set(as(key));

  it("when the dataset has segments, then 200 with exactly its segments in id order and every field", async () => {
    const res = await list({});
    expect(res.status).toBe(200);
    expect(res.body.nextCursor).toBeNull();
    expect(res.body.data.map((s: { segmentId: number }) => s.segmentId)).toEqual(ids);
    expect(res.body.data[0]).toEqual({
      segmentId: ids[0],
      name: "Alpha",
      datasetId: t.datasets[0],
      userId: t.admin.id,
      filters: germany,
      emailPreferences: { enabled: false, frequency: "daily" },
      createdAt: expect.stringMatching(/Z$/),
      updatedAt: expect.stringMatching(/Z$/),
    });
  });

  it("when pages of 2 are followed by their cursors, then every segment comes once and the last page has no cursor", async () => {
    const seen: number[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await list({ limit: 2, ...(cursor ? { cursor } : {}) });
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.data.map((s: { segmentId: number }) => s.segmentId));
      cursor = res.body.nextCursor;
      pages += 1;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(ids);
  });

  it("when a member who reaches the dataset lists it, then 200", async () => {
    const res = await list({}, t.member.email);
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(5);
  });

  it.each(["not-base64-!", Buffer.from('{"after":"x"}').toString("base64url"), Buffer.from("[1,2]").toString("base64url")])(
    "when the cursor %s is not one this API returned, then 400 naming it",
    async (cursor) => {
      const res = await list({ cursor });
      expect(res.status).toBe(400);
      expect(res.body.details).toEqual([{ location: "query", field: "cursor", message: expect.any(String) }]);
    },
  );

  it("when accountId is another account's, then 403", async () => {
    const res = await list({ accountId: other.accountId });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: "forbidden", message: expect.any(String) });
  });

  it("when a member lists a dataset it cannot reach, then 403", async () => {
    const res = await list({ datasetId: t.datasets[1] }, t.member.email);
    expect(res.status).toBe(403);
  });

  it("when the acting e-mail is not a member of the account, then 403", async () => {
    const res = await list({}, other.admin.email);
    expect(res.status).toBe(403);
  });

  it("when the dataset is another account's, then 404", async () => {
    const res = await list({ datasetId: other.datasets[0] });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe("not_found");
  });

  it("when limit is above 500, then 400 naming it", async () => {
    const res = await list({ limit: 501 });
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "query", field: "limit" }));
  });
});

describe("updateSegment", () => {
  const update = (t: Tenant, segmentId: number | string, segmentName: string, body: object) =>
    api.request().put(`/v1/segments/${segmentId}`).query({ segmentName }).set(as(t.key)).send(body);

  it("when the name, filters and preferences are given, then 204 and all three are replaced", async () => {
    const id = await newSegment(tenant);
    const before = await stored(id);
    const name = freshName("Renamed");
    const res = await update(tenant, id, name, { filters: enterprise, emailPreferences: { enabled: true, frequency: "instant" } });
    expect(res.status).toBe(204);
    const after = await stored(id);
    expect(after).toMatchObject({ name, filters: enterprise, emailEnabled: true, emailFrequency: "instant" });
    expect(after!.updatedAt.getTime()).toBeGreaterThanOrEqual(before!.updatedAt.getTime());
  });

  it("when filters and preferences are omitted, then only the name changes", async () => {
    const id = await newSegment(tenant);
    const name = freshName("Only name");
    const res = await update(tenant, id, name, {});
    expect(res.status).toBe(204);
    expect(await stored(id)).toMatchObject({ name, filters: germany, emailEnabled: false, emailFrequency: "daily" });
  });

  it("when only the preferences are given, then the filters stay", async () => {
    const id = await newSegment(tenant);
    const res = await update(tenant, id, freshName(), { emailPreferences: { enabled: true, frequency: "weekly" } });
    expect(res.status).toBe(204);
    expect(await stored(id)).toMatchObject({ filters: germany, emailEnabled: true, emailFrequency: "weekly" });
  });

  it("when the new name is its own in another case, then 204", async () => {
    const name = freshName("Case");
    const id = await newSegment(tenant, tenant.datasets[0], name);
    const res = await update(tenant, id, name.toUpperCase(), {});
    expect(res.status).toBe(204);
    expect(await stored(id)).toMatchObject({ name: name.toUpperCase() });
  });

  it("when another segment of the dataset has the name (in another case), then 409 and nothing changes", async () => {
    const taken = freshName("Taken");
    await newSegment(tenant, tenant.datasets[0], taken);
    const id = await newSegment(tenant);
    const before = await stored(id);
    const res = await update(tenant, id, taken.toLowerCase(), { filters: enterprise });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: "conflict", message: expect.any(String) });
    expect(await stored(id)).toEqual(before);
  });

  it("when a condition does not fit its field, then 400 naming it and nothing changes", async () => {
    const id = await newSegment(tenant);
    const before = await stored(id);
    const res = await update(tenant, id, freshName(), { filters: where("lastVisitAt", "contains", "2025") });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ location: "body", field: "filters.conditions[0].operator", message: expect.any(String) }]);
    expect(await stored(id)).toEqual(before);
  });

  it("when the segment is another account's, then 404 and it stays as it was", async () => {
    const id = await newSegment(other);
    const before = await stored(id);
    const res = await update(tenant, id, freshName("Hijacked"), { filters: enterprise });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "not_found", message: expect.any(String) });
    expect(await stored(id)).toEqual(before);
  });

  it("when the segment does not exist, then 404", async () => {
    const res = await update(tenant, 2_000_000_000, freshName(), {});
    expect(res.status).toBe(404);
  });

  it("when segmentName is missing, then 400 naming it", async () => {
    const id = await newSegment(tenant);
    const res = await api.request().put(`/v1/segments/${id}`).set(as(tenant.key)).send({});
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "query", field: "segmentName" }));
  });

  it("when the segment id is not an int32, then 400 naming the path parameter", async () => {
    const res = await update(tenant, 2_147_483_648, freshName(), {});
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "path", field: "segmentId" }));
  });
});

describe("deleteSegment", () => {
  const remove = (t: Tenant, segmentId: number) => api.request().delete(`/v1/segments/${segmentId}`).set(as(t.key));

  it("when the segment is the default of users, then 204, it is gone and only its preferences go with it", async () => {
    const doomed = await newSegment(tenant);
    const kept = await newSegment(tenant, tenant.datasets[1]);
    await segmentPreferences.set(api.services, tenant.accountId, tenant.admin.email, {
      segmentId: doomed,
      datasetId: tenant.datasets[0],
      userIds: [tenant.admin.id, tenant.member.id],
    });
    await segmentPreferences.set(api.services, tenant.accountId, tenant.admin.email, {
      segmentId: kept,
      datasetId: tenant.datasets[1],
      userIds: [tenant.admin.id],
    });
    const res = await remove(tenant, doomed);
    expect(res.status).toBe(204);
    expect(await stored(doomed)).toBeNull();
    expect(await api.db.prisma.segmentPreference.count({ where: { segmentId: doomed } })).toBe(0);
    expect(await api.db.prisma.segmentPreference.findMany({ where: { segmentId: kept }, select: { userId: true } })).toEqual([
      { userId: BigInt(tenant.admin.id) },
    ]);
  });

  it("when the segment was already deleted, then 404", async () => {
    const id = await newSegment(tenant);
    expect((await remove(tenant, id)).status).toBe(204);
    const res = await remove(tenant, id);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "not_found", message: expect.any(String) });
  });

  it("when the segment is another account's, then 404 and it still exists", async () => {
    const id = await newSegment(other);
    const res = await remove(tenant, id);
    expect(res.status).toBe(404);
    expect(await stored(id)).not.toBeNull();
  });

  it("when the segment id is not an integer, then 400 naming the path parameter", async () => {
    const res = await api.request().delete("/v1/segments/seventeen").set(as(tenant.key));
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "path", field: "segmentId" }));
  });
});

describe("updateSegmentUser", () => {
  const setUser = (t: Tenant, segmentId: number, userId: number) =>
    api.request().put("/v1/segments/user").set(as(t.key)).send({ segmentId, userId });

  it("when the new user reaches the segment's dataset, then 204 and the segment is theirs", async () => {
    const id = await newSegment(tenant, tenant.datasets[0]);
    const res = await setUser(tenant, id, tenant.member.id);
    expect(res.status).toBe(204);
    expect(await stored(id)).toMatchObject({ userId: BigInt(tenant.member.id) });
    const listed = await api
      .request()
      .get("/v1/segments")
      .query({ email: tenant.member.email, accountId: tenant.accountId, datasetId: tenant.datasets[0] })
      .set(as(tenant.key));
    expect(listed.body.data).toContainEqual(expect.objectContaining({ segmentId: id, userId: tenant.member.id }));
  });

  it("when the new user is the current user, then 204 and nothing changes", async () => {
    const id = await newSegment(tenant);
    const res = await setUser(tenant, id, tenant.admin.id);
    expect(res.status).toBe(204);
    expect(await stored(id)).toMatchObject({ userId: BigInt(tenant.admin.id) });
  });

  it("when the new user is an admin without an association, then 204 (admins reach every dataset)", async () => {
    const email = uniqueEmail("admin2");
    const adminId = await users.addMember(api.services, tenant.accountId, tenant.admin.email, { email, name: "Second Admin", role: "admin" });
    const id = await newSegment(tenant, tenant.datasets[1]);
    expect((await setUser(tenant, id, adminId)).status).toBe(204);
    expect(await stored(id)).toMatchObject({ userId: BigInt(adminId) });
  });

  it("when the new user cannot reach the segment's dataset, then 409 and the user stays", async () => {
    const id = await newSegment(tenant, tenant.datasets[1]);
    const res = await setUser(tenant, id, tenant.member.id);
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: "conflict", message: expect.any(String) });
    expect(await stored(id)).toMatchObject({ userId: BigInt(tenant.admin.id) });
  });

  it("when the new user gains access later, then the same request succeeds", async () => {
    const member = await newMember(tenant, []);
    const id = await newSegment(tenant, tenant.datasets[1]);
    expect((await setUser(tenant, id, member.id)).status).toBe(409);
    await userDatasets.grant(api.services, tenant.accountId, member.id, tenant.datasets[1]);
    expect((await setUser(tenant, id, member.id)).status).toBe(204);
    expect(await stored(id)).toMatchObject({ userId: BigInt(member.id) });
  });

  it("when the new user is another account's, then 404 and the user stays", async () => {
    const id = await newSegment(tenant);
    const res = await setUser(tenant, id, other.member.id);
    expect(res.status).toBe(404);
    expect(await stored(id)).toMatchObject({ userId: BigInt(tenant.admin.id) });
  });

  it("when the segment is another account's, then 404 and its user stays", async () => {
    const id = await newSegment(other);
    const res = await setUser(tenant, id, tenant.admin.id);
    expect(res.status).toBe(404);
    expect(await stored(id)).toMatchObject({ userId: BigInt(other.admin.id) });
  });

  it("when userId is missing, then 400 naming it", async () => {
    const res = await api.request().put("/v1/segments/user").set(as(tenant.key)).send({ segmentId: 1 });
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "body", field: "userId" }));
  });
});
