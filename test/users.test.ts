// User Management: updateUserName, addUser, resendInvite.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApi, type TestApi } from "./support/api.ts";
import { createTenant, type Tenant, uniqueEmail } from "./support/tenants.ts";

let api: TestApi;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api.services, "Acme");
  other = await createTenant(api.services, "Globex");
});
afterAll(() => api?.close());

const as = (key: string) => ({ "x-api-key": key });

describe("addUser", () => {
  it("when an admin adds a new e-mail with datasets, then the user is a member with access to them", async () => {
    const email = uniqueEmail("new");
    const res = await api
      .request()
      .post(`/v1/users?email=${tenant.admin.email}`)
      .set(as(tenant.key))
      .send({ email, name: "Nina New", datasetIds: [tenant.datasets[1]] });
    expect(res.status).toBe(204);
    const list = await api
      .request()
      .get("/v1/user-datasets")
      .query({ accountId: tenant.accountId, email })
      .set(as(tenant.key));
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([
      expect.objectContaining({ accountId: tenant.accountId, email: email.toLowerCase(), datasetId: tenant.datasets[1] }),
    ]);
  });

  it("when the e-mail is already a member (in another case), then 409", async () => {
    const res = await api
      .request()
      .post(`/v1/users?email=${tenant.admin.email}`)
      .set(as(tenant.key))
      .send({ email: tenant.member.email.toUpperCase(), name: "Again" });
    expect(res.status).toBe(409);
    expect(res.body.error).toBe("conflict");
  });

  it("when a dataset id is another account's, then 404 and nothing is written", async () => {
    const email = uniqueEmail("half");
    const res = await api
      .request()
      .post(`/v1/users?email=${tenant.admin.email}`)
      .set(as(tenant.key))
      .send({ email, name: "Half Written", datasetIds: [tenant.datasets[0], other.datasets[0]] });
    expect(res.status).toBe(404);
    expect(await api.db.prisma.user.count({ where: { email: email.toLowerCase() } })).toBe(0);
  });

  it("when the acting user is a member, not an admin, then 403", async () => {
    const res = await api
      .request()
      .post(`/v1/users?email=${tenant.member.email}`)
      .set(as(tenant.key))
      .send({ email: uniqueEmail("x"), name: "X" });
    expect(res.status).toBe(403);
  });

  it("when the body lacks the name, then 400 naming the field", async () => {
    const res = await api
      .request()
      .post(`/v1/users?email=${tenant.admin.email}`)
      .set(as(tenant.key))
      .send({ email: uniqueEmail("x") });
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "body", field: "name" }));
  });

  it("when the key is missing, then 401", async () => {
    const res = await api.request().post(`/v1/users?email=${tenant.admin.email}`).send({ email: uniqueEmail("x"), name: "X" });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: "missing_api_key", message: expect.any(String) });
  });
});

describe("updateUserName", () => {
  it("when the user is a member, then 204", async () => {
    const res = await api.request().put(`/v1/users/${tenant.member.id}/name`).set(as(tenant.key)).send({ name: "Maxine" });
    expect(res.status).toBe(204);
    const m = await api.db.prisma.membership.findFirst({ where: { accountId: tenant.accountId, userId: BigInt(tenant.member.id) } });
    expect(m?.name).toBe("Maxine");
  });

  it("when the user belongs to another account, then 404", async () => {
    const res = await api.request().put(`/v1/users/${other.member.id}/name`).set(as(tenant.key)).send({ name: "Hacked" });
    expect(res.status).toBe(404);
  });
});

describe("resendInvite", () => {
  it("when the member is still invited, then 204 and another invitation is queued", async () => {
    const before = await api.db.prisma.invitation.count({ where: { userId: BigInt(tenant.member.id) } });
    const res = await api
      .request()
      .get(`/v1/users/${tenant.member.id}/invite/resend?email=${encodeURIComponent(tenant.admin.email)}`)
      .set(as(tenant.key));
    expect(res.status).toBe(204);
    expect(await api.db.prisma.invitation.count({ where: { userId: BigInt(tenant.member.id) } })).toBe(before + 1);
  });

  it("when the member is active, then 409", async () => {
    const res = await api
      .request()
      .get(`/v1/users/${tenant.admin.id}/invite/resend?email=${tenant.admin.email}`)
      .set(as(tenant.key));
    expect(res.status).toBe(409);
  });
});
