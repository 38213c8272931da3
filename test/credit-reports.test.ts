// credit-reporting-controller: getCreditUsageTimeSeries and getCreditUsageSummary, computed from
// the ledger. The ledger is written by real charges (the credit service) at chosen times.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApi, type TestApi } from "./support/api.ts";
import { createTenant, type Tenant } from "./support/tenants.ts";
import * as credits from "../server/services/credits.ts";
import * as accounts from "../server/services/accounts.ts";

let api: TestApi;
let tenant: Tenant;
let other: Tenant;
let keyId: string;

/** Charges `count` credits one by one to the dataset at `at`. */
async function charge(t: Tenant, datasetIndex: 0 | 1, at: string, count = 1): Promise<void> {
  for (let i = 0; i < count; i++) {
    await credits.charge(api.services, { accountId: t.accountId, datasetId: t.datasets[datasetIndex], at: new Date(at), operation: "lookupEmail", keyId });
  }
}

beforeAll(async () => {
  api = await startTestApi();
  tenant = await createTenant(api.services, "Acme");
  other = await createTenant(api.services, "Globex");
  keyId = (await api.db.prisma.apiKey.findFirstOrThrow({ where: { accountId: tenant.accountId } })).id;
  for (const id of [...tenant.datasets, ...other.datasets]) await credits.setMonthlyLimit(api.services, id, 100);
  // 2026-01-29 is a Thursday; weeks start on Mondays 2026-01-26 and 2026-02-02
  await charge(tenant, 0, "2026-01-01T08:00:00Z"); // before the period
  await charge(tenant, 0, "2026-01-27T08:00:00Z"); // in the first week's bucket, but before `from`
  await charge(tenant, 0, "2026-01-30T10:00:00Z", 2);
  await charge(tenant, 0, "2026-01-31T23:59:59.999Z");
  await charge(tenant, 0, "2026-02-01T00:00:00.000Z");
  await charge(tenant, 0, "2026-02-03T12:00:00Z", 3);
  await charge(tenant, 1, "2026-01-31T12:00:00Z");
  await charge(tenant, 1, "2026-02-02T00:00:00Z", 2);
  await charge(tenant, 1, "2026-02-05T00:00:00Z"); // after the period
  await charge(other, 0, "2026-01-30T10:00:00Z", 5); // another account: never in these reports
});
afterAll(() => api?.close());

const period = { from: "2026-01-29", to: "2026-02-04" };

const timeseries = (t: Tenant, body: object) => api.request().post("/api/credits/usage/timeseries").set("x-api-key", t.key).send(body);
const summary = (t: Tenant, body: object) => api.request().post("/api/credits/usage/summary").set("x-api-key", t.key).send(body);

const days = (pairs: [string, number][]) => pairs.map(([date, credits]) => ({ date, credits }));

describe("getCreditUsageTimeSeries", () => {
  it("when asked per day for the account, then every day of the period is present, 0 where nothing was charged", async () => {
    const res = await timeseries(tenant, period);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ...period,
      granularity: "day",
      datasetId: null,
      data: days([
        ["2026-01-29", 0],
        ["2026-01-30", 2],
        ["2026-01-31", 2],
        ["2026-02-01", 1],
        ["2026-02-02", 2],
        ["2026-02-03", 3],
        ["2026-02-04", 0],
      ]),
    });
  });

  it("when asked for one dataset, then only its charges count", async () => {
    const res = await timeseries(tenant, { ...period, datasetId: tenant.datasets[1], granularity: "day" });
    expect(res.status).toBe(200);
    expect(res.body.datasetId).toBe(tenant.datasets[1]);
    expect(res.body.data).toEqual(
      days([
        ["2026-01-29", 0],
        ["2026-01-30", 0],
        ["2026-01-31", 1],
        ["2026-02-01", 0],
        ["2026-02-02", 2],
        ["2026-02-03", 0],
        ["2026-02-04", 0],
      ]),
    );
  });

  it("when asked per week, then buckets start on Monday and count only charges within the period", async () => {
    const res = await timeseries(tenant, { ...period, granularity: "week" });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual(days([["2026-01-26", 5], ["2026-02-02", 5]]));
  });

  it("when asked per month, then charges on either side of the month's end fall into their own months", async () => {
    const res = await timeseries(tenant, { ...period, granularity: "month", datasetId: tenant.datasets[0] });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual(days([["2026-01-01", 3], ["2026-02-01", 4]]));
  });

  it("when nothing was charged in the period, then every bucket is 0", async () => {
    const res = await timeseries(tenant, { from: "2025-12-01", to: "2025-12-03" });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual(days([["2025-12-01", 0], ["2025-12-02", 0], ["2025-12-03", 0]]));
  });

  it("when the period spans exactly 366 days, then 200 with 366 daily buckets", async () => {
    const res = await timeseries(tenant, { from: "2025-03-01", to: "2026-03-01" });
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(366);
    expect(res.body.data.reduce((sum: number, d: { credits: number }) => sum + d.credits, 0)).toBe(13);
  });

  it.each([
    ["a date that does not exist", { from: "2026-02-30", to: "2026-03-01" }, "from"],
    ["an unknown granularity", { ...period, granularity: "hour" }, "granularity"],
    ["a missing to", { from: "2026-02-01" }, "to"],
  ])("when the body has %s, then 400 naming the field", async (_case, body, field) => {
    const res = await timeseries(tenant, body);
    expect(res.status).toBe(400);
    expect(res.body.message).toBe("error.validation_failed");
    expect(Object.keys(res.body.params).join(" ")).toContain(field);
  });
});

