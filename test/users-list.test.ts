// User Management: listUsers, where a partner learns every member's id (also of those without
// datasets), role, invitation state and dataset associations.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestApi } from "./support/api.ts";
import { as, startWithTenants } from "./support/suite.ts";
import { type Tenant, uniqueEmail } from "./support/tenants.ts";

let api: TestApi;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => ({ api, tenant, other } = await startWithTenants()));
afterAll(() => api?.close());

const listUsers = (actor: string, query: Record<string, string | number> = {}) =>
  api.request().get("/v1/users").query({ email: actor, ...query }).set(as(tenant.key));

/** Every page, following nextCursor. */
async function allUsers(limit: number) {
  const pages = [];
  let cursor: string | undefined;
  do {
    const res = await listUsers(tenant.admin.email, { limit, ...(cursor ? { cursor } : {}) });
    expect(res.status).toBe(200);
    pages.push(res.body.data as { userId: number; email: string }[]);
    cursor = res.body.nextCursor ?? undefined;
  } while (cursor);
  return pages;
}

describe("listUsers", () => {
  it("when an admin lists, then every member appears with id, e-mail, name, role, invitation state and the datasets it reaches (an admin: all)", async () => {
    const res = await listUsers(tenant.admin.email);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: [
        {
          userId: tenant.admin.id,
          email: tenant.admin.email.toLowerCase(),
          name: "Ada Admin",
          role: "admin",
          invitationState: "active",
          allDatasets: true,
          datasetIds: tenant.datasets,
        },
        {
          userId: tenant.member.id,
          email: tenant.member.email.toLowerCase(),
          name: "Max Member",
          role: "member",
          invitationState: "invited",
          allDatasets: false,
          datasetIds: [tenant.datasets[0]],
        },
      ],
      nextCursor: null,
    });
  });

  it("when a user is added without datasets, then its id is listed and the API accepts it", async () => {
    const email = uniqueEmail("nodata");
    const added = await api.request().post(`/v1/users?email=${tenant.admin.email}`).set(as(tenant.key)).send({ email, name: "Noa Nodata" });
    expect(added.status).toBe(204);
    const listed = (await listUsers(tenant.admin.email)).body.data.find((u: { email: string }) => u.email === email.toLowerCase());
    expect(listed).toMatchObject({ name: "Noa Nodata", role: "member", invitationState: "invited", allDatasets: false, datasetIds: [] });

    const granted = await api.request().post("/v1/user-datasets").set(as(tenant.key)).send({ userId: listed.userId, datasetId: tenant.datasets[1] });
    expect(granted.status).toBe(204);
    const renamed = await api.request().put(`/v1/users/${listed.userId}/name`).set(as(tenant.key)).send({ name: "Noa Data" });
    expect(renamed.status).toBe(204);
    const after = (await listUsers(tenant.admin.email)).body.data.find((u: { userId: number }) => u.userId === listed.userId);
    expect(after).toMatchObject({ name: "Noa Data", datasetIds: [tenant.datasets[1]] });
  });

  it("when a dataset is created, then every admin reaches it at once, a member only once associated", async () => {
    const created = await api.request().post(`/v1/datasets?email=${tenant.admin.email}`).set(as(tenant.key)).send({ name: "Later dataset" });
    expect(created.status).toBe(200);
    const datasetId = created.body.id as string;
    const users = (await listUsers(tenant.admin.email)).body.data as { userId: number; allDatasets: boolean; datasetIds: string[] }[];
    const admin = users.find((u) => u.userId === tenant.admin.id)!;
    expect(admin).toMatchObject({ allDatasets: true, datasetIds: expect.arrayContaining([...tenant.datasets, datasetId]) });
    expect(admin.datasetIds.at(-1)).toBe(datasetId); // oldest first
    expect(users.find((u) => u.userId === tenant.member.id)).toMatchObject({ allDatasets: false, datasetIds: [tenant.datasets[0]] });
    // what the listing says an admin reaches is what getUserDatasets answers for it
    const reached = await api.request().get("/v1/user-datasets").query({ accountId: tenant.accountId, email: tenant.admin.email }).set(as(tenant.key));
    expect(reached.body.data.map((d: { datasetId: string }) => d.datasetId)).toEqual(admin.datasetIds);
  });

  it("when paged one user at a time, then the pages hold every member once, in id order, and end with a null cursor", async () => {
    const whole = (await listUsers(tenant.admin.email)).body.data.map((u: { userId: number }) => u.userId);
    const pages = await allUsers(1);
    expect(pages.every((page) => page.length === 1)).toBe(true);
    expect(pages.flat().map((u) => u.userId)).toEqual(whole);
    expect(whole).toEqual([...whole].sort((a, b) => a - b));
    expect(whole.length).toBeGreaterThanOrEqual(3);
  });

  it("when another account has users, then none of them is listed", async () => {
    const ids = (await allUsers(100)).flat().map((u) => u.userId);
    expect(ids).not.toContain(other.admin.id);
    expect(ids).not.toContain(other.member.id);
  });

  it("when the acting user is a member, not an admin, then 403", async () => {
    const res = await listUsers(tenant.member.email);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: "forbidden", message: expect.any(String) });
  });

  it("when the acting user is another account's admin, then 403", async () => {
    const res = await listUsers(other.admin.email);
    expect(res.status).toBe(403);
  });

  it("when the cursor is not one this API returned, then 400 naming it", async () => {
    const res = await listUsers(tenant.admin.email, { cursor: "bm90LWEtY3Vyc29y" });
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "query", field: "cursor" }));
  });

  it("when the limit is above 500, then 400", async () => {
    const res = await listUsers(tenant.admin.email, { limit: 501 });
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "query", field: "limit" }));
  });

  it("when the key is missing, then 401", async () => {
    const res = await api.request().get(`/v1/users?email=${tenant.admin.email}`);
    expect(res.status).toBe(401);
    expect(res.body.error).toBe("missing_api_key");
  });
});
