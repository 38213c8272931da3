// UserDatasets: getUserDatasets, addUserDataset, removeUserDataset.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestApi } from "./support/api.ts";
import { as, startWithTenants } from "./support/suite.ts";
import { type Tenant, uniqueEmail } from "./support/tenants.ts";
import * as segments from "../server/services/segments.ts";
import * as segmentPreferences from "../server/services/segment-preferences.ts";
import * as userDatasets from "../server/services/user-datasets.ts";
import * as users from "../server/services/users.ts";

let api: TestApi;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => ({ api, tenant, other } = await startWithTenants()));
afterAll(() => api?.close());

/** A new member of the tenant's account with access to the given datasets. */
async function newMember(t: Tenant, datasetIds: string[] = []): Promise<{ id: number; email: string }> {
  const email = uniqueEmail("extra");
  const id = await users.addMember(api.services, t.accountId, t.admin.email, { email, name: "Extra Member", role: "member", datasetIds });
  return { id, email };
}

/** The dataset ids the user reaches, read back through the API. */
async function datasetsOf(t: Tenant, email: string): Promise<string[]> {
  const res = await api
    .request()
    .get(`/v1/user-datasets?accountId=${t.accountId}&email=${encodeURIComponent(email)}`)
    .set(as(t.key));
  expect(res.status).toBe(200);
  return (res.body.data as { datasetId: string }[]).map((d) => d.datasetId);
}

async function links(userId: number): Promise<{ accountId: string; datasetId: string }[]> {
  return api.db.prisma.userDataset.findMany({
    where: { userId: BigInt(userId) },
    select: { accountId: true, datasetId: true },
    orderBy: { datasetId: "asc" },
  });
}

describe("getUserDatasets", () => {
  it("when the user is a member, then 200 with only the associated datasets and their names", async () => {
    const res = await api
      .request()
      .get(`/v1/user-datasets?accountId=${tenant.accountId}&email=${encodeURIComponent(tenant.member.email)}`)
      .set(as(tenant.key));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: [
        {
          accountId: tenant.accountId,
          userId: tenant.member.id,
          email: tenant.member.email.toLowerCase(),
          datasetId: tenant.datasets[0],
          datasetName: "Acme website",
        },
      ],
    });
  });

  it("when the user is an admin, then 200 with every dataset of the account, oldest first", async () => {
    const res = await api
      .request()
      .get(`/v1/user-datasets?accountId=${tenant.accountId}&email=${encodeURIComponent(tenant.admin.email)}`)
      .set(as(tenant.key));
    expect(res.status).toBe(200);
    const item = { accountId: tenant.accountId, userId: tenant.admin.id, email: tenant.admin.email.toLowerCase() };
    expect(res.body).toEqual({
      data: [
        { ...item, datasetId: tenant.datasets[0], datasetName: "Acme website" },
        { ...item, datasetId: tenant.datasets[1], datasetName: "Acme shop" },
      ],
    });
  });

  it("when the member has no associations, then 200 with an empty list", async () => {
    const lonely = await newMember(tenant);
    const res = await api
      .request()
      .get(`/v1/user-datasets?accountId=${tenant.accountId}&email=${encodeURIComponent(lonely.email)}`)
      .set(as(tenant.key));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: [] });
  });

  it("when the email carries a raw @, then 200 as with %40", async () => {
    const raw = await api
      .request()
      .get("/v1/user-datasets?accountId=" + tenant.accountId + "&email=" + tenant.member.email)
      .set(as(tenant.key));
    const encoded = await api
      .request()
      .get("/v1/user-datasets?accountId=" + tenant.accountId + "&email=" + encodeURIComponent(tenant.member.email))
      .set(as(tenant.key));
    expect(encodeURIComponent(tenant.member.email)).toContain("%40");
    expect(raw.status).toBe(200);
    expect(encoded.status).toBe(200);
    expect(raw.body.data.map((d: { datasetId: string }) => d.datasetId)).toEqual([tenant.datasets[0]]);
    expect(raw.body).toEqual(encoded.body);
  });

  it("when the email is in another letter case, then 200 for the same user", async () => {
    const res = await api
      .request()
      .get(`/v1/user-datasets?accountId=${tenant.accountId}&email=${tenant.member.email.toUpperCase()}`)
      .set(as(tenant.key));
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([expect.objectContaining({ userId: tenant.member.id, datasetId: tenant.datasets[0] })]);
  });

  it("when accountId is another account's, then 403", async () => {
    const res = await api
      .request()
      .get(`/v1/user-datasets?accountId=${other.accountId}&email=${encodeURIComponent(other.admin.email)}`)
      .set(as(tenant.key));
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: "forbidden", message: expect.any(String) });
  });

  it("when the e-mail is not a member of the account, then 404", async () => {
    const res = await api
      .request()
      .get(`/v1/user-datasets?accountId=${tenant.accountId}&email=${encodeURIComponent(uniqueEmail("stranger"))}`)
      .set(as(tenant.key));
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "not_found", message: expect.any(String) });
  });

  it("when the e-mail is a member of another account only, then 404", async () => {
    const res = await api
      .request()
      .get(`/v1/user-datasets?accountId=${tenant.accountId}&email=${encodeURIComponent(other.member.email)}`)
      .set(as(tenant.key));
    expect(res.status).toBe(404);
    expect(res.body.error).toBe("not_found");
  });

  it("when the email is not an e-mail address, then 400 naming the query field", async () => {
    const res = await api
      .request()
      .get(`/v1/user-datasets?accountId=${tenant.accountId}&email=not-an-address`)
      .set(as(tenant.key));
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("validation_failed");
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "query", field: "email" }));
  });

  it("when accountId is missing, then 400 naming it", async () => {
    const res = await api
      .request()
      .get(`/v1/user-datasets?email=${encodeURIComponent(tenant.admin.email)}`)
      .set(as(tenant.key));
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "query", field: "accountId" }));
  });
});

