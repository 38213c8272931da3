// Authentication and licence, through one implemented operation (getUserDatasets): 401 for a
// missing, invalid, revoked or expired key, 403 `no_valid_licence`, and lastUsedAt.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestApi } from "./support/api.ts";
import { startWithTenants } from "./support/suite.ts";
import { createTenant, type Tenant } from "./support/tenants.ts";
import * as accounts from "../server/services/accounts.ts";

let api: TestApi;
let tenant: Tenant;

beforeAll(async () => ({ api, tenant } = await startWithTenants()));
afterAll(() => api?.close());

const DAY_MS = 86_400_000;

/** getUserDatasets for the tenant's admin, with the given key header (none when undefined). */
function listDatasets(t: Tenant, key?: string) {
  const req = api.request().get(`/v1/user-datasets?accountId=${t.accountId}&email=${encodeURIComponent(t.admin.email)}`);
  return key === undefined ? req : req.set("x-api-key", key);
}

/** The body is exactly {error, message}, with the given error code and a non-empty message. */
function expectErrorBody(body: unknown, error: string) {
  expect(body).toEqual({ error, message: expect.any(String) });
  expect(Object.keys(body as object).sort()).toEqual(["error", "message"]);
  expect((body as { message: string }).message.length).toBeGreaterThan(0);
}

const keyInfo = async (accountId: string, keyId: string) =>
  (await accounts.listApiKeys(api.services, accountId)).find((k) => k.id === keyId);

describe("getUserDatasets", () => {
  it("when the x-api-key header is missing, then 401 missing_api_key", async () => {
    const res = await listDatasets(tenant);
    expect(res.status).toBe(401);
    expectErrorBody(res.body, "missing_api_key");
  });

  it("when the x-api-key header is empty, then 401 missing_api_key", async () => {
    const res = await listDatasets(tenant, "");
    expect(res.status).toBe(401);
    expectErrorBody(res.body, "missing_api_key");
  });

  it("when the key is not one the operator issued, then 401 invalid_api_key", async () => {
    const res = await listDatasets(tenant, `${tenant.key}x`);
    expect(res.status).toBe(401);
    expectErrorBody(res.body, "invalid_api_key");
  });

  it("when the key was revoked, then 401 revoked_api_key and lastUsedAt is not set", async () => {
    const { key, info } = await accounts.createApiKey(api.services, tenant.accountId, "to revoke");
    expect((await listDatasets(tenant, key)).status).toBe(200);
    const usedAt = (await keyInfo(tenant.accountId, info.id))?.lastUsedAt;
    expect(await accounts.revokeApiKey(api.services, info.id)).toBe(true);
    const res = await listDatasets(tenant, key);
    expect(res.status).toBe(401);
    expectErrorBody(res.body, "revoked_api_key");
    const after = await keyInfo(tenant.accountId, info.id);
    expect(after?.revokedAt).toBeInstanceOf(Date);
    expect(after?.lastUsedAt).toEqual(usedAt);
  });

  it("when the key expired, then 401 expired_api_key and lastUsedAt stays empty", async () => {
    const { key, info } = await accounts.createApiKey(api.services, tenant.accountId, "expired", new Date(Date.now() - DAY_MS));
    const res = await listDatasets(tenant, key);
    expect(res.status).toBe(401);
    expectErrorBody(res.body, "expired_api_key");
    expect((await keyInfo(tenant.accountId, info.id))?.lastUsedAt).toBeNull();
  });

  it("when the key expires in the future, then 200", async () => {
    const { key } = await accounts.createApiKey(api.services, tenant.accountId, "expires later", new Date(Date.now() + DAY_MS));
    const res = await listDatasets(tenant, key);
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(2);
  });

  it("when the account's licence has expired, then 403 no_valid_licence", async () => {
    const unlicensed = await createTenant(api.services, "Lapsed");
    expect((await listDatasets(unlicensed, unlicensed.key)).status).toBe(200);
    await accounts.setLicence(api.services, unlicensed.accountId, new Date(Date.now() - DAY_MS));
    const res = await listDatasets(unlicensed, unlicensed.key);
    expect(res.status).toBe(403);
    expectErrorBody(res.body, "no_valid_licence");
    // the same key of a licensed account is unaffected
    expect((await listDatasets(tenant, tenant.key)).status).toBe(200);
  });

  it("when the licence has expired and the key is invalid too, then 401 wins", async () => {
    const unlicensed = await createTenant(api.services, "Lapsed too");
    await accounts.setLicence(api.services, unlicensed.accountId, new Date(Date.now() - DAY_MS));
    const res = await listDatasets(unlicensed, "lik_not_a_real_key");
    expect(res.status).toBe(401);
    expectErrorBody(res.body, "invalid_api_key");
  });

  it("when the licence has expired and the request is invalid too, then the licence's 403 wins over 400", async () => {
    const unlicensed = await createTenant(api.services, "Lapsed and invalid");
    await accounts.setLicence(api.services, unlicensed.accountId, new Date(Date.now() - DAY_MS));
    const res = await api
      .request()
      .get(`/v1/user-datasets?accountId=${unlicensed.accountId}&email=not-an-address`)
      .set("x-api-key", unlicensed.key);
    expect(res.status).toBe(403);
    expectErrorBody(res.body, "no_valid_licence");
  });

  it("when a call succeeds, then the key's lastUsedAt is set", async () => {
    const { key, info } = await accounts.createApiKey(api.services, tenant.accountId, "fresh");
    expect(info.lastUsedAt).toBeNull();
    expect((await keyInfo(tenant.accountId, info.id))?.lastUsedAt).toBeNull();
    const before = new Date();
    const res = await listDatasets(tenant, key);
    expect(res.status).toBe(200);
    const after = await keyInfo(tenant.accountId, info.id);
    expect(after?.lastUsedAt).toBeInstanceOf(Date);
    expect(after!.lastUsedAt!.getTime()).toBeGreaterThanOrEqual(before.getTime());
  });
});
