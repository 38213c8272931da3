// Bulk look-up (bulkLookupEmail): up to 100 addresses, a result per item, one credit per profile
// found charged to one dataset in one ledger entry, the credit limit exact under concurrency.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPartnerClient } from "../client/index.ts";
import type { ContactProfile } from "../server/contacts/profile.ts";
import { startTestApi, type TestApi } from "./support/api.ts";
import { createTenant, type Tenant } from "./support/tenants.ts";
import * as contacts from "../server/services/contacts.ts";
import * as credits from "../server/services/credits.ts";

const clock = new Date("2026-05-12T09:00:00.000Z");

let api: TestApi;
let baseUrl: string;

const people: ContactProfile[] = Array.from({ length: 5 }, (_, i) => ({
  email: `person${i}@bulk.example`,
  fullName: `Person Number${i}`,
  languages: [],
  experience: [{ title: "Buyer", companyName: `Company ${i}`, current: true }],
}));

beforeAll(async () => {
  api = await startTestApi({ now: () => clock });
  await contacts.upsertMany(api.services, people);
  baseUrl = await api.listen();
});
afterAll(async () => {
  await api?.close();
});

/** A tenant of its own whose first dataset may spend `limit` credits a month. */
async function tenantWithLimit(name: string, limit: number): Promise<Tenant> {
  const t = await createTenant(api.services, name);
  for (const ds of t.datasets) await credits.setMonthlyLimit(api.services, ds, ds === t.datasets[0] ? limit : 0);
  return t;
}

const bulk = (t: Tenant, items: object[], headers: Record<string, string> = {}) =>
  api.request().post(`/v1/email-lookup/bulk?datasetId=${t.datasets[0]}`).set({ "x-api-key": t.key, ...headers }).send({ items });

async function spent(t: Tenant) {
  const entries = await api.db.prisma.creditLedgerEntry.findMany({ where: { accountId: t.accountId } });
  const usage = await api.db.prisma.creditUsage.findMany({ where: { datasetId: t.datasets[0] } });
  return { ledger: entries.reduce((n, e) => n + e.credits, 0), entries: entries.length, used: usage[0]?.used ?? 0 };
}

describe("bulkLookupEmail", () => {
  it("when items are found, missed, contradicted, invalid and repeated, then each has its result in order and each address found is charged once", async () => {
    const t = await tenantWithLimit("Mix", 10);
    const res = await bulk(t, [
      { email: people[0]!.email },
      { email: "nobody@bulk.example" },
      { email: people[1]!.email, lastName: "Someone Else" },
      { email: "not-an-address" },
      { email: people[2]!.email.toUpperCase(), lastName: "Number2" },
      { email: people[0]!.email },
    ]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      results: [
        { status: "found", charged: true, profile: people[0] },
        { status: "not_found", charged: false },
        { status: "not_found", charged: false },
        { status: "invalid", charged: false, error: expect.any(String) },
        { status: "found", charged: true, profile: people[2] },
        { status: "found", charged: false, profile: people[0] },
      ],
      charged: 2,
      datasetId: t.datasets[0],
    });
    expect(await spent(t)).toEqual({ ledger: 2, entries: 1, used: 2 });
  });

  it("when the credit runs out in the middle of a request, then the items after it are no_credit without their profile", async () => {
    const t = await tenantWithLimit("Short", 2);
    const res = await bulk(t, people.slice(0, 4).map(({ email }) => ({ email })));
    expect(res.status).toBe(200);
    expect(res.body.results.map((r: { status: string; charged: boolean }) => [r.status, r.charged])).toEqual([
      ["found", true],
      ["found", true],
      ["no_credit", false],
      ["no_credit", false],
    ]);
    expect(res.body.results[2]).not.toHaveProperty("profile");
    expect(res.body.charged).toBe(2);
    expect(await spent(t)).toEqual({ ledger: 2, entries: 1, used: 2 });
  });

  it("when no credit is left, then 402 and nothing is charged", async () => {
    const t = await tenantWithLimit("Broke", 0);
    const res = await bulk(t, [{ email: people[0]!.email }]);
    expect(res.status).toBe(402);
    expect(res.body.error).toBe("credit_limit_exceeded");
    expect(await spent(t)).toEqual({ ledger: 0, entries: 0, used: 0 });
  });

  it("when the dataset is another account's, then 404 and nothing is charged", async () => {
    const t = await tenantWithLimit("Mine", 5);
    const other = await tenantWithLimit("Theirs", 5);
    const res = await api.request().post(`/v1/email-lookup/bulk?datasetId=${other.datasets[0]}`).set("x-api-key", t.key).send({ items: [{ email: people[0]!.email }] });
    expect(res.status).toBe(404);
    expect(await spent(other)).toEqual({ ledger: 0, entries: 0, used: 0 });
  });

  it("when there are more than 100 items or none, then 400 naming items", async () => {
    const t = await tenantWithLimit("Many", 5);
    for (const items of [Array.from({ length: 101 }, (_, i) => ({ email: `a${i}@bulk.example` })), []]) {
      const res = await bulk(t, items);
      expect(res.status).toBe(400);
      expect(JSON.stringify(res.body.details)).toContain("items");
    }
  });

  it("when a request is retried with its Idempotency-Key, then the first answer comes back and nothing more is charged; another request with the key is 409", async () => {
    const t = await tenantWithLimit("Retry", 10);
    const items = [{ email: people[3]!.email }, { email: people[4]!.email }];
    const first = await bulk(t, items, { "Idempotency-Key": "bulk-retry-1" });
    const again = await bulk(t, items, { "Idempotency-Key": "bulk-retry-1" });
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect(await spent(t)).toEqual({ ledger: 2, entries: 1, used: 2 });
    const reused = await bulk(t, items.slice(0, 1), { "Idempotency-Key": "bulk-retry-1" });
    expect(reused.status).toBe(409);
  });

  it("when 50 bulk requests race for a limit of 7, then exactly 7 profiles are charged and the answers say which", async () => {
    const t = await tenantWithLimit("Race", 7);
    const items = people.slice(0, 3).map(({ email }) => ({ email }));
    const answers = await Promise.all(Array.from({ length: 50 }, () => bulk(t, items)));
    for (const res of answers) expect([200, 402]).toContain(res.status);
    const ok = answers.filter((res) => res.status === 200);
    const chargedItems = ok.flatMap((res) => res.body.results).filter((r: { charged: boolean }) => r.charged).length;
    expect(chargedItems).toBe(7);
    expect(ok.reduce((n, res) => n + res.body.charged, 0)).toBe(7);
    for (const res of ok) {
      for (const r of res.body.results) expect(r.status === "found" ? r.charged : r.status === "no_credit").toBe(true);
    }
    expect((await spent(t)).used).toBe(7);
    expect((await spent(t)).ledger).toBe(7);
  });

  it("when the typed client sends a bulk look-up, then the results are typed", async () => {
    const t = await tenantWithLimit("Client", 5);
    const client = createPartnerClient({ baseUrl, apiKey: t.key, retry: false });
    const { data, error } = await client.POST("/v1/email-lookup/bulk", {
      params: { query: { datasetId: t.datasets[0] } },
      body: { items: [{ email: people[1]!.email }, { email: "missing@bulk.example" }] },
    });
    expect(error).toBeUndefined();
    const statuses: ("found" | "not_found" | "invalid" | "no_credit")[] = data!.results.map((r) => r.status);
    expect(statuses).toEqual(["found", "not_found"]);
    expect(data!.results[0]!.profile?.fullName).toBe(people[1]!.fullName);
  });
});