describe("addUserDataset", () => {
  it("when the member gets a dataset of the account, then 204 and it is in the member's list", async () => {
    const m = await newMember(tenant, [tenant.datasets[0]]);
    const res = await api
      .request()
      .post("/v1/user-datasets")
      .set(as(tenant.key))
      .send({ userId: m.id, datasetId: tenant.datasets[1] });
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    expect(await datasetsOf(tenant, m.email)).toEqual([tenant.datasets[0], tenant.datasets[1]]);
    expect(await links(m.id)).toHaveLength(2);
  });

  it("when the association already exists, then 409 and nothing changes", async () => {
    const m = await newMember(tenant, [tenant.datasets[0]]);
    const res = await api
      .request()
      .post("/v1/user-datasets")
      .set(as(tenant.key))
      .send({ userId: m.id, datasetId: tenant.datasets[0] });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: "conflict", message: expect.any(String) });
    expect(await links(m.id)).toEqual([{ accountId: tenant.accountId, datasetId: tenant.datasets[0] }]);
  });

  it("when the user does not exist, then 404", async () => {
    const res = await api
      .request()
      .post("/v1/user-datasets")
      .set(as(tenant.key))
      .send({ userId: 987654321, datasetId: tenant.datasets[1] });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "not_found", message: expect.any(String) });
    expect(await api.db.prisma.userDataset.count({ where: { userId: 987654321n } })).toBe(0);
  });

  it("when the user is another account's, then 404 and nothing is written", async () => {
    const res = await api
      .request()
      .post("/v1/user-datasets")
      .set(as(tenant.key))
      .send({ userId: other.member.id, datasetId: tenant.datasets[1] });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe("not_found");
    expect(await links(other.member.id)).toEqual([{ accountId: other.accountId, datasetId: other.datasets[0] }]);
  });

  it("when the dataset is another account's, then 404 and nothing is written", async () => {
    const m = await newMember(tenant);
    const res = await api
      .request()
      .post("/v1/user-datasets")
      .set(as(tenant.key))
      .send({ userId: m.id, datasetId: other.datasets[1] });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe("not_found");
    expect(await links(m.id)).toEqual([]);
  });

  it("when the dataset does not exist, then 404", async () => {
    const m = await newMember(tenant);
    const res = await api
      .request()
      .post("/v1/user-datasets")
      .set(as(tenant.key))
      .send({ userId: m.id, datasetId: "ds_doesnotexist" });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe("not_found");
    expect(await links(m.id)).toEqual([]);
  });

  it("when datasetId is missing, then 400 naming the body field", async () => {
    const res = await api.request().post("/v1/user-datasets").set(as(tenant.key)).send({ userId: tenant.member.id });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("validation_failed");
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "body", field: "datasetId" }));
  });

  it("when the body has a field the spec does not declare, then 400 and nothing is written", async () => {
    const m = await newMember(tenant);
    const res = await api
      .request()
      .post("/v1/user-datasets")
      .set(as(tenant.key))
      .send({ userId: m.id, datasetId: tenant.datasets[1], role: "admin" });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("validation_failed");
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "body" }));
    expect(JSON.stringify(res.body.details)).toContain("role");
    expect(await links(m.id)).toEqual([]);
  });

  it("when userId is not an integer, then 400 naming it", async () => {
    const res = await api
      .request()
      .post("/v1/user-datasets")
      .set(as(tenant.key))
      .send({ userId: "one", datasetId: tenant.datasets[1] });
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "body", field: "userId" }));
  });
});

