// The ingest writer's lag gauge: read from the log when /metrics is scraped, not kept up by the
// writer's loop.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { metricsRegistry } from "../server/metrics.ts";
import { ADDRESSES, startTracking, type TrackingSuite } from "./support/tracking.ts";

let t: TrackingSuite;
beforeAll(async () => {
  // the collector stamps events a minute behind the real clock: they are a minute old when accepted
  t = await startTracking({}, { tracking: { now: () => new Date(Date.now() - 60_000) } });
});
afterAll(async () => {
  await t?.writer.stop();
  await t?.close();
});

const lagSeconds = async () => Number((await metricsRegistry.getSingleMetricAsString("ingest_writer_lag_seconds")).match(/^ingest_writer_lag_seconds (\S+)$/m)?.[1]);

describe("ingest_writer_lag_seconds", () => {
  it("when an accepted event waits unwritten, then a scrape reports its age, and 0 once the writer wrote it", async () => {
    const res = await t.collect(t.tenant.datasets[0]!, ADDRESSES.business, [t.pageView(`vid${randomBytes(8).toString("hex")}`)]);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(await lagSeconds()).toBeGreaterThanOrEqual(60);
    await t.writer.drain();
    expect(await lagSeconds()).toBe(0);
  });
});
