// The key check reads a key's record at most once per KEY_CACHE_MS per process: a revocation or
// a licence change made by another process (the operator CLI, another instance) takes effect
// within that bound; one made through this process's services at once (test/auth.test.ts).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY_CACHE_MS } from "../server/services/accounts.ts";
import { startTestApi, type TestApi } from "./support/api.ts";
import { eventually } from "./support/eventually.ts";
import { createTenant, type Tenant } from "./support/tenants.ts";

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api?.close());

const userDatasets = (t: Tenant) =>
  api.request().get(`/v1/user-datasets?accountId=${t.accountId}&email=${encodeURIComponent(t.admin.email)}`).set("x-api-key", t.key);

/** Milliseconds from now until the tenant's requests get `status` (waited for at most twice the bound). */
async function millisUntil(t: Tenant, status: number): Promise<number> {
  const started = performance.now();
  await eventually(async () => expect((await userDatasets(t)).status).toBe(status), { timeoutMs: 2 * KEY_CACHE_MS });
  return performance.now() - started;
}

describe("getUserDatasets after a change made by another process", () => {
  it(`when the key is revoked or the licence lapses in the database directly, then requests are refused within ${KEY_CACHE_MS / 1000} s`, async () => {
    const [revoked, lapsed] = [await createTenant(api.services, "Revoked"), await createTenant(api.services, "Lapsed")];
    for (const t of [revoked, lapsed]) expect((await userDatasets(t)).status).toBe(200); // both records are now cached
    await api.db.prisma.apiKey.updateMany({ where: { accountId: revoked.accountId }, data: { revokedAt: new Date() } });
    await api.db.prisma.account.update({ where: { id: lapsed.accountId }, data: { licenceValidUntil: new Date(Date.now() - 1000) } });
    const [untilRevoked, untilLapsed] = await Promise.all([millisUntil(revoked, 401), millisUntil(lapsed, 403)]);
    expect(untilRevoked).toBeLessThanOrEqual(KEY_CACHE_MS + 500);
    expect(untilLapsed).toBeLessThanOrEqual(KEY_CACHE_MS + 500);
  }, 30_000);
});
