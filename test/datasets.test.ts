// Dataset Management: createDataset, renameDataset, updateFormTracking.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestApi } from "./support/api.ts";
import { as, startWithTenants } from "./support/suite.ts";
import { type Tenant, uniqueEmail } from "./support/tenants.ts";
import * as datasets from "../server/services/datasets.ts";
import * as users from "../server/services/users.ts";

let api: TestApi;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => ({ api, tenant, other } = await startWithTenants()));
afterAll(() => api?.close());
const q = (email: string) => `email=${encodeURIComponent(email)}`;

let counter = 0;
/** A dataset name no test has used yet. */
const freshName = (what = "Site") => `${what} ${++counter} ${Math.random().toString(36).slice(2, 8)}`;

/** The account's datasets as getUserDatasets lists them for its admin (who reaches them all). */
async function datasetsOf(t: Tenant): Promise<{ datasetId: string; datasetName: string }[]> {
  const res = await api.request().get(`/v1/user-datasets?accountId=${t.accountId}&${q(t.admin.email)}`).set(as(t.key));
  expect(res.status).toBe(200);
  return res.body.data;
}
const datasetsNamed = async (t: Tenant, name: string) =>
  (await datasetsOf(t)).filter((d) => d.datasetName === name).map((d) => ({ id: d.datasetId }));
const nameOf = async (t: Tenant, id: string) => (await datasetsOf(t)).find((d) => d.datasetId === id)?.datasetName;

/** A dataset of its own for tests that change one. */
async function newDataset(t: Tenant, name = freshName()): Promise<string> {
  return datasets.create(api.services, t.accountId, t.admin.email, { name });
}

