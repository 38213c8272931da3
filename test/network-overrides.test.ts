// Operators' network types (server/services/networks.ts, `npm run admin -- networks ...`): set in one process,
// in effect in another within the cache time, seen in GET /v1/ip-lookup and by the collector;
// partners' exclusion rules still hide the leads.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServices } from "../server/services/index.ts";
import * as networks from "../server/services/networks.ts";
import { DomainError } from "../server/domain/errors.ts";
import { ADDRESSES, startTracking, type TrackingSuite } from "./support/tracking.ts";
import { as } from "./support/suite.ts";
import { testConfig } from "./support/config.ts";
import * as datasets from "../server/services/datasets.ts";

const TTL_MS = 60_000; // the default TRACKING_SETTINGS_TTL_SECONDS
const COMCAST = 7922; // ADDRESSES.isp
const GOOGLE = 15169; // ADDRESSES.hosting

let clock = Date.parse("2026-11-25T12:00:00Z");
const now = () => new Date(clock);
const pass = (ms: number) => {
  clock += ms;
};

let t: TrackingSuite;
/** Another process on the same database (the operator's CLI): its own services and cache. */
let operator: ReturnType<typeof createServices>;
beforeAll(async () => {
  t = await startTracking({}, { now });
  operator = createServices(t.api.db.prisma, { config: testConfig() });
});
afterAll(async () => {
  await t?.close();
});

const lookup = async (ip: string) => {
  const res = await t.api.request().get("/v1/ip-lookup").query({ ip }).set(as(t.tenant.key));
  expect(res.status).toBe(200);
  return { networkType: res.body.networkType, networkTypeSource: res.body.networkTypeSource };
};

describe("networks (operator)", () => {
  it("when a type is set in another process, then ip-lookup answers it as an override once the cache time has passed", async () => {
    expect(await lookup(ADDRESSES.isp)).toEqual({ networkType: "isp", networkTypeSource: "curated" });
    await networks.setType(operator, COMCAST, "business", "ticket 42");
    // this process read the overrides a moment ago: within the cache time it may keep them
    pass(TTL_MS - 1000);
    expect(await lookup(ADDRESSES.isp)).toEqual({ networkType: "isp", networkTypeSource: "curated" });
    pass(2000);
    expect(await lookup(ADDRESSES.isp)).toEqual({ networkType: "business", networkTypeSource: "override" });
    expect(await networks.list(operator)).toEqual([{ asn: COMCAST, type: "business", note: "ticket 42", updatedAt: expect.any(Date) }]);

    expect(await networks.remove(operator, COMCAST)).toBe(true);
    pass(TTL_MS + 1000);
    expect(await lookup(ADDRESSES.isp)).toEqual({ networkType: "isp", networkTypeSource: "curated" });
    expect(await networks.list(operator)).toEqual([]);
    expect(await networks.remove(operator, COMCAST)).toBe(false);
  });

  it("when a network is set to government, then the database stores it and ip-lookup answers it", async () => {
    await networks.setType(operator, COMCAST, "government", "a state's network");
    pass(TTL_MS + 1000);
    expect(await lookup(ADDRESSES.isp)).toEqual({ networkType: "government", networkTypeSource: "override" });
    expect(await networks.list(operator)).toEqual([{ asn: COMCAST, type: "government", note: "a state's network", updatedAt: expect.any(Date) }]);
    await networks.remove(operator, COMCAST);
    pass(TTL_MS + 1000);
  });

  it("when a type is set again, then it replaces the first one", async () => {
    await networks.setType(operator, 64500, "isp");
    await networks.setType(operator, 64500, "mobile", "carrier after all");
    expect((await networks.list(operator)).filter((o) => o.asn === 64500)).toEqual([
      { asn: 64500, type: "mobile", note: "carrier after all", updatedAt: expect.any(Date) },
    ]);
    await networks.remove(operator, 64500);
  });

  it.each([
    [0, "isp"],
    [2 ** 31, "isp"],
    [1.5, "isp"],
    [COMCAST, "unknown"],
    [COMCAST, "Business"],
  ])("when AS%s is set to %j, then it is refused and nothing is stored", async (asn, type) => {
    await expect(networks.setType(operator, asn, type)).rejects.toBeInstanceOf(DomainError);
    expect(await networks.list(operator)).toEqual([]);
  });

  it("when a hosting network is set to business, then its page views become a lead, and a partner's exclusion still hides it", async () => {
    const datasetId = await datasets.create(t.api.services, t.tenant.accountId, t.tenant.admin.email, { name: "Overrides" });
    await t.collect(datasetId, ADDRESSES.hosting, [t.pageView("visitor-before-override")]);
    await t.writer.drain();
    expect(await t.leads(datasetId)).toEqual([]);

    await networks.setType(operator, GOOGLE, "business");
    pass(TTL_MS + 1000);
    const res = await t.collect(datasetId, ADDRESSES.hosting, [t.pageView("visitor-after-override")]);
    expect(res.body).toEqual({ received: 1, queued: 1 });
    await t.writer.drain();
    const leads = await t.leads(datasetId);
    expect(leads.map((l) => l.organizationName)).toEqual(["Google LLC"]);

    const exclusion = { datasetId, type: "organizationName", data: "google llc" };
    const saved = await t.api.request().post("/v1/dataset-exclusion").set(as(t.tenant.key)).send(exclusion);
    expect(saved.status).toBe(204);
    expect(await t.leads(datasetId)).toEqual([]);
    await networks.remove(operator, GOOGLE);
  });
});
