// What the tracking tests share: an app that trusts a loopback proxy (so tests present public
// addresses with X-Forwarded-For, exactly as a load balancer would), an ingest writer to drain the
// queue, and fixture addresses taken from the IP-to-ASN data set.
import { expect } from "vitest";
import type { TrackingConfig } from "../../server/config.ts";
import { testConfig } from "./config.ts";
import type { Logger } from "../../server/logging.ts";
import type { IngestWriter, WriterOptions } from "../../server/tracking/log/writer.ts";
import { wiredIngestWriter } from "../../server/runtime.ts";
import { as, type Suite } from "./suite.ts";
import { startTestApi, type TestApi, type TestApiOptions } from "./api.ts";
import { createTenant } from "./tenants.ts";
import * as datasets from "../../server/services/datasets.ts";

/** Real public addresses, and what the data set says of them (checked by tracking-resolution.test.ts). */
export const ADDRESSES = {
  /** Apple Inc., AS714: business, on the curated list (apple.com), Cupertino, US. */
  business: "17.253.144.10",
  /** Massachusetts Institute of Technology, AS3: education (mit.edu). */
  education: "18.7.22.69",
  /** Comcast Cable Communications, AS7922: isp. */
  isp: "73.1.2.3",
  /** Google LLC, AS15169: hosting. */
  hosting: "8.8.8.8",
  /** T-Mobile USA, AS21928: mobile. */
  mobile: "172.56.0.1",
  /** Facebook, Inc., AS32934, over IPv6: business. */
  businessV6: "2a03:2880:f10c:83:face:b00c:0:25de",
} as const;

export const BROWSER_UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
export const BOT_UA = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";

/** POST /collect of one page view from a business network's visitor (through the trusted loopback proxy). */
export function collectPageView(api: TestApi, datasetId: string, visitorId: string, url = "https://www.customer.example/pricing") {
  return api
    .request()
    .post(`/collect?dataset=${datasetId}`)
    .set("x-forwarded-for", ADDRESSES.business)
    .set("user-agent", BROWSER_UA)
    .set("content-type", "text/plain")
    .send(JSON.stringify({ events: [{ type: "pageview", visitorId, url, title: "Pricing" }] }));
}

export interface TrackingSuite extends Suite {
  writer: IngestWriter;
  /** POST /collect as a browser at `ip` (through the trusted loopback proxy). */
  collect(datasetId: string, ip: string, events: unknown[], ua?: string): Promise<import("supertest").Response>;
  pageView(visitorId: string, url?: string): object;
  form(visitorId: string, fields: Record<string, string>): object;
  /** PUT the dataset's form-tracking settings through the API. */
  settings(datasetId: string, settings: Partial<Record<"formTracking" | "partialFormTracking" | "contactEnrichment" | "allowIpMasking", boolean>>): Promise<void>;
  leads(datasetId: string): Promise<{ leadId: string; organizationName: string; organizationDomain: string | null; domainSource: string | null; visitCount: number; country: string | null; city: string | null; score: number }[]>;
  count(table: string): Promise<number>;
  close(): Promise<void>;
}

/** Settings reach the collector at once in tests (no cache); limits stay the production defaults; no reverse DNS unless asked. */
export const testTrackingConfig = (overrides: Partial<TrackingConfig> = {}): TrackingConfig => ({
  ...testConfig().tracking,
  settingsTtlSeconds: 0,
  ...overrides,
});

/**
 * The ingest writer wired as every process wires it (services.ingestWiring: the services it
 * enriches with, segment entries and webhook events, domain evidence, the queue's wake), with a
 * test's own settings on top (`onlyEvidence` for suites that look at the writer alone).
 */
export function wiredWriter(api: TestApi, options: WriterOptions = {}, logger: Logger = api.logger): IngestWriter {
  return wiredIngestWriter(api.db, api.services, logger, options);
}

/** The same, polling on its own (as `npm run ingest` does). */
export function startWiredWriter(api: TestApi, options: WriterOptions = {}, logger: Logger = api.logger): IngestWriter {
  const writer = wiredIngestWriter(api.db, api.services, logger, options);
  writer.wake();
  return writer;
}

/** Settings that leave out the hooks that publish (segment entries, webhook events): the writer and its evidence alone. */
export const ONLY_EVIDENCE: WriterOptions = { onIngested: undefined, onEnriched: undefined, onCommitted: undefined };

/** `apiOptions`: the test API's (the services' clock `now`, retention, webhooks, the collector's clock). */
export async function startTracking(config: Partial<TrackingConfig> = {}, apiOptions: TestApiOptions = {}): Promise<TrackingSuite> {
  const trackingConfig = testTrackingConfig(config);
  const api = await startTestApi({
    ...apiOptions,
    trustProxy: "loopback",
    tracking: { ...apiOptions.tracking, config: trackingConfig },
    reverseDns: trackingConfig.reverseDns,
  });
  const suite: Suite = { api, tenant: await createTenant(api.services, "Acme"), other: await createTenant(api.services, "Globex") };
  const writer = wiredWriter(api, ONLY_EVIDENCE);
  const { tenant } = suite;
  return {
    ...suite,
    writer,
    collect: (datasetId, ip, events, ua = BROWSER_UA) =>
      api
        .request()
        .post(`/collect?dataset=${datasetId}`)
        .set("x-forwarded-for", ip)
        .set("user-agent", ua)
        .set("content-type", "text/plain")
        .send(JSON.stringify({ events })),
    pageView: (visitorId, url = "https://www.customer.example/pricing?utm_source=newsletter") => ({
      type: "pageview",
      visitorId,
      url,
      referrer: "https://www.google.com/",
      title: "Pricing",
      utm: { source: "newsletter" },
    }),
    form: (visitorId, fields) => ({ type: "form", visitorId, url: "https://www.customer.example/contact", fields }),
    async settings(datasetId, settings) {
      const query = { formTracking: false, allowIpMasking: false, formInputAttribute: "name", ...settings, email: tenant.admin.email };
      const res = await api.request().put(`/v1/datasets/${datasetId}/form-tracking`).query(query).set(as(tenant.key));
      expect(res.status).toBe(204);
    },
    async leads(datasetId) {
      const res = await api.request().get("/v1/leads").query({ email: tenant.admin.email, datasetId }).set(as(tenant.key));
      expect(res.status).toBe(200);
      return res.body.data;
    },
    async count(table) {
      const [row] = await api.db.prisma.$queryRawUnsafe<{ n: bigint }[]>(`SELECT count(*) AS n FROM "${table}"`);
      return Number(row!.n);
    },
    async close() {
      await writer.stop();
      await api.close();
    },
  };
}


/** One page view of a new visitor from each address, into a new dataset named `datasetName`; the
 * dataset's leads once the writer has written them. */
export async function leadsOfVisitsFrom(t: TrackingSuite, datasetName: string, addresses: readonly string[]) {
  const datasetId = await datasets.create(t.api.services, t.tenant.accountId, t.tenant.admin.email, { name: datasetName });
  for (const [i, ip] of addresses.entries()) {
    const res = await t.collect(datasetId, ip, [t.pageView(`visitor${i}`)]);
    expect(res.body).toEqual({ received: 1, queued: 1 });
  }
  await t.writer.drain();
  return t.leads(datasetId);
}
