// Organisation domains from evidence (server/tracking/write/domain-evidence.ts, names read by server/identity/domain-names.ts): the curated list, the
// business e-mail domain of two identified visitors, and reverse DNS asked of a loopback DNS server
// (test/support/dns-server.ts), through ip-lookup, the ingest writer, GET /v1/leads and domain-lookup.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { businessEmailDomain, domainOfPtr, isFreeMail } from "../server/identity/domain-names.ts";
import { reverseName, startDnsServer, type TestDnsServer } from "./support/dns-server.ts";
import { as } from "./support/suite.ts";
import { ADDRESSES, startTracking, type TrackingSuite } from "./support/tracking.ts";
import * as datasets from "../server/services/datasets.ts";

/** DaimlerChrysler Corporation, AS14852 (business, not curated): one address per /24, as tests need fresh /24s. */
let nextNet = 10;
const daimler = () => `129.9.${nextNet++}.20`;

// The DNS server runs in this test's process: on a busy machine it answers late (400 ms missed answers with two suites at once).
const TIMEOUT_MS = 2000;
const OPERATOR_PREFIXES = 3;

let dns: TestDnsServer;
let t: TrackingSuite;
beforeAll(async () => {
  dns = await startDnsServer();
  t = await startTracking({ reverseDns: { enabled: true, servers: [dns.address], timeoutMs: TIMEOUT_MS, cacheSeconds: 3600, operatorPrefixes: OPERATOR_PREFIXES } });
});
afterAll(async () => {
  await t?.close();
  await dns?.close();
});

let seq = 0;
const visitor = () => `visitor${String(++seq).padStart(4, "0")}${Date.now().toString(36)}`;
const dataset = () => datasets.create(t.api.services, t.tenant.accountId, t.tenant.admin.email, { name: `Evidence ${++seq}` });
const ptrAsked = (ip: string) => dns.asked.filter((q) => q.name === reverseName(ip)).length;

const ipLookup = (ip: string) => t.api.request().get("/v1/ip-lookup").query({ ip }).set(as(t.tenant.key));
const domainLookup = (domain: string) => t.api.request().get("/v1/domain-lookup").query({ domain }).set(as(t.tenant.key));

/** Page views (and forms) of `ip`'s network in a fresh dataset, written by the writer; the dataset's one lead. */
async function leadOf(ip: string, events: (vid: string) => object[] = (vid) => [t.pageView(vid)], ds?: string) {
  const datasetId = ds ?? (await dataset());
  const vid = visitor();
  expect((await t.collect(datasetId, ip, events(vid))).status).toBe(202);
  await t.writer.drain();
  const leads = await t.leads(datasetId);
  expect(leads).toHaveLength(1);
  return { datasetId, lead: leads[0]! };
}

describe("domainOfPtr", () => {
  it("when the PTR name spells the address in hex under an access label (an ISP customer), then it names no organisation", () => {
    expect(domainOfPtr("p5b0c1234.dip0.t-ipconnect.de", "91.12.18.52")).toBeNull();
  });

  it("when the PTR name spells the address in decimal, either way round, then it names no organisation", () => {
    expect(domainOfPtr("c-73-1-2-3.hsd1.fl.comcast.net", "73.1.2.3")).toBeNull();
    expect(domainOfPtr("3.2.1.73.business.example-isp.net", "73.1.2.3")).toBeNull();
    expect(domainOfPtr("host073001002003.example-isp.net", "73.1.2.3")).toBeNull();
  });

  it("when the PTR name reads like an access line, then it names no organisation", () => {
    for (const host of ["pool-12.nycmny.fios.example.net", "dyn.example-isp.de", "adsl.example-isp.it", "customer.gw.example-isp.com", "static.example-isp.fr"]) {
      expect(domainOfPtr(host, "198.51.100.7"), host).toBeNull();
    }
  });

  it("when the PTR name says the network is for guests (guest, visitor or public Wi-Fi, a hotspot), then it names no organisation", () => {
    for (const host of ["guest.acme-motors.co.uk", "visitors.wlan.zeta-werke.de", "hotspot2.grandplaza.com", "eduroam.uni-example.de", "public-wifi.city-library.org"]) {
      expect(domainOfPtr(host, "198.51.100.7"), host).toBeNull();
    }
    expect(domainOfPtr("guestbook.acme-motors.co.uk", "198.51.100.7")).toBe("acme-motors.co.uk"); // whole labels only
  });

  it("when the PTR name is an organisation's host, then its registrable domain by the Public Suffix List", () => {
    expect(domainOfPtr("fw1.hq.acme-motors.co.uk.", "198.51.100.7")).toBe("acme-motors.co.uk");
    expect(domainOfPtr("proxy.Zeta-Werke.DE", "198.51.100.7")).toBe("zeta-werke.de");
  });
});