describe("getCreditUsageSummary", () => {
  it("when asked for the account over two calendar months, then per dataset (oldest first) the limit of both months, used and remaining, with totals", async () => {
    const res = await summary(tenant, period);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      ...period,
      datasets: [
        { datasetId: tenant.datasets[0], datasetName: "Acme website", monthlyLimit: 100, limit: 200, used: 7, remaining: 193 },
        { datasetId: tenant.datasets[1], datasetName: "Acme shop", monthlyLimit: 100, limit: 200, used: 3, remaining: 197 },
      ],
      totals: { limit: 400, used: 10, remaining: 390 },
    });
  });

  it("when asked for one dataset within one month, then its monthly limit and what it used that month", async () => {
    const res = await summary(tenant, { from: "2026-02-01", to: "2026-02-28", datasetId: tenant.datasets[0] });
    expect(res.status).toBe(200);
    expect(res.body.datasets).toEqual([
      { datasetId: tenant.datasets[0], datasetName: "Acme website", monthlyLimit: 100, limit: 100, used: 4, remaining: 96 },
    ]);
    expect(res.body.totals).toEqual({ limit: 100, used: 4, remaining: 96 });
  });

  it("when a dataset used more than a lowered limit, then remaining is 0, not negative", async () => {
    const t = await createTenant(api.services, "Lowered");
    await charge(t, 0, "2026-02-10T00:00:00Z", 3);
    await credits.setMonthlyLimit(api.services, t.datasets[0], 2);
    const res = await summary(t, { from: "2026-02-01", to: "2026-02-28", datasetId: t.datasets[0] });
    expect(res.body.datasets[0]).toMatchObject({ limit: 2, used: 3, remaining: 0 });
  });

});

// The errors both operations share: ParameterizedErrorVM for a 400 (naming the parameter), ErrorVM otherwise.
for (const [operationId, send] of [
  ["getCreditUsageTimeSeries", timeseries],
  ["getCreditUsageSummary", summary],
] as const) {
  describe(operationId, () => {
    it("when from is after to, then 400 ParameterizedErrorVM naming from", async () => {
      const res = await send(tenant, { from: "2026-02-02", to: "2026-02-01" });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message: "error.validation_failed", params: { from: "must not be after to" } });
    });

    it("when the period spans more than 366 days, then 400 naming to", async () => {
      const res = await send(tenant, { from: "2025-03-01", to: "2026-03-02" });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message: "error.validation_failed", params: { to: expect.stringContaining("367 days") } });
    });

    it("when the dataset is another account's, then 404 ErrorVM", async () => {
      const res = await send(tenant, { ...period, datasetId: other.datasets[0] });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: "error.not_found", description: expect.any(String) });
    });

    it("when the licence has lapsed, then 403 ErrorVM", async () => {
      const lapsed = await createTenant(api.services, `Lapsed ${operationId}`);
      await accounts.setLicence(api.services, lapsed.accountId, new Date(Date.now() - 86_400_000));
      const res = await send(lapsed, period);
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ message: "error.no_valid_licence", description: expect.any(String) });
    });
  });
}

describe("the reports and the ledger", () => {
  it("when many charges are spread over three months and two datasets, then every report adds up to the ledger exactly", async () => {
    const t = await createTenant(api.services, "Busy");
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 120; i++) {
      const at = new Date(Date.UTC(2026, 0, 1) + Math.floor(next() * 90 * 86_400_000));
      await charge(t, next() < 0.6 ? 0 : 1, at.toISOString());
    }
    const entries = await api.db.prisma.creditLedgerEntry.findMany({ where: { accountId: t.accountId } });
    const ledgerSum = (from: string, to: string, datasetId?: string) =>
      entries
        .filter((e) => (!datasetId || e.datasetId === datasetId) && e.createdAt.toISOString().slice(0, 10) >= from && e.createdAt.toISOString().slice(0, 10) <= to)
        .reduce((sum, e) => sum + e.credits, 0);
    const seriesSum = (body: { data: { credits: number }[] }) => body.data.reduce((sum, d) => sum + d.credits, 0);

    for (const [from, to] of [["2026-01-01", "2026-03-31"], ["2026-01-15", "2026-02-14"], ["2026-02-28", "2026-03-01"]] as const) {
      for (const datasetId of [undefined, t.datasets[0], t.datasets[1]]) {
        const expected = ledgerSum(from, to, datasetId);
        for (const granularity of ["day", "week", "month"]) {
          const res = await timeseries(t, { from, to, datasetId, granularity });
          expect(seriesSum(res.body), `${granularity} ${from}..${to} ${datasetId}`).toBe(expected);
        }
        const s = await summary(t, { from, to, datasetId });
        expect(s.body.totals.used).toBe(expected);
      }
    }
    // and per day, bucket by bucket
    const daily = await timeseries(t, { from: "2026-01-01", to: "2026-03-31" });
    for (const { date, credits } of daily.body.data as { date: string; credits: number }[]) expect(credits).toBe(ledgerSum(date, date));
    expect(entries.length).toBe(120);
  });
});