describe("removeUserDataset", () => {
  it("when the association exists, then 204 and the dataset is gone from the member's list", async () => {
    const m = await newMember(tenant, [tenant.datasets[0], tenant.datasets[1]]);
    const res = await api
      .request()
      .delete("/v1/user-datasets")
      .set(as(tenant.key))
      .set("Content-Type", "application/json")
      .send(JSON.stringify({ userId: m.id, datasetId: tenant.datasets[0] }));
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    expect(await datasetsOf(tenant, m.email)).toEqual([tenant.datasets[1]]);
    expect(await links(m.id)).toEqual([{ accountId: tenant.accountId, datasetId: tenant.datasets[1] }]);
  });

  it("when a member loses access, then their default segment under that dataset goes too; an admin's stays", async () => {
    const m = await newMember(tenant, [tenant.datasets[0]]);
    await userDatasets.grant(api.services, tenant.accountId, tenant.admin.id, tenant.datasets[0]);
    const segmentId = await segments.create(api.services, tenant.accountId, tenant.admin.email, {
      datasetId: tenant.datasets[0],
      name: `Default ${m.id}`,
      filters: { match: "all", conditions: [{ field: "country", operator: "eq", value: "DE" }] },
    });
    const preference = { segmentId, datasetId: tenant.datasets[0], userIds: [m.id, tenant.admin.id] };
    await segmentPreferences.set(api.services, tenant.accountId, tenant.admin.email, preference);
    for (const userId of [m.id, tenant.admin.id]) {
      const res = await api.request().delete("/v1/user-datasets").set(as(tenant.key)).send({ userId, datasetId: tenant.datasets[0] });
      expect(res.status).toBe(204);
    }
    const defaults = await segmentPreferences.usersOf(api.services, tenant.accountId, tenant.admin.email, segmentId, tenant.datasets[0]);
    expect(defaults).toEqual([tenant.admin.id]);
  });

  it("when there is no such association, then 404", async () => {
    const m = await newMember(tenant, [tenant.datasets[0]]);
    const res = await api
      .request()
      .delete("/v1/user-datasets")
      .set(as(tenant.key))
      .send({ userId: m.id, datasetId: tenant.datasets[1] });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "not_found", message: expect.any(String) });
    expect(await links(m.id)).toEqual([{ accountId: tenant.accountId, datasetId: tenant.datasets[0] }]);
  });

  it("when the association is another account's, then 404 and it stays", async () => {
    const res = await api
      .request()
      .delete("/v1/user-datasets")
      .set(as(tenant.key))
      .send({ userId: other.member.id, datasetId: other.datasets[0] });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe("not_found");
    expect(await links(other.member.id)).toEqual([{ accountId: other.accountId, datasetId: other.datasets[0] }]);
  });

  it("when the JSON body is missing, then 400", async () => {
    const res = await api.request().delete("/v1/user-datasets").set(as(tenant.key));
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("validation_failed");
    expect(await links(tenant.member.id)).toEqual([{ accountId: tenant.accountId, datasetId: tenant.datasets[0] }]);
  });

  it("when userId is missing, then 400 naming the body field", async () => {
    const res = await api.request().delete("/v1/user-datasets").set(as(tenant.key)).send({ datasetId: tenant.datasets[0] });
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "body", field: "userId" }));
  });
});
