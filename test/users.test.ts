// User Management: updateUserName, addUser, resendInvite.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestApi } from "./support/api.ts";
import { as, startWithTenants } from "./support/suite.ts";
import { type Tenant, uniqueEmail } from "./support/tenants.ts";

let api: TestApi;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => ({ api, tenant, other } = await startWithTenants()));
afterAll(() => api?.close());

/** The account's members as listUsers answers its admin. */
async function members(t = tenant): Promise<{ userId: number; email: string; name: string; role: string; invitationState: string }[]> {
  const res = await api.request().get("/v1/users").query({ email: t.admin.email, limit: 500 }).set(as(t.key));
  expect(res.status).toBe(200);
  return res.body.data;
}
const nameOf = async (userId: number) => (await members()).find((m) => m.userId === userId)?.name;

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

  it("when the acting e-mail carries a raw @ or %40, then both are accepted and each user is added", async () => {
    const viaRaw = uniqueEmail("raw");
    const viaEncoded = uniqueEmail("encoded");
    const raw = await api
      .request()
      .post("/v1/users?email=" + tenant.admin.email)
      .set(as(tenant.key))
      .send({ email: viaRaw, name: "Raw At" });
    const encoded = await api
      .request()
      .post("/v1/users?email=" + encodeURIComponent(tenant.admin.email))
      .set(as(tenant.key))
      .send({ email: viaEncoded, name: "Encoded At" });
    expect(encodeURIComponent(tenant.admin.email)).toContain("%40");
    expect(raw.status).toBe(204);
    expect(encoded.status).toBe(204);
    const added = (await members())
      .filter((m) => [viaRaw.toLowerCase(), viaEncoded.toLowerCase()].includes(m.email))
      .map(({ name, role, invitationState }) => ({ name, role, invitationState }))
      .sort((a, b) => a.name.localeCompare(b.name));
    expect(added).toEqual([
      { name: "Encoded At", role: "member", invitationState: "invited" },
      { name: "Raw At", role: "member", invitationState: "invited" },
    ]);
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
    expect(await nameOf(tenant.member.id)).toBe("Maxine");
  });

  it("when the user belongs to another account, then 404", async () => {
    const res = await api.request().put(`/v1/users/${other.member.id}/name`).set(as(tenant.key)).send({ name: "Hacked" });
    expect(res.status).toBe(404);
  });

  it.each([
    ["empty", ""],
    ["over 200 characters", "n".repeat(201)],
  ])("when the name is %s, then 400 naming the body field and the name stays", async (_case, name) => {
    const before = await nameOf(tenant.admin.id);
    expect(before).toEqual(expect.any(String));
    const res = await api.request().put(`/v1/users/${tenant.admin.id}/name`).set(as(tenant.key)).send({ name });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("validation_failed");
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "body", field: "name" }));
    expect(await nameOf(tenant.admin.id)).toBe(before);
  });

  it("when the name is exactly 200 characters, then 204", async () => {
    const name = "m".repeat(200);
    const res = await api.request().put(`/v1/users/${tenant.admin.id}/name`).set(as(tenant.key)).send({ name });
    expect(res.status).toBe(204);
    expect(await nameOf(tenant.admin.id)).toBe(name);
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

  it("when the user id is not an integer, then 400 naming the path parameter", async () => {
    const res = await api
      .request()
      .get(`/v1/users/max/invite/resend?email=${encodeURIComponent(tenant.admin.email)}`)
      .set(as(tenant.key));
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "path", field: "userId" }));
  });

  it("when the user id is unknown, then 404 and no invitation is queued", async () => {
    const before = await api.db.prisma.invitation.count();
    const res = await api
      .request()
      .get(`/v1/users/987654321/invite/resend?email=${encodeURIComponent(tenant.admin.email)}`)
      .set(as(tenant.key));
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "not_found", message: expect.any(String) });
    expect(await api.db.prisma.invitation.count()).toBe(before);
  });

  it("when the user is another account's invited member, then 404", async () => {
    const res = await api
      .request()
      .get(`/v1/users/${other.member.id}/invite/resend?email=${encodeURIComponent(tenant.admin.email)}`)
      .set(as(tenant.key));
    expect(res.status).toBe(404);
    expect(res.body.error).toBe("not_found");
  });

  it("when the acting user is a member, not an admin, then 403 and no invitation is queued", async () => {
    const before = await api.db.prisma.invitation.count({ where: { userId: BigInt(tenant.member.id) } });
    const res = await api
      .request()
      .get(`/v1/users/${tenant.member.id}/invite/resend?email=${encodeURIComponent(tenant.member.email)}`)
      .set(as(tenant.key));
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: "forbidden", message: expect.any(String) });
    expect(await api.db.prisma.invitation.count({ where: { userId: BigInt(tenant.member.id) } })).toBe(before);
  });
});
