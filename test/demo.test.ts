// The demo account of `npm start`: leads, segments and an exclusion rule that work out of the box.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type Demo, DEMO_COMPETITOR_DOMAIN, ensureDemo } from "../server/demo.ts";
import * as segmentPreferences from "../server/services/segment-preferences.ts";
import * as leads from "../server/services/leads.ts";
import { generateLeads } from "../server/lead-generator.ts";
import { startTestApi, type TestApi } from "./support/api.ts";

// the seed's leads and last step, made to fail once below as a kill at that moment would leave the seed
vi.mock("../server/services/segment-preferences.ts", async (importOriginal) => {
  const original = await importOriginal<typeof import("../server/services/segment-preferences.ts")>();
  return { ...original, set: vi.fn(original.set) };
});
vi.mock("../server/services/leads.ts", async (importOriginal) => {
  const original = await importOriginal<typeof import("../server/services/leads.ts")>();
  return { ...original, insertLeads: vi.fn(original.insertLeads) };
});

let api: TestApi;
let demo: Demo;

beforeAll(async () => {
  api = await startTestApi();
  demo = await ensureDemo(api.services);
});
afterAll(() => api?.close());

const as = () => ({ "x-api-key": demo.key });

describe("demo account", () => {
  it("when the demo is created, then its first dataset lists its leads, newest first, without the excluded competitor", async () => {
    const datasetId = demo.datasetIds[0]!;
    expect(await api.db.prisma.lead.count({ where: { datasetId } })).toBe(302);
    const seen: { organizationDomain: string | null; lastVisitAt: string }[] = [];
    let cursor: string | null = null;
    const page = (from: string | null) =>
      api.request().get("/v1/leads").query({ email: demo.adminEmail, datasetId, limit: 500, ...(from ? { cursor: from } : {}) }).set(as());
    do {
      const res = await page(cursor);
      expect(res.status).toBe(200);
      seen.push(...res.body.data);
      cursor = res.body.nextCursor;
    } while (cursor);
    expect(seen).toHaveLength(300);
    expect(seen.some((l) => l.organizationDomain === DEMO_COMPETITOR_DOMAIN)).toBe(false);
    const times = seen.map((l) => Date.parse(l.lastVisitAt));
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it("when the demo's segments are listed and applied, then each selects the leads its filter describes", async () => {
    const datasetId = demo.datasetIds[0]!;
    const segments = await api
      .request()
      .get("/v1/segments")
      .query({ email: demo.adminEmail, accountId: demo.accountId, datasetId })
      .set(as());
    expect(segments.body.data.map((s: { name: string }) => s.name)).toEqual(["German enterprise visitors", "Hot software leads"]);
    const german = segments.body.data[0].segmentId as number;
    const res = await api.request().get("/v1/leads").query({ email: demo.adminEmail, datasetId, segmentId: german, limit: 500 }).set(as());
    expect(res.body.data.length).toBeGreaterThan(0);
    for (const lead of res.body.data) {
      expect(lead.country).toBe("DE");
      expect(lead.employeeCount).toBeGreaterThanOrEqual(500);
    }
  });

  it("when the demo is ensured again, then no second account or second set of leads is made", async () => {
    const again = await ensureDemo(api.services);
    expect(again.accountId).toBe(demo.accountId);
    expect(await api.db.prisma.lead.count({ where: { accountId: demo.accountId } })).toBe(302);
  });

  it("when leads are generated twice from one seed and end, then they are identical", () => {
    const end = new Date("2026-01-01T00:00:00Z");
    expect(generateLeads({ count: 50, seed: 9, end })).toEqual(generateLeads({ count: 50, seed: 9, end }));
    expect(generateLeads({ count: 50, seed: 9, end })).not.toEqual(generateLeads({ count: 50, seed: 10, end }));
  });
});

describe("demo account, interrupted", () => {
  let fresh: TestApi;
  beforeAll(async () => (fresh = await startTestApi()));
  afterAll(() => fresh?.close());

  /** The services, with one step of the seed failing as a kill at that moment would leave it. */
  function failingAt(step: "leads" | "segments"): TestApi["services"] {
    const { services } = fresh;
    const killed = new Error("killed while seeding");
    if (step === "segments") vi.mocked(segmentPreferences.set).mockRejectedValueOnce(killed);
    else vi.mocked(leads.insertLeads).mockRejectedValueOnce(killed);
    return services;
  }

  it("when the seed stops after the account is made, then the next start ends with a complete demo account", async () => {
    for (const step of ["leads", "segments"] as const) {
      await expect(ensureDemo(failingAt(step))).rejects.toThrow("killed while seeding");
    }
    const demo = await ensureDemo(fresh.services);
    const { prisma } = fresh.db;
    expect(await prisma.account.count({ where: { memberships: { some: { user: { email: demo.adminEmail } } } } })).toBe(1);
    const [website] = demo.datasetIds;
    expect(demo.datasetIds).toHaveLength(2);
    expect(await prisma.lead.count({ where: { datasetId: website } })).toBe(302);
    expect(await prisma.segment.count({ where: { datasetId: website } })).toBe(2);
    expect(await prisma.segmentPreference.count({ where: { datasetId: website } })).toBe(1);
    expect(await prisma.lead.count({ where: { datasetId: website, assigneeUserId: { not: null } } })).toBe(5);
    const users = await fresh.request().get("/v1/users").query({ email: demo.adminEmail }).set({ "x-api-key": demo.key });
    expect(users.status).toBe(200);
    expect(users.body.data).toHaveLength(3);
  });
});