describe("createDataset", () => {
  it("when an admin creates a dataset with users, then 200 with its string id, stored with the users associated", async () => {
    const extraEmail = uniqueEmail("extra");
    const extraId = await users.addMember(api.services, tenant.accountId, tenant.admin.email, { email: extraEmail, name: "Extra", role: "member" });
    const name = freshName("Main website");
    const res = await api
      .request()
      .post(`/v1/datasets?${q(tenant.admin.email)}`)
      .set(as(tenant.key))
      .send({ name, domain: "WWW.Acme.example", userIds: [tenant.member.id, extraId] });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: expect.any(String) });
    const id = res.body.id as string;
    expect(id.length).toBeGreaterThan(0);

    const stored = await api.db.prisma.dataset.findUnique({ where: { id } });
    expect(stored).toMatchObject({ accountId: tenant.accountId, name, domain: "www.acme.example" });
    for (const [email, userId] of [[extraEmail, extraId], [tenant.member.email, tenant.member.id]] as const) {
      const list = await api
        .request()
        .get(`/v1/user-datasets?accountId=${tenant.accountId}&${q(email)}`)
        .set(as(tenant.key));
      expect(list.body.data).toContainEqual({ accountId: tenant.accountId, userId, email: email.toLowerCase(), datasetId: id, datasetName: name });
    }
  });

  it("when no userIds are given, then 200 and the dataset has no associations", async () => {
    const name = freshName();
    const res = await api.request().post(`/v1/datasets?${q(tenant.admin.email)}`).set(as(tenant.key)).send({ name });
    expect(res.status).toBe(200);
    expect(await api.db.prisma.dataset.findUnique({ where: { id: res.body.id } })).toMatchObject({ name, domain: null });
    expect(await api.db.prisma.userDataset.count({ where: { datasetId: res.body.id } })).toBe(0);
  });

  it("when the acting e-mail carries a raw @, then 200", async () => {
    const name = freshName();
    const res = await api
      .request()
      .post("/v1/datasets?email=" + tenant.admin.email)
      .set(as(tenant.key))
      .send({ name });
    expect(res.status).toBe(200);
    expect(await datasetsNamed(tenant, name)).toEqual([{ id: res.body.id }]);
  });

  it("when the account has a dataset of the same name in another case, then 409 and nothing is written", async () => {
    const before = (await datasetsOf(tenant)).length;
    const res = await api
      .request()
      .post(`/v1/datasets?${q(tenant.admin.email)}`)
      .set(as(tenant.key))
      .send({ name: "ACME WEBSITE", userIds: [tenant.member.id] });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: "conflict", message: expect.any(String) });
    expect((await datasetsOf(tenant)).length).toBe(before);
  });

  it("when another account has a dataset of that name, then 200 in this one", async () => {
    const res = await api
      .request()
      .post(`/v1/datasets?${q(other.admin.email)}`)
      .set(as(other.key))
      .send({ name: "Acme website" });
    expect(res.status).toBe(200);
    expect(await datasetsNamed(other, "Acme website")).toEqual([{ id: res.body.id }]);
    expect(await datasetsNamed(tenant, "Acme website")).toEqual([{ id: tenant.datasets[0] }]);
  });

  it("when a userId is not a member of the account, then 404 and nothing is written", async () => {
    const name = freshName();
    const res = await api
      .request()
      .post(`/v1/datasets?${q(tenant.admin.email)}`)
      .set(as(tenant.key))
      .send({ name, userIds: [tenant.member.id, other.member.id] });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "not_found", message: expect.any(String) });
    expect(await datasetsNamed(tenant, name)).toEqual([]);
  });

  it("when the acting user is a member, not an admin, then 403 and nothing is written", async () => {
    const name = freshName();
    const res = await api.request().post(`/v1/datasets?${q(tenant.member.email)}`).set(as(tenant.key)).send({ name });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: "forbidden", message: expect.any(String) });
    expect(await datasetsNamed(tenant, name)).toEqual([]);
  });

  it("when the acting e-mail is not a member of the account, then 403", async () => {
    const name = freshName();
    const res = await api.request().post(`/v1/datasets?${q(other.admin.email)}`).set(as(tenant.key)).send({ name });
    expect(res.status).toBe(403);
    expect(res.body.error).toBe("forbidden");
    expect(await datasetsNamed(tenant, name)).toEqual([]);
  });

  it.each([
    ["the name is missing", { domain: "www.acme.example" }, "name"],
    ["the name is blank", { name: "   " }, "name"],
    ["the domain is not a host name", { name: "Bad domain", domain: "not a host!" }, "domain"],
    ["a userId is not an integer", { name: "Bad ids", userIds: ["abc"] }, "userIds"],
  ])("when %s, then 400 naming the body field", async (_case, body, field) => {
    const before = (await datasetsOf(tenant)).length;
    const res = await api.request().post(`/v1/datasets?${q(tenant.admin.email)}`).set(as(tenant.key)).send(body);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("validation_failed");
    expect(res.body.details).toContainEqual(
      expect.objectContaining({ location: "body", field: expect.stringMatching(new RegExp(`^${field}`)) }),
    );
    expect((await datasetsOf(tenant)).length).toBe(before);
  });

  it("when the body has an undeclared field, then 400", async () => {
    const name = freshName();
    const res = await api
      .request()
      .post(`/v1/datasets?${q(tenant.admin.email)}`)
      .set(as(tenant.key))
      .send({ name, creditLimit: 10 });
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "body" }));
    expect(await datasetsNamed(tenant, name)).toEqual([]);
  });
});

describe("renameDataset", () => {
  const rename = (t: Tenant, datasetId: string, humanName: string, email = t.admin.email) =>
    api.request().put(`/v1/datasets/${datasetId}/name`).query({ humanName, email }).set(as(t.key));

  it("when an admin renames a dataset, then 204 and the name is changed", async () => {
    const id = await newDataset(tenant);
    const name = freshName("Renamed");
    const res = await rename(tenant, id, name);
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    expect(await nameOf(tenant, id)).toBe(name);
  });

  it("when the new name is its own name in another case, then 204", async () => {
    const name = freshName("Case");
    const id = await newDataset(tenant, name);
    const res = await rename(tenant, id, name.toUpperCase());
    expect(res.status).toBe(204);
    expect(await nameOf(tenant, id)).toBe(name.toUpperCase());
  });

  it("when another dataset of the account has that name (in another case), then 409 and the name stays", async () => {
    const name = freshName();
    const id = await newDataset(tenant, name);
    const res = await rename(tenant, id, "acme WEBSITE");
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: "conflict", message: expect.any(String) });
    expect(await nameOf(tenant, id)).toBe(name);
  });

  it("when the dataset is another account's, then 404 and it keeps its name", async () => {
    const res = await rename(tenant, other.datasets[1], freshName("Hijacked"));
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "not_found", message: expect.any(String) });
    expect(await nameOf(other, other.datasets[1])).toBe("Globex shop");
  });

  it("when the dataset does not exist, then 404", async () => {
    const res = await rename(tenant, "ds_doesnotexist", freshName());
    expect(res.status).toBe(404);
    expect(res.body.error).toBe("not_found");
  });

  it("when the acting user is a member (even one who reaches the dataset), then 403 and the name stays", async () => {
    const res = await rename(tenant, tenant.datasets[0], freshName(), tenant.member.email);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: "forbidden", message: expect.any(String) });
    expect(await nameOf(tenant, tenant.datasets[0])).toBe("Acme website");
  });

  it("when humanName is missing, then 400 naming the query field", async () => {
    const res = await api
      .request()
      .put(`/v1/datasets/${tenant.datasets[1]}/name?${q(tenant.admin.email)}`)
      .set(as(tenant.key));
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("validation_failed");
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "query", field: "humanName" }));
  });

  it("when humanName is blank, then 400", async () => {
    const res = await rename(tenant, tenant.datasets[1], "   ");
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "query", field: "humanName" }));
    expect(await nameOf(tenant, tenant.datasets[1])).toBe("Acme shop");
  });
});