describe("businessEmailDomain", () => {
  it("when the address is a free-mail provider's, then no business domain", () => {
    for (const email of ["kim@gmail.com", "kim@gmx.de", "kim@web.de", "kim@yahoo.co.uk", "kim@outlook.com"]) expect(businessEmailDomain(email), email).toBeNull();
  });

  it("when the address is a privacy mail provider's the free-mail list lacks, or a student's or alumnus' at a university, then no business domain: it is the person's own", () => {
    for (const email of ["kim@tutanota.com", "kim@tuta.io", "kim@mailbox.org", "kim@hey.com", "kim@ms12.hinet.net", "kim@netvigator.com", "kim@students.uni-example.de", "kim@alumni.stanford.edu", "kim@stud.tu-example.de", "kim@alum.mit.edu"]) {
      expect(businessEmailDomain(email), email).toBeNull();
      expect(isFreeMail(email), email).toBe(true);
    }
    expect(businessEmailDomain("kim@studio.acme-motors.co.uk")).toBe("acme-motors.co.uk"); // whole labels only
  });

  it("when the address is a company's, then its registrable domain", () => {
    expect(businessEmailDomain("kim@eu.acme-motors.co.uk")).toBe("acme-motors.co.uk");
    expect(isFreeMail("kim@eu.acme-motors.co.uk")).toBe(false);
  });
});

describe("lookupIp", () => {
  it("when a business network's address has an organisation's PTR name, then its registrable domain with domainSource reverse_dns", async () => {
    const ip = daimler();
    dns.zone.ptr.set(reverseName(ip), "gw2.auburn.daimler-test.com");
    const res = await ipLookup(ip);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ asn: 14852, networkType: "business", organizationDomain: "daimler-test.com", domainSource: "reverse_dns" });
  });

  it("when a business network's PTR name is under a curated access operator's domain (its connectivity provider's), then no domain: the operator is not the organisation", async () => {
    const ip = daimler();
    dns.zone.ptr.set(reverseName(ip), "daimler-auburn.ma.comcastbusiness.net");
    const res = await ipLookup(ip);
    expect(res.body).toMatchObject({ asn: 14852, organizationDomain: null, domainSource: null });
  });

  it("when the PTR name is an access line's, then no domain, and the name (it spells the address) is not kept", async () => {
    const ip = daimler();
    dns.zone.ptr.set(reverseName(ip), `dsl-${ip.replaceAll(".", "-")}.example-isp.net`);
    const res = await ipLookup(ip);
    expect(res.body).toMatchObject({ organizationDomain: null, domainSource: null });
    expect(ptrAsked(ip)).toBe(1);
    expect(await t.api.db.prisma.reverseDnsEntry.count({ where: { host: { contains: ip.replaceAll(".", "-") } } })).toBe(0);
  });

  it("when the address is on the curated list, then the curated domain, without asking DNS", async () => {
    dns.zone.ptr.set(reverseName(ADDRESSES.business), "edge.other-company.example");
    const res = await ipLookup(ADDRESSES.business);
    expect(res.body).toMatchObject({ organizationDomain: "apple.com", domainSource: "curated" });
    expect(ptrAsked(ADDRESSES.business)).toBe(0);
  });

  it("when two addresses share a /24, then DNS is asked once and both get its answer", async () => {
    const ip = daimler();
    const neighbour = ip.replace(/\.20$/, ".99");
    dns.zone.ptr.set(reverseName(ip), "www.cached-corp.com");
    expect((await ipLookup(ip)).body.organizationDomain).toBe("cached-corp.com");
    expect((await ipLookup(neighbour)).body.organizationDomain).toBe("cached-corp.com");
    expect(ptrAsked(ip) + ptrAsked(neighbour)).toBe(1);
  });

  it("when the DNS server never answers, then the answer comes within the time bound without a domain, and the /24 is not asked again at once", async () => {
    const ip = daimler();
    dns.zone.silent.add(reverseName(ip));
    const started = Date.now();
    const res = await ipLookup(ip);
    const took = Date.now() - started;
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ organizationName: "DaimlerChrysler Corporation", organizationDomain: null, domainSource: null });
    // within the bound, with room for a loaded machine; without it the resolver would try for 30 s or more
    expect(took).toBeLessThan(2 * TIMEOUT_MS + 3000);
    expect((await ipLookup(ip)).status).toBe(200);
    expect(ptrAsked(ip)).toBe(1);
  });
});

