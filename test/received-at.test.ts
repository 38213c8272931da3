// The events' time from a trusted proxy (TRACKING_RECEIVED_AT_HEADER): a visit is stamped with the
// proxy's receive time only when the request came through a proxy TRUST_PROXY believes and the
// time is neither in the future nor older than the pending days; otherwise with the collector's now.
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestAppOptions } from "./support/api.ts";
import { ADDRESSES, BROWSER_UA, startTracking, testTrackingConfig, type TrackingSuite } from "./support/tracking.ts";
import { parseReceivedAt } from "../server/tracking/collect/received-at.ts";
import * as datasets from "../server/services/datasets.ts";

const HEADER = "x-request-start";
const DAY_MS = 86_400_000;
/** The collector's clock, fixed: a visit that did not take the header's time has exactly this one. */
const NOW = new Date(Math.floor(Date.now() / 1000) * 1000);
const ago = (ms: number) => new Date(NOW.getTime() - ms);
const epochSeconds = (at: Date) => `t=${(at.getTime() / 1000).toFixed(3)}`;

let t: TrackingSuite;
beforeAll(async () => {
  t = await startTracking({ receivedAtHeader: HEADER }, { tracking: { now: () => NOW } });
});
afterAll(async () => {
  await t?.close();
});

/** The times of the visits that one page view with `value` in the header makes, sent to `app` (the suite's: through the trusted loopback proxy). */
async function visitTimes(value: string, app?: TestAppOptions): Promise<Date[]> {
  const ds = await datasets.create(t.api.services, t.tenant.accountId, t.tenant.admin.email, { name: `Received at ${value} ${Math.random()}` });
  const request = app ? supertest(t.api.appWith(app)) : t.api.request();
  const res = await request
    .post(`/collect?dataset=${ds}`)
    .set("x-forwarded-for", ADDRESSES.business)
    .set("user-agent", BROWSER_UA)
    .set("content-type", "text/plain")
    .set(HEADER, value)
    .send(JSON.stringify({ events: [t.pageView("receivedvisitor1")] }));
  expect(res.body).toEqual({ received: 1, queued: 1 });
  await t.writer.drain();
  const visits = await t.api.db.prisma.visit.findMany({ where: { datasetId: ds }, select: { at: true } });
  return visits.map((v) => v.at);
}

describe("collect with TRACKING_RECEIVED_AT_HEADER", () => {
  it("when a trusted proxy gives its receive time as t=<seconds> or ISO 8601, then the visit has that time", async () => {
    const threeDaysAgo = new Date(ago(3 * DAY_MS).getTime() + 123);
    expect(await visitTimes(epochSeconds(threeDaysAgo))).toEqual([threeDaysAgo]);
    expect(await visitTimes(ago(DAY_MS).toISOString())).toEqual([ago(DAY_MS)]);
  });

  it("when the request did not come through a trusted proxy (TRUST_PROXY off), then the header is ignored", async () => {
    // the demo's stand-in address for loopback clients: without a trusted proxy, X-Forwarded-For is ignored too
    const untrusted = { trustProxy: false, tracking: { config: testTrackingConfig({ receivedAtHeader: HEADER, loopbackIp: ADDRESSES.business }), now: () => NOW } };
    expect(await visitTimes(epochSeconds(ago(DAY_MS)), untrusted)).toEqual([NOW]);
  });

  it("when the time is in the future, older than the pending days or not a time, then the collector's now is used", async () => {
    expect(await visitTimes(epochSeconds(new Date(NOW.getTime() + 1000)))).toEqual([NOW]);
    expect(await visitTimes(epochSeconds(ago(30 * DAY_MS + 60_000)))).toEqual([NOW]);
    expect(await visitTimes("yesterday")).toEqual([NOW]);
    // the edges themselves are taken
    expect(await visitTimes(epochSeconds(NOW))).toEqual([NOW]);
    expect(await visitTimes(epochSeconds(ago(30 * DAY_MS - 60_000)))).toEqual([ago(30 * DAY_MS - 60_000)]);
  });

  it("when the setting is unset, then a trusted proxy's header is ignored", async () => {
    const unset = { trustProxy: "loopback", tracking: { config: testTrackingConfig(), now: () => NOW } };
    expect(await visitTimes(epochSeconds(ago(DAY_MS)), unset)).toEqual([NOW]);
  });
});

describe("parseReceivedAt", () => {
  it("when the value is t=<seconds> with or without a fraction, or ISO 8601 with a zone, then it is that time; else none", () => {
    expect(parseReceivedAt("t=1087187705.192")).toEqual(new Date(1_087_187_705_192));
    expect(parseReceivedAt(" t=1764000000 ")).toEqual(new Date(1_764_000_000_000));
    expect(parseReceivedAt("2026-11-28T10:30:00.5+01:00")).toEqual(new Date("2026-11-28T09:30:00.500Z"));
    for (const other of ["1764000000", "t=-5", "t=1e9", "2026-11-28T10:30:00", "2026-13-45T10:30:00Z", "t=99999999999999999", ""]) {
      expect(parseReceivedAt(other), other).toBeUndefined();
    }
  });
});