describe("updateFormTracking", () => {
  type Settings = Record<string, string | boolean>;
  const put = (t: Tenant, datasetId: string, settings: Settings, email = t.admin.email) =>
    api
      .request()
      .put(`/v1/datasets/${datasetId}/form-tracking`)
      .query({ ...settings, email })
      .set(as(t.key));
  const stored = (id: string) =>
    api.db.prisma.dataset.findUnique({
      where: { id },
      select: { formTracking: true, partialFormTracking: true, contactEnrichment: true, allowIpMasking: true, formInputAttribute: true },
    });
  const all = {
    formTracking: true,
    partialFormTracking: true,
    contactEnrichment: true,
    allowIpMasking: true,
    formInputAttribute: "data-field",
  };

  it("when an admin sets all five settings, then 204 and all are stored", async () => {
    const id = await newDataset(tenant);
    const res = await put(tenant, id, all);
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    expect(await stored(id)).toEqual(all);
  });

  it("when partialFormTracking and contactEnrichment are omitted, then they are reset to false", async () => {
    const id = await newDataset(tenant);
    expect((await put(tenant, id, all)).status).toBe(204);
    const res = await put(tenant, id, { formTracking: false, allowIpMasking: true, formInputAttribute: "name" });
    expect(res.status).toBe(204);
    expect(await stored(id)).toEqual({
      formTracking: false,
      partialFormTracking: false,
      contactEnrichment: false,
      allowIpMasking: true,
      formInputAttribute: "name",
    });
  });

  it("when formTracking is not a boolean, then 400 naming it and nothing changes", async () => {
    const id = await newDataset(tenant);
    const before = await stored(id);
    const res = await put(tenant, id, { ...all, formTracking: "maybe" });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("validation_failed");
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "query", field: "formTracking" }));
    expect(await stored(id)).toEqual(before);
  });

  it("when allowIpMasking is missing, then 400 naming it", async () => {
    const id = await newDataset(tenant);
    const { allowIpMasking: _omitted, ...rest } = all;
    const res = await put(tenant, id, rest);
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "query", field: "allowIpMasking" }));
    expect(await stored(id)).toMatchObject({ formTracking: false, allowIpMasking: false });
  });

  it("when the dataset does not exist, then 404", async () => {
    const res = await put(tenant, "ds_doesnotexist", all);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "not_found", message: expect.any(String) });
  });

  it("when the dataset is another account's, then 404 and its settings stay", async () => {
    const before = await stored(other.datasets[0]);
    const res = await put(tenant, other.datasets[0], all);
    expect(res.status).toBe(404);
    expect(res.body.error).toBe("not_found");
    expect(await stored(other.datasets[0])).toEqual(before);
  });

  it("when the acting user is a member, then 403 and nothing changes", async () => {
    const before = await stored(tenant.datasets[0]);
    const res = await put(tenant, tenant.datasets[0], all, tenant.member.email);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: "forbidden", message: expect.any(String) });
    expect(await stored(tenant.datasets[0])).toEqual(before);
  });
});