describe("listLeads domainSource", () => {
  it("when a visitor's address has an organisation's PTR name, then the lead takes its domain from reverse DNS and domain-lookup finds it", async () => {
    const ip = daimler();
    dns.zone.ptr.set(reverseName(ip), "proxy1.mopar-parts.com");
    const { lead } = await leadOf(ip);
    expect(lead).toMatchObject({ organizationName: "DaimlerChrysler Corporation", organizationDomain: "mopar-parts.com", domainSource: "reverse_dns" });
    for (const asked of ["mopar-parts.com", "www.mopar-parts.com"]) {
      const res = await domainLookup(asked);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ organizationName: "DaimlerChrysler Corporation", domainSource: "reverse_dns", asns: [] });
      expect(res.body.leads).toContainEqual(expect.objectContaining({ leadId: lead.leadId, domainSource: "reverse_dns" }));
    }
  });

  it("when the PTR name is an access line's, then the lead has no domain", async () => {
    const ip = daimler();
    dns.zone.ptr.set(reverseName(ip), `pool-${ip.split(".").reverse().join("-")}.dynamic.example-isp.net`);
    const { lead } = await leadOf(ip);
    expect(lead).toMatchObject({ organizationDomain: null, domainSource: null });
  });

  it("when two identified visitors share a business e-mail domain, then it replaces the reverse DNS domain; one alone does not", async () => {
    const ip = daimler();
    dns.zone.ptr.set(reverseName(ip), "gw.some-hoster-name.com");
    const datasetId = await dataset();
    await t.settings(datasetId, { formTracking: true });
    const form = (email: string) => (vid: string) => [t.pageView(vid), t.form(vid, { email })];
    let { lead } = await leadOf(ip, form("ann@eu.chrysler-test.com"), datasetId);
    expect(lead).toMatchObject({ organizationDomain: "some-hoster-name.com", domainSource: "reverse_dns" });
    ({ lead } = await leadOf(ip, form("bob@chrysler-test.com"), datasetId));
    expect(lead).toMatchObject({ organizationDomain: "chrysler-test.com", domainSource: "email" });
    const found = await domainLookup("chrysler-test.com");
    expect(found.body).toMatchObject({ domainSource: "email" });
    expect(found.body.leads).toContainEqual(expect.objectContaining({ leadId: lead.leadId, datasetId }));
    // reverse DNS is weaker: a later visit from another /24 does not take the domain back
    const other = daimler();
    dns.zone.ptr.set(reverseName(other), "fw.another-name.com");
    ({ lead } = await leadOf(other, (vid) => [t.pageView(vid)], datasetId));
    expect(lead).toMatchObject({ organizationDomain: "chrysler-test.com", domainSource: "email" });
  });

  it("when identified visitors agree only on a free-mail domain, then it is never the organisation's", async () => {
    const ip = daimler();
    const datasetId = await dataset();
    await t.settings(datasetId, { formTracking: true });
    for (const email of ["ann@gmail.com", "bob@gmail.com", "cy@gmail.com"]) await leadOf(ip, (vid) => [t.pageView(vid), t.form(vid, { email })], datasetId);
    const [lead] = await t.leads(datasetId);
    expect(lead).toMatchObject({ organizationDomain: null, domainSource: null });
  });

  it("when a curated organisation's visitors share another e-mail domain, then the curated domain stays", async () => {
    const datasetId = await dataset();
    await t.settings(datasetId, { formTracking: true });
    for (const email of ["ann@apple-partner.example", "bob@apple-partner.example"]) {
      await leadOf(ADDRESSES.business, (vid) => [t.pageView(vid), t.form(vid, { email })], datasetId);
    }
    const [lead] = await t.leads(datasetId);
    expect(lead).toMatchObject({ organizationDomain: "apple.com", domainSource: "curated" });
  });

  it("when a PTR domain turns up on many /24s, then it is taken for an access network's: leads lose it and new look-ups refuse it", async () => {
    const ips = Array.from({ length: OPERATOR_PREFIXES }, daimler);
    ips.forEach((ip, i) => dns.zone.ptr.set(reverseName(ip), `gw${i}.accessnet-provider.net`));
    const { lead, datasetId } = await leadOf(ips[0]!);
    expect(lead).toMatchObject({ organizationDomain: "accessnet-provider.net", domainSource: "reverse_dns" });
    for (const ip of ips.slice(1, -1)) await ipLookup(ip);
    expect((await ipLookup(ips.at(-1)!)).body).toMatchObject({ organizationDomain: null, domainSource: null });
    expect((await t.leads(datasetId))[0]).toMatchObject({ organizationDomain: null, domainSource: null });
  });
});
