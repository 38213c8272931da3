// Identities behind shared networks (server/identity): the store against a real database (PGlite,
// or PostgreSQL with TEST_DATABASE_URL), each rule and precision guard with a case that would
// attribute wrongly without it, the window and expiry, erasure of a person's contribution, scope
// per account and the pooled reverse DNS, and reverse DNS asked of a loopback DNS server.
import { randomBytes } from "node:crypto";
import ipaddr from "ipaddr.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IdentityConfig, ReverseDnsConfig } from "../server/config.ts";
import { declarationOf, declaredNetworks } from "../server/identity/declared-networks.ts";
import { type FormEvidence, IdentityStore, type PtrEvidence, type SeenAt } from "../server/identity/identities.ts";
import { AROUND_THE_CLOCK, ATTRIBUTION_THRESHOLD, CONFIDENCE, CONSUMERS, DYNAMIC_RANGE_ORGANIZATIONS, HOST_TENANTS, OPERATOR_UNITS, STATIC_LINE } from "../server/identity/rules.ts";
import type { NetworkType } from "../server/tracking/ipdata/network-class.ts";
import { createTestDatabase, type TestDatabase } from "./support/database.ts";
import { reverseName, startDnsServer, type TestDnsServer } from "./support/dns-server.ts";

const DAY = 86_400_000;
const WINDOW_DAYS = 90;
/** A PTR domain of this many /24s is an operator's (low, so that a test can reach it). */
const OPERATOR_PREFIXES = 3;

let db: TestDatabase;
let dns: TestDnsServer;
/** The stores' clock: real time plus days the tests move on. */
let offsetMs = 0;
const now = () => new Date(Date.now() + offsetMs);

const reverseDns = (enabled = false): ReverseDnsConfig => ({
  enabled,
  servers: enabled ? [dns.address] : [],
  timeoutMs: 2000, // the test's DNS server runs in this busy process
  cacheSeconds: 3600,
  operatorPrefixes: OPERATOR_PREFIXES,
});
const storeWith = (identities: Partial<IdentityConfig> = {}, dnsOn = false): IdentityStore =>
  new IdentityStore(db.prisma, { identities: { windowDays: WINDOW_DAYS, poolReverseDns: false, pendingDays: 30, ...identities }, reverseDns: reverseDns(dnsOn), now });

let store: IdentityStore;
let A: string;
let B: string;

async function newAccount(name: string): Promise<string> {
  const id = `acc_${randomBytes(8).toString("hex")}`;
  await db.prisma.account.create({ data: { id, name } });
  return id;
}

beforeAll(async () => {
  db = await createTestDatabase();
  dns = await startDnsServer();
  store = storeWith();
  [A, B] = [await newAccount("A"), await newAccount("B")];
});
afterAll(async () => {
  await dns?.close();
  await db?.close();
});

/** A /24 of its own per test: `net(7)` is its address .7. */
let nets = 0;
function freshNet(): (host: number) => string {
  nets += 1;
  const [b, c] = [Math.floor(nets / 256), nets % 256];
  return (host) => `10.${b}.${c}.${host}`;
}
/**
 * A /24 of its own whose first 64 addresses' PTR names mark business lines (`gw.static.<operator>`),
 * in these accounts (A and B): one person's e-mail names such a line (rules.ts EMAIL_PEOPLE), where a line
 * without the mark may be a household's.
 */
async function businessNet(accounts = [A, B]): Promise<(host: number) => string> {
  const net = freshNet();
  const operator = freshDomain("isp");
  const hosts = Array.from({ length: 64 }, (_, i) => net(i));
  await store.recordPtrEvidence(accounts.flatMap((accountId) => hosts.map((ip) => ptr(ip, `gw.static.${operator}`, { accountId }))));
  return net;
}
/** A domain of its own per use. */
let domains = 0;
const freshDomain = (label = "company") => `${label}-${++domains}-${randomBytes(2).toString("hex")}.de`;
const person = (domain: string) => `p.${randomBytes(4).toString("hex")}@${domain}`;

/** The ip6.arpa name of an IPv6 address (the PTR question a resolver asks for it). */
const reverseName6 = (ip: string) => `${[...ipaddr.parse(ip).toNormalizedString().split(":").map((h) => h.padStart(4, "0")).join("")].reverse().join(".")}.ip6.arpa`;
const form = (ip: string, email: string, fields: Partial<FormEvidence> = {}): FormEvidence => ({ accountId: A, ip, networkType: "isp", email, ...fields });
const ptr = (ip: string, host: string | null, fields: Partial<PtrEvidence> = {}): PtrEvidence => ({ accountId: A, ip, networkType: "isp", host, ...fields });
const identityOf = (ip: string, networkType: NetworkType = "isp", accountId = A, s = store) => s.identityOf(accountId, ip, networkType);
const describeAddress = (ip: string, networkType: NetworkType = "isp", accountId = A, s = store) => s.describe(accountId, ip, networkType);

describe("e-mail evidence", () => {
  it("when one person sends a form with a business address from a static line and no other organisation is seen, then the address is that organisation's (form_email, 0.6)", async () => {
    const net = await businessNet();
    const domain = freshDomain();
    expect(await identityOf(net(7))).toBeUndefined();
    await store.recordFormEvidence([form(net(7), person(domain))]);
    expect(await identityOf(net(7))).toEqual({ organizationName: domain, organizationDomain: domain, source: "form_email", confidence: CONFIDENCE.emailOfOnePerson, prefix: `${net(7)}/32` });
    expect(CONFIDENCE.emailOfOnePerson).toBeGreaterThanOrEqual(ATTRIBUTION_THRESHOLD);
    // the neighbours of a single address are not the organisation's
    expect(await identityOf(net(8))).toBeUndefined();
  });

  it("when one person sends forms from a line with no PTR name (possibly a household's: a home worker), then it names nobody; a colleague's form names it", async () => {
    const net = freshNet();
    const domain = freshDomain();
    await store.recordFormEvidence([form(net(7), person(domain))]);
    expect(await identityOf(net(7))).toBeUndefined();
    await store.recordFormEvidence([form(net(7), person(domain))]);
    expect(await identityOf(net(7))).toMatchObject({ organizationDomain: domain, confidence: CONFIDENCE.emailOfSeveralPeople });
  });

  it("when two distinct people of one organisation send forms from the address, then confidence 0.75; the same person twice stays one", async () => {
    const net = await businessNet();
    const domain = freshDomain();
    const jane = person(domain);
    await store.recordFormEvidence([form(net(1), jane), form(net(1), jane.toUpperCase())]);
    expect((await identityOf(net(1)))?.confidence).toBe(CONFIDENCE.emailOfOnePerson);
    await store.recordFormEvidence([form(net(1), person(domain))]);
    expect((await identityOf(net(1)))?.confidence).toBe(CONFIDENCE.emailOfSeveralPeople);
    expect((await describeAddress(net(1)))?.evidence).toEqual({ declared: 0, reverseDns: 0, formEmail: 2, organizations: 1 });
  });

  it("when the address's domain is a sub-domain, then the organisation is its registrable domain", async () => {
    const net = await businessNet();
    const domain = freshDomain();
    await store.recordFormEvidence([form(net(1), `jo@sales.eu.${domain}`)]);
    expect((await identityOf(net(1)))?.organizationDomain).toBe(domain);
  });

  it("when the dataset masks addresses, then its forms and PTR names record no evidence", async () => {
    const net = freshNet();
    await store.recordFormEvidence([form(net(0), person(freshDomain()), { masked: true })]);
    await store.recordPtrEvidence([ptr(net(0), `gw.${freshDomain()}`, { masked: true })]);
    expect(await db.prisma.identityEvidence.count({ where: { range: `${net(0)}/24` } })).toBe(0);
  });

  it("when forms carry free-mail addresses, then they are no evidence at all", async () => {
    const net = freshNet();
    await store.recordFormEvidence([form(net(1), "someone@gmail.com"), form(net(1), "other@web.de"), form(net(1), "x@yahoo.co.uk")]);
    expect(await identityOf(net(1))).toBeUndefined();
    expect(await describeAddress(net(1))).toBeNull();
  });
});

describe("shared addresses", () => {
  it("when the evidence of an address names two organisations (a coworking space), then it attributes nothing and says it is shared", async () => {
    const net = freshNet();
    const [one, two] = [freshDomain(), freshDomain()];
    await store.recordFormEvidence([form(net(5), person(one)), form(net(5), person(one))]);
    expect(await identityOf(net(5))).toBeDefined();
    await store.recordFormEvidence([form(net(5), person(two))]);
    expect(await identityOf(net(5))).toBeUndefined();
    expect(await describeAddress(net(5))).toMatchObject({
      organizationName: null,
      organizationDomain: null,
      source: null,
      confidence: 0,
      attributed: false,
      guard: "shared",
      shared: true,
      evidence: { declared: 0, reverseDns: 0, formEmail: 3, organizations: 2 },
    });
  });

  it("when an organisation's PTR name and another organisation's e-mail meet at an address, then it is shared", async () => {
    const net = freshNet();
    const [owner, guest] = [freshDomain("owner"), freshDomain()];
    await store.recordPtrEvidence([ptr(net(9), `office.${owner}`)]);
    expect((await identityOf(net(9)))?.source).toBe("reverse_dns");
    await store.recordFormEvidence([form(net(9), person(guest))]);
    expect(await identityOf(net(9))).toBeUndefined();
    expect((await describeAddress(net(9)))?.guard).toBe("shared");
  });

  it("when the account declares the network of a shared address, then the declaration wins for it", async () => {
    const net = freshNet();
    await store.recordFormEvidence([form(net(5), person(freshDomain())), form(net(5), person(freshDomain()))]);
    expect(await identityOf(net(5))).toBeUndefined();
    await declaredNetworks(db.prisma).declare(A, declarationOf({ cidr: `${net(0)}/28`, organizationName: "Hub Coworking", organizationDomain: "hub-coworking.co.uk" }));
    expect(await identityOf(net(5))).toEqual({ organizationName: "Hub Coworking", organizationDomain: "hub-coworking.co.uk", source: "declared", confidence: 1, prefix: `${net(0)}/28` });
    expect(await describeAddress(net(5))).toMatchObject({ source: "declared", attributed: true, shared: true, evidence: { declared: 1, organizations: 2 } });
    // outside the declared /28 the evidence still rules
    expect(await identityOf(net(20))).toBeUndefined();
  });
});

describe("reverse DNS evidence", () => {
  it("when the PTR name is under the organisation's own domain, then reverse_dns 0.85; with a person's agreeing e-mail 0.95", async () => {
    const net = freshNet();
    const domain = freshDomain();
    await store.recordPtrEvidence([ptr(net(3), `gw.${domain}.`)]);
    expect(await identityOf(net(3))).toMatchObject({ organizationDomain: domain, source: "reverse_dns", confidence: CONFIDENCE.reverseDns });
    await store.recordFormEvidence([form(net(3), person(domain))]);
    expect(await identityOf(net(3))).toMatchObject({ source: "reverse_dns", confidence: CONFIDENCE.reverseDnsAndEmail });
  });

  it("when the PTR name reads like a dynamic access line, then e-mail alone gives the address no identity (a home office is not a company)", async () => {
    const net = freshNet();
    const hosts = [`dyn-10-0-0-1.pool.${freshDomain("isp")}`, `p5b0c1234.dip0.${freshDomain("isp")}`, `cust-17.dsl.${freshDomain("isp")}`];
    for (const [i, host] of hosts.entries()) {
      const ip = net(i + 1);
      await store.recordPtrEvidence([ptr(ip, host)]);
      await store.recordFormEvidence([form(ip, person(freshDomain()))]);
      expect(await identityOf(ip), host).toBeUndefined();
      expect((await describeAddress(ip))?.guard, host).toBe("dynamic_line");
    }
  });

  it("when the PTR name is an access operator's line name without a dynamic label, then it is an access line too: one person's e-mail gives no identity", async () => {
    const net = freshNet();
    await store.recordPtrEvidence([ptr(net(1), "a109-96.lfbn-lyo-1.w87-238.abo.wanadoo.fr")]);
    await store.recordFormEvidence([form(net(1), person(freshDomain()))]);
    expect(await identityOf(net(1))).toBeUndefined();
    expect((await describeAddress(net(1)))?.guard).toBe("dynamic_line");
  });

  it(`when ${STATIC_LINE.people} people of one organisation send forms over ${STATIC_LINE.days} days from a line that reads dynamic, then it is their static line`, async () => {
    const net = freshNet();
    const domain = freshDomain();
    await store.recordPtrEvidence([ptr(net(1), "p5dc0abcd.dip0.t-ipconnect.de")]);
    await store.recordFormEvidence([form(net(1), person(domain), { at: new Date(now().getTime() - STATIC_LINE.days * DAY) })]);
    expect(await identityOf(net(1))).toBeUndefined();
    await store.recordFormEvidence([form(net(1), person(domain))]);
    expect(await identityOf(net(1))).toMatchObject({ organizationDomain: domain, source: "form_email", confidence: CONFIDENCE.emailOfSeveralPeople });
  });

  it(`when forms at a unit name ${HOST_TENANTS} organisations and never its PTR domain, then the domain is a host's (a coworking space): its other units name nobody`, async () => {
    const net = freshNet();
    const host = freshDomain("space");
    await store.recordPtrEvidence([ptr(net(1), `gw.${host}`), ptr(net(2), `gw2.${host}`)]);
    expect((await identityOf(net(2)))?.organizationDomain).toBe(host);
    await store.recordFormEvidence(Array.from({ length: HOST_TENANTS }, () => form(net(1), person(freshDomain()))));
    expect(await identityOf(net(2))).toBeUndefined();
  });

  it("when a dual-stack host's IPv6 site shows its tenants' forms under its PTR domain, then its IPv4 gateway of the same name, where no form was seen, names nobody either", async () => {
    const net = freshNet();
    const host = freshDomain("space");
    const site = `2001:db8:${(++nets).toString(16)}`;
    await store.recordPtrEvidence([ptr(net(81), `gw.${host}`), ptr(`${site}:1::1`, `gw.${host}`), ptr(`${site}:2::1`, `gw.${host}`)]);
    // a company's own gateway name, as far as anything says
    expect((await identityOf(net(81)))?.organizationDomain).toBe(host);
    await store.recordFormEvidence([form(`${site}:1::1`, person(freshDomain())), form(`${site}:2::1`, person(freshDomain()))]);
    expect(await identityOf(`${site}:1::1`)).toBeUndefined();
    // the IPv4 /24 holds no new evidence: its recomputation follows the domain
    expect(await identityOf(net(81))).toBeUndefined();
    expect(await describeAddress(net(81))).toMatchObject({ guard: "shared" });
  });

  it(`when ${AROUND_THE_CLOCK.visits} visitors' visits at a gateway named under a brand come at every hour of the day, then the brand names nobody there nor at its other gateway (a hotel's guests); an office's working hours keep its name`, async () => {
    const net = freshNet();
    const [hotel, office] = [freshDomain("quayside"), freshDomain()];
    await store.recordPtrEvidence([ptr(net(1), `gw.${hotel}`), ptr(net(2), `wan.${hotel}`), ptr(net(3), `gw.${office}`)]);
    const day = Date.UTC(2026, 10, 20);
    const visitsAt = (ip: string, hours: readonly number[]): SeenAt[] => [
      { ip, networkType: "isp", visitorHours: hours.map((hour, i) => ({ visitorId: `v${i}`, at: new Date(day + hour * 3_600_000) })) },
    ];
    const everyOtherHour = Array.from({ length: AROUND_THE_CLOCK.visits }, (_, i) => 2 * i);
    await store.recordActivity(visitsAt(net(1), everyOtherHour.slice(0, -1)));
    expect((await identityOf(net(2)))?.organizationDomain, "too few visits to tell").toBe(hotel);
    await store.recordActivity(visitsAt(net(1), everyOtherHour));
    expect(await identityOf(net(1))).toBeUndefined();
    expect(await describeAddress(net(1))).toMatchObject({ guard: "shared", shared: true });
    expect(await identityOf(net(2)), "the brand's other gateway, with no visits of its own").toBeUndefined();
    // another account's visitors at the hotel: counted with these (the fact only takes a name away)
    await store.recordPtrEvidence([ptr(net(2), `wan.${hotel}`, { accountId: B })]);
    expect(await identityOf(net(2), "isp", B)).toBeUndefined();
    await store.recordActivity(visitsAt(net(3), Array.from({ length: 4 * AROUND_THE_CLOCK.visits }, (_, i) => 8 + (i % 10))));
    expect((await identityOf(net(3)))?.organizationDomain).toBe(office);
  });

  it("when a line its operator names as a business line (a business zone's customer number) is used around the clock, then one guest's form names nobody there, in any account (a hotel on a business line)", async () => {
    const net = freshNet();
    const employer = freshDomain();
    const line = `kd${40_000 + nets}.kmu.${freshDomain("telecom")}`;
    await store.recordPtrEvidence([ptr(net(5), line), ptr(net(5), line, { accountId: B })]);
    await store.recordFormEvidence([form(net(5), person(employer)), form(net(5), person(employer), { accountId: B })]);
    expect((await identityOf(net(5)))?.organizationDomain, "an office's business line: one form names it").toBe(employer);
    expect((await identityOf(net(5), "isp", B))?.organizationDomain).toBe(employer);
    const day = Date.UTC(2026, 10, 20);
    const visitorHours = Array.from({ length: AROUND_THE_CLOCK.visits }, (_, i) => ({ visitorId: `v${i}`, at: new Date(day + 2 * i * 3_600_000) }));
    await store.recordActivity([{ ip: net(5), networkType: "isp", visitorHours }]);
    expect(await identityOf(net(5))).toBeUndefined();
    expect(await describeAddress(net(5))).toMatchObject({ guard: "shared", shared: true });
    expect(await identityOf(net(5), "isp", B), "the other account's range, recomputed with it").toBeUndefined();
  });

  it("when the reverse DNS cache time is shorter than a hotel's visits take to come around the clock, then they are counted still", async () => {
    const shortCache = new IdentityStore(db.prisma, {
      identities: { windowDays: WINDOW_DAYS, poolReverseDns: false, pendingDays: 30 }, reverseDns: { ...reverseDns(), cacheSeconds: 1 }, now,
    });
    const net = freshNet();
    const hotel = freshDomain("quayside");
    await shortCache.recordPtrEvidence([ptr(net(1), `gw.${hotel}`)]);
    offsetMs += 60_000; // past the cache time
    try {
      const day = Date.UTC(2026, 10, 21);
      const visitorHours = Array.from({ length: AROUND_THE_CLOCK.visits }, (_, i) => ({ visitorId: `v${i}`, at: new Date(day + 2 * i * 3_600_000) }));
      await shortCache.recordActivity([{ ip: net(1), networkType: "isp", visitorHours }]);
    } finally {
      offsetMs -= 60_000;
    }
    expect(await describeAddress(net(1))).toMatchObject({ guard: "shared", shared: true });
  });

  it(`when a dual-stack hotel's people give ${CONSUMERS} free-mail addresses, one on each family, and none its PTR domain's, then neither its IPv4 gateway nor its IPv6 site names it`, async () => {
    const net = freshNet();
    const hotel = freshDomain("quayside");
    const site = `2001:db8:${(++nets).toString(16)}`;
    await store.recordPtrEvidence([ptr(net(82), `gw.${hotel}`), ptr(`${site}:1::1`, `gw.${hotel}`)]);
    await store.recordFormEvidence([form(net(82), `guest.${randomBytes(3).toString("hex")}@gmail.com`)]);
    expect((await identityOf(net(82)))?.organizationDomain, "one private address: a colleague's").toBe(hotel);
    await store.recordFormEvidence([form(`${site}:1::1`, `guest.${randomBytes(3).toString("hex")}@gmail.com`)]);
    expect(await identityOf(`${site}:1::1`)).toBeUndefined();
    // the IPv4 /24 holds no new evidence: its recomputation follows the domain
    expect(await identityOf(net(82))).toBeUndefined();
    expect(await describeAddress(net(82))).toMatchObject({ guard: "shared", shared: true });
  });

  it("when an address holds an identity from e-mail and its PTR name then turns out to be a dynamic line's, then the identity is withdrawn", async () => {
    const net = await businessNet();
    await store.recordFormEvidence([form(net(1), person(freshDomain()))]);
    expect(await identityOf(net(1))).toBeDefined();
    await store.recordPtrEvidence([ptr(net(1), `dhcp-1.pool.${freshDomain("isp")}`)]);
    expect(await identityOf(net(1))).toBeUndefined();
  });

  it("when the PTR name is an ISP's generic name of a static business line, then it names nobody, marks a business line, and one person's e-mail names the organisation", async () => {
    const net = freshNet();
    const hosts = [`10-0-0-1.static.${freshDomain("isp")}`, `static-dsl-44.${freshDomain("isp")}`, `host44.biz.${freshDomain("isp")}`];
    for (const [i, host] of hosts.entries()) {
      const ip = net(i + 1);
      const domain = freshDomain();
      await store.recordPtrEvidence([ptr(ip, host)]);
      expect(await describeAddress(ip), host).toMatchObject({ organizationDomain: null, attributed: false, evidence: { reverseDns: 0 } });
      await store.recordFormEvidence([form(ip, person(domain))]);
      expect((await identityOf(ip))?.organizationDomain, host).toBe(domain);
    }
  });

  it(`when a PTR domain is seen on ${OPERATOR_PREFIXES} /24s, then it is the network operator's: it names nobody, and identities it made are withdrawn`, async () => {
    const operator = freshDomain("telco");
    const nets3 = [freshNet(), freshNet(), freshNet()];
    await store.recordPtrEvidence([ptr(nets3[0]!(1), `mail.${operator}`)]);
    await store.recordPtrEvidence([ptr(nets3[1]!(1), `web.${operator}`)]);
    expect((await identityOf(nets3[0]!(1)))?.organizationDomain).toBe(operator);
    await store.recordPtrEvidence([ptr(nets3[2]!(1), `ns.${operator}`)]);
    for (const net of nets3) expect(await identityOf(net(1))).toBeUndefined();
    // an e-mail domain that is the operator's names nobody either (a subscriber's mailbox)
    const net = freshNet();
    await store.recordFormEvidence([form(net(1), person(operator))]);
    expect(await identityOf(net(1))).toBeUndefined();
  });

  it(`when a PTR domain names ${OPERATOR_UNITS.addresses} addresses over ${OPERATOR_UNITS.ranges} /24s (fewer /24s than the prefix count), then it is an operator's: it names nobody`, async () => {
    const operator = freshDomain("provider");
    const [first, second] = [freshNet(), freshNet()];
    const half = OPERATOR_UNITS.addresses / 2;
    const hosts = Array.from({ length: half }, (_, i) => i + 1);
    await store.recordPtrEvidence(hosts.map((h) => ptr(first(h), `gw.${operator}`)));
    expect((await identityOf(first(1)))?.organizationDomain).toBe(operator); // one company's block: its own
    await store.recordPtrEvidence(hosts.map((h) => ptr(second(h), `gw.${operator}`)));
    expect(OPERATOR_UNITS.ranges).toBeLessThan(OPERATOR_PREFIXES);
    for (const ip of [first(1), second(half)]) expect(await identityOf(ip), ip).toBeUndefined();
  });

  it("when an address's PTR name is under a curated operator's domain, then it is no evidence: a company's form there names the company, not a shared address", async () => {
    const net = freshNet();
    const company = freshDomain();
    await store.recordPtrEvidence([ptr(net(1), "gw.static.hfc.comcastbusiness.net")]);
    await store.recordFormEvidence([form(net(1), person(company))]);
    expect(await identityOf(net(1))).toMatchObject({ organizationDomain: company, source: "form_email" });
  });

  it("when people give addresses at an operator's domain that no free-mail list holds, then they are subscribers' mailboxes: no identity, and they count as consumers", async () => {
    const net = freshNet();
    await store.recordFormEvidence([form(net(1), "jo@spectrum.net")]);
    expect(await identityOf(net(1))).toBeUndefined();
    await store.recordFormEvidence([form(net(1), "al@spectrum.net"), form(net(1), person(freshDomain()))]);
    expect(await describeAddress(net(1))).toMatchObject({ attributed: false, guard: "shared" });
  });

  it("when the PTR domain or an e-mail domain is the AS organisation's own, then it is no evidence", async () => {
    const net = freshNet();
    const own = freshDomain("carrier");
    await store.recordPtrEvidence([ptr(net(1), `office.${own}`, { networkDomain: own })]);
    await store.recordFormEvidence([form(net(2), person(own), { networkDomain: own })]);
    expect(await describeAddress(net(1))).toBeNull();
    expect(await describeAddress(net(2))).toBeNull();
  });
});

describe("addresses many people share", () => {
  it(`when more people give free-mail addresses at an address than business ones (${CONSUMERS} at least), then neither e-mail nor a PTR name no form bears out gives it an identity (CGNAT, a café, a hotel under its own brand); a form of the PTR's domain gives it back`, async () => {
    const net = await businessNet();
    await store.recordFormEvidence([form(net(1), person(freshDomain()))]);
    expect(await identityOf(net(1))).toBeDefined();
    await store.recordFormEvidence([form(net(1), `someone.${randomBytes(3).toString("hex")}@gmail.com`)]);
    expect(await identityOf(net(1)), "one free-mail person: a colleague's private address").toBeDefined();
    await store.recordFormEvidence([form(net(1), `other.${randomBytes(3).toString("hex")}@gmail.com`)]);
    expect(await identityOf(net(1))).toBeUndefined();
    expect(await describeAddress(net(1))).toMatchObject({ guard: "shared", shared: true, attributed: false });

    const domain = freshDomain();
    await store.recordPtrEvidence([ptr(net(2), `gw.${domain}`)]);
    await store.recordFormEvidence([form(net(2), `a.${randomBytes(3).toString("hex")}@gmail.com`)]);
    expect((await identityOf(net(2)))?.organizationDomain, "one private address: a colleague's").toBe(domain);
    await store.recordFormEvidence([form(net(2), `b.${randomBytes(3).toString("hex")}@gmail.com`)]);
    expect(await identityOf(net(2))).toBeUndefined();
    expect(await describeAddress(net(2))).toMatchObject({ guard: "shared", shared: true, attributed: false });
    await store.recordFormEvidence([form(net(2), person(domain))]);
    expect(await identityOf(net(2))).toMatchObject({ organizationDomain: domain, source: "reverse_dns", confidence: CONFIDENCE.reverseDnsAndEmail });
  });
});

describe("dynamic ranges", () => {
  it(`when e-mail in a /24 with an access line names ${DYNAMIC_RANGE_ORGANIZATIONS} organisations, then no address of it holds an identity from e-mail alone; a PTR-named one still does`, async () => {
    const net = await businessNet();
    const ptrDomain = freshDomain();
    await store.recordPtrEvidence([ptr(net(250), `router.${ptrDomain}`), ptr(net(200), `dhcp-200.pool.${freshDomain("isp")}`)]);
    for (let i = 1; i < DYNAMIC_RANGE_ORGANIZATIONS; i++) await store.recordFormEvidence([form(net(i * 10), person(freshDomain()))]);
    for (let i = 1; i < DYNAMIC_RANGE_ORGANIZATIONS; i++) expect(await identityOf(net(i * 10)), `.${i * 10}`).toBeDefined();
    await store.recordFormEvidence([form(net(100), person(freshDomain()))]);
    for (let i = 1; i < DYNAMIC_RANGE_ORGANIZATIONS; i++) expect(await identityOf(net(i * 10)), `.${i * 10}`).toBeUndefined();
    expect((await describeAddress(net(100)))?.guard).toBe("dynamic_range");
    expect((await identityOf(net(250)))?.organizationDomain).toBe(ptrDomain);
  });

  it(`when e-mail in a /24 without access lines names ${DYNAMIC_RANGE_ORGANIZATIONS} organisations (an ISP's business block), then each static line keeps its organisation`, async () => {
    const net = await businessNet();
    for (let i = 1; i <= DYNAMIC_RANGE_ORGANIZATIONS; i++) await store.recordFormEvidence([form(net(i * 10), person(freshDomain()))]);
    for (let i = 1; i <= DYNAMIC_RANGE_ORGANIZATIONS; i++) expect(await identityOf(net(i * 10)), `.${i * 10}`).toBeDefined();
  });
});

describe("people seen at several addresses", () => {
  it("when the only person of an address sent forms from another address too (a re-dialled line), then neither address holds an identity by them; a settled colleague's form gives one", async () => {
    const [here, there] = [await businessNet(), await businessNet()];
    const domain = freshDomain();
    const roamer = person(domain);
    await store.recordFormEvidence([form(here(1), roamer)]);
    expect(await identityOf(here(1))).toBeDefined();
    await store.recordFormEvidence([form(there(1), roamer)]);
    expect(await identityOf(here(1))).toBeUndefined();
    expect(await identityOf(there(1))).toBeUndefined();
    expect((await describeAddress(here(1)))?.guard).toBe("moving_person");
    await store.recordFormEvidence([form(here(1), person(domain))]);
    expect(await identityOf(here(1))).toMatchObject({ organizationDomain: domain, confidence: CONFIDENCE.emailOfOnePerson });
  });
});

describe("network types", () => {
  it("when the address is a mobile carrier's, then evidence is not even recorded and only a declaration identifies it", async () => {
    const net = freshNet();
    await store.recordFormEvidence([form(net(1), person(freshDomain()), { networkType: "mobile" })]);
    await store.recordPtrEvidence([ptr(net(1), `gw.${freshDomain()}`, { networkType: "mobile" })]);
    expect(await describeAddress(net(1), "mobile")).toBeNull();
    await declaredNetworks(db.prisma).declare(A, declarationOf({ cidr: `${net(0)}/24`, organizationName: "Field Sales" }));
    expect(await identityOf(net(1), "mobile")).toMatchObject({ source: "declared", organizationName: "Field Sales", organizationDomain: null });
  });

  it("when the address is a hoster's, then e-mail alone does not identify it (a VPN exit is shared) but a PTR name does", async () => {
    const net = await businessNet();
    const domain = freshDomain();
    await store.recordFormEvidence([form(net(1), person(domain), { networkType: "hosting" })]);
    expect(await identityOf(net(1), "hosting")).toBeUndefined();
    expect(await describeAddress(net(1), "hosting")).toMatchObject({ guard: "network_type", attributed: false, organizationDomain: null });
    await store.recordPtrEvidence([ptr(net(1), `vpn.${domain}`, { networkType: "hosting" })]);
    expect(await identityOf(net(1), "hosting")).toMatchObject({ source: "reverse_dns", confidence: CONFIDENCE.reverseDnsAndEmail });
  });

  it("when a business network's address is asked, then evidence does not identify it (its own AS does)", async () => {
    const net = await businessNet();
    await store.recordFormEvidence([form(net(1), person(freshDomain()))]);
    expect(await identityOf(net(1), "isp")).toBeDefined();
    expect(await identityOf(net(1), "business")).toBeUndefined();
  });
});

describe("prefixes", () => {
  it("when two addresses close together are one organisation's by e-mail, then the smallest prefix holding them is, and nothing outside it", async () => {
    const net = freshNet();
    const domain = freshDomain();
    await store.recordFormEvidence([form(net(17), person(domain)), form(net(22), person(domain)), form(net(22), person(domain))]);
    expect(await identityOf(net(20))).toEqual({ organizationName: domain, organizationDomain: domain, source: "form_email", confidence: CONFIDENCE.emailOfOnePerson, prefix: `${net(16)}/29` });
    expect((await identityOf(net(22)))?.confidence).toBe(CONFIDENCE.emailOfSeveralPeople);
    expect(await identityOf(net(24))).toBeUndefined();
    // a masked address stands for the whole /24, which is not the organisation's
    expect(await store.identityOf(A, net(0), "isp", { masked: true })).toBeUndefined();
  });

  it("when another organisation's evidence lies inside the span, then there is no prefix identity", async () => {
    const net = freshNet();
    const domain = freshDomain();
    await store.recordFormEvidence([form(net(17), person(domain)), form(net(22), person(domain)), form(net(19), person(freshDomain()))]);
    expect(await identityOf(net(20))).toBeUndefined();
    expect(await identityOf(net(17))).toBeDefined();
  });

  it("when a dynamic line lies inside the span, then there is no prefix identity", async () => {
    const net = freshNet();
    const domain = freshDomain();
    await store.recordPtrEvidence([ptr(net(19), `dyn.pool.${freshDomain("isp")}`)]);
    await store.recordFormEvidence([form(net(17), person(domain)), form(net(22), person(domain))]);
    expect(await identityOf(net(20))).toBeUndefined();
  });

  it("when addresses far apart are one organisation's by e-mail only, then the prefix would be too wide: only the addresses themselves", async () => {
    const net = freshNet();
    const domain = freshDomain();
    await store.recordFormEvidence([form(net(1), person(domain)), form(net(200), person(domain))]);
    expect(await identityOf(net(100))).toBeUndefined();
    expect(await identityOf(net(200))).toBeDefined();
  });

  it("when addresses far apart carry PTR names under the organisation's domain, then the whole /24 is its, masked addresses included", async () => {
    const net = freshNet();
    const domain = freshDomain();
    await store.recordPtrEvidence([ptr(net(1), `a.${domain}`), ptr(net(200), `b.${domain}`)]);
    expect(await identityOf(net(100))).toMatchObject({ organizationDomain: domain, source: "reverse_dns", prefix: `${net(0)}/24` });
    expect(await store.identityOf(A, net(0), "isp", { masked: true })).toMatchObject({ organizationDomain: domain, prefix: `${net(0)}/24` });
  });

  it("when two IPv6 /64s of a /48 are one organisation's, then their covering prefix is, and any address of either /64 is the same unit", async () => {
    const domain = freshDomain();
    const base = `2001:db8:${(++nets).toString(16)}`;
    await store.recordFormEvidence([form(`${base}:2::1`, person(domain)), form(`${base}:3::abcd`, person(domain))]);
    expect(await identityOf(`${base}:2:ffff::9`)).toMatchObject({ organizationDomain: domain, prefix: `${base}:2::/64` });
    expect(await identityOf(`${base}:3:1:2:3:4`)).toMatchObject({ prefix: `${base}:3::/64` });
    expect(await identityOf(`${base}:4::1`)).toBeUndefined();
    await store.recordFormEvidence([form(`${base}:5::1`, person(domain))]);
    expect(await identityOf(`${base}:4::1`)).toMatchObject({ organizationDomain: domain, prefix: `${base}::/61` });
  });
});

describe("window and expiry", () => {
  it("when no evidence renews an identity within the window, then it lapses at expiresAt and expire() deletes it (and the counts of when visits came)", async () => {
    const net = await businessNet();
    const domain = freshDomain();
    await store.recordFormEvidence([form(net(1), person(domain))]);
    // visits by hour are counted where a PTR domain names the address or marks a business line (businessNet's first 64), not elsewhere
    await store.recordPtrEvidence([ptr(net(2), `gw.${freshDomain()}`)]);
    const oneVisit = (ip: string): SeenAt => ({ ip, networkType: "isp", visitorHours: [{ visitorId: "v", at: now() }] });
    await store.recordActivity([oneVisit(net(1)), oneVisit(net(2)), oneVisit(net(100))]);
    expect(await db.prisma.addressActivity.count({ where: { unit: { in: [`${net(1)}/32`, `${net(2)}/32`, `${net(100)}/32`] } } })).toBe(2);
    const described = await describeAddress(net(1));
    expect(Date.parse(described!.expiresAt!) - Date.parse(described!.lastSeenAt)).toBe(WINDOW_DAYS * DAY);
    offsetMs += (WINDOW_DAYS - 1) * DAY;
    try {
      expect(await identityOf(net(1))).toBeDefined();
      offsetMs += 2 * DAY;
      expect(await identityOf(net(1))).toBeUndefined();
      const expired = await store.expire();
      expect(expired.evidence).toBeGreaterThanOrEqual(1);
      const left = await db.prisma.identityEvidence.count({ where: { unit: `${net(1)}/32` } });
      expect(left).toBe(0);
      expect(await db.prisma.addressActivity.count({ where: { unit: `${net(2)}/32` } }), "when visits came there, by hour").toBe(0);
      expect(await db.prisma.networkIdentity.count({ where: { prefix: `${net(1)}/32` } })).toBe(0);
    } finally {
      offsetMs -= (WINDOW_DAYS + 1) * DAY;
    }
  });

  it.each(["this", "another"])("when the other organisation of a shared address lapses (%s account's form), then after expire() the address is the remaining organisation's", async (whose) => {
    const net = await businessNet();
    const leavingAccount = whose === "this" ? A : B;
    const [stays, leaves] = [freshDomain(), freshDomain()];
    offsetMs -= 60 * DAY;
    try {
      await store.recordFormEvidence([form(net(1), person(leaves), { accountId: leavingAccount })]);
    } finally {
      offsetMs += 60 * DAY;
    }
    await store.recordFormEvidence([form(net(1), person(stays))]);
    expect((await describeAddress(net(1)))?.guard).toBe("shared");
    offsetMs += 40 * DAY;
    try {
      await store.expire();
      expect(await identityOf(net(1))).toMatchObject({ organizationDomain: stays });
    } finally {
      offsetMs -= 40 * DAY;
    }
  });

  it("when evidence is older than the window, then it does not count even before expire() runs", async () => {
    const net = freshNet();
    const domain = freshDomain();
    await store.recordFormEvidence([form(net(1), person(domain), { at: new Date(now().getTime() - (WINDOW_DAYS + 1) * DAY) })]);
    expect(await identityOf(net(1))).toBeUndefined();
  });
});

describe("eraseContributor", () => {
  it("when a person is erased, then their contribution is gone and the identity is recomputed without it, in the caller's transaction", async () => {
    const net = await businessNet();
    const domain = freshDomain();
    const [jane, joe] = [person(domain), person(domain)];
    await store.recordFormEvidence([form(net(1), jane), form(net(1), joe)]);
    expect((await identityOf(net(1)))?.confidence).toBe(CONFIDENCE.emailOfSeveralPeople);
    const removed = await db.prisma.$transaction(async (tx) => store.eraseContributor(A, await store.contributorKeys([jane.toUpperCase()], tx), tx));
    expect(removed).toBe(1);
    expect((await identityOf(net(1)))?.confidence).toBe(CONFIDENCE.emailOfOnePerson);
    await store.eraseContributor(A, await store.contributorKeys([joe]));
    expect(await identityOf(net(1))).toBeUndefined();
    expect(await db.prisma.networkIdentity.count({ where: { range: `${net(0)}/24`, organizationDomain: { not: null } } })).toBe(0);
  });

  it("when a person is erased in one account, then another account's evidence of the same person stays", async () => {
    const net = await businessNet();
    const domain = freshDomain();
    const jane = person(domain);
    await store.recordFormEvidence([form(net(1), jane), form(net(1), jane, { accountId: B })]);
    await store.eraseContributor(A, await store.contributorKeys([jane]));
    expect(await identityOf(net(1), "isp", A)).toBeUndefined();
    expect(await identityOf(net(1), "isp", B)).toMatchObject({ organizationDomain: domain });
  });

  it("when evidence is stored, then no table of identities holds the e-mail address, only its domain and a keyed hash", async () => {
    const net = freshNet();
    const domain = freshDomain();
    const address = person(domain);
    await store.recordFormEvidence([form(net(1), address)]);
    const rows = JSON.stringify([await db.prisma.identityEvidence.findMany({ where: { unit: `${net(1)}/32` } }), await db.prisma.networkIdentity.findMany({ where: { range: `${net(0)}/24` } })], (_k, v) => (typeof v === "bigint" ? String(v) : v));
    expect(rows).toContain(domain);
    expect(rows.toLowerCase()).not.toContain(address.split("@")[0]);
    expect(rows).toMatch(/"contributor":"[0-9a-f]{64}"/);
  });
});

describe("scope", () => {
  it("when one account's visitors made an identity, then another account does not see it (e-mail or reverse DNS)", async () => {
    const net = await businessNet([A]);
    await store.recordFormEvidence([form(net(1), person(freshDomain()))]);
    await store.recordPtrEvidence([ptr(net(2), `gw.${freshDomain()}`)]);
    expect(await identityOf(net(1), "isp", A)).toBeDefined();
    expect(await identityOf(net(2), "isp", A)).toBeDefined();
    expect(await identityOf(net(1), "isp", B)).toBeUndefined();
    expect(await identityOf(net(2), "isp", B)).toBeUndefined();
    expect(await describeAddress(net(1), "isp", B)).toBeNull();
  });

  it("when reverse DNS is pooled, then a PTR identity learned through one account serves every account, and e-mail evidence still does not", async () => {
    const pooled = storeWith({ poolReverseDns: true });
    const net = freshNet();
    const [ptrDomain, mailDomain] = [freshDomain(), freshDomain()];
    await pooled.recordPtrEvidence([ptr(net(1), `gw.${ptrDomain}`)]);
    await pooled.recordFormEvidence([form(net(2), person(mailDomain))]);
    expect(await identityOf(net(1), "isp", B, pooled)).toMatchObject({ organizationDomain: ptrDomain, source: "reverse_dns" });
    expect(await identityOf(net(2), "isp", B, pooled)).toBeUndefined();
    // an account's own e-mail of another organisation names nothing for another account
    await pooled.recordFormEvidence([form(net(3), person(mailDomain), { accountId: B }), form(net(3), person(mailDomain), { accountId: B })]);
    expect(await identityOf(net(3), "isp", B, pooled)).toMatchObject({ organizationDomain: mailDomain });
    expect(await identityOf(net(3), "isp", A, pooled)).toBeUndefined();
  });

  it(`when another account's visitors' forms show a PTR domain to be a host's (${HOST_TENANTS} other organisation, never the domain), then it names nobody for this account either, and this account's ranges bearing it are recomputed (withdrawal), named again at once when that form is erased`, async () => {
    const [net, away] = [freshNet(), freshNet()];
    const host = freshDomain("kallisto");
    await store.recordPtrEvidence([ptr(net(1), `gw.${host}`), ptr(away(1), `gw2.${host}`), ptr(net(1), `gw.${host}`, { accountId: B })]);
    expect((await identityOf(away(1), "isp", A))?.organizationDomain, "a company's own gateway name, as far as A's evidence says").toBe(host);
    store.takeRecomputed();
    const guest = person(freshDomain());
    await store.recordFormEvidence([form(net(1), guest, { accountId: B })]);
    expect(await identityOf(away(1), "isp", A)).toBeUndefined();
    expect(await describeAddress(away(1), "isp", A)).toMatchObject({ guard: "shared", shared: true });
    expect(store.takeRecomputed()).toContainEqual({ scope: A, range: `${away(0)}/24` });
    // the guest erased in the other account: this account names the domain again at once
    await store.eraseContributor(B, await store.contributorKeys([guest]));
    expect((await identityOf(away(1), "isp", A))?.organizationDomain).toBe(host);
    await store.recordFormEvidence([form(net(1), person(freshDomain()), { accountId: B })]);
    expect(await identityOf(away(1), "isp", A)).toBeUndefined();
    // a form of the domain itself, in any account, says it is a company's own line after all (its staff),
    // whose own name another account's visitors' forms do not take away; in that account its forms name two
    await store.recordFormEvidence([form(away(1), person(host))]);
    expect((await identityOf(away(1), "isp", A))?.organizationDomain).toBe(host);
    expect((await identityOf(net(1), "isp", A))?.organizationDomain).toBe(host);
    expect(await describeAddress(net(1), "isp", B)).toMatchObject({ guard: "shared" });
  });

  it("when another account's visitors' forms name another organisation at an address this account names, then it is shared for this account too (withdrawn), never named by the other's forms, and named again once that form is erased", async () => {
    const net = await businessNet();
    const [tenant, other] = [freshDomain("tenant"), freshDomain("other")];
    const theOther = person(other);
    await store.recordFormEvidence([form(net(1), person(tenant)), form(net(2), person(other), { accountId: B })]);
    expect((await identityOf(net(1), "isp", A))?.organizationDomain, "one person's form on a business line").toBe(tenant);
    expect(await identityOf(net(2), "isp", A), "another account's form names nothing for this one").toBeUndefined();
    store.takeRecomputed();
    await store.recordFormEvidence([form(net(1), theOther, { accountId: B })]);
    expect(await identityOf(net(1), "isp", A)).toBeUndefined();
    expect(await describeAddress(net(1), "isp", A)).toMatchObject({ guard: "shared", shared: true, evidence: { organizations: 1 } });
    expect(await identityOf(net(1), "isp", B)).toBeUndefined();
    expect(store.takeRecomputed(), "this account's range recomputed: its attributions there are withdrawn").toContainEqual({ scope: A, range: `${net(0)}/24` });
    // the same organisation named in both accounts is no second one
    await store.recordFormEvidence([form(net(3), person(tenant)), form(net(3), person(tenant), { accountId: B })]);
    expect((await identityOf(net(3), "isp", A))?.organizationDomain).toBe(tenant);
    await store.eraseContributor(B, await store.contributorKeys([theOther]));
    expect((await identityOf(net(1), "isp", A))?.organizationDomain, "named again once the other's form is erased").toBe(tenant);
  });

  it("when a person's form is seen again at the same address, then only its own range is recomputed (nothing new for other accounts)", async () => {
    const net = await businessNet();
    const jane = person(freshDomain());
    await store.recordFormEvidence([form(net(1), jane), form(net(1), person(freshDomain()), { accountId: B })]);
    store.takeRecomputed();
    await store.recordFormEvidence([form(net(1), jane)]);
    expect(store.takeRecomputed()).toEqual([{ scope: A, range: `${net(0)}/24` }]);
    await store.recordFormEvidence([form(net(1), person(freshDomain()))]);
    expect(store.takeRecomputed(), "a new person: the other account's range too").toContainEqual({ scope: B, range: `${net(0)}/24` });
  });

  it("when two accounts' forms naming two organisations at one address come in one batch, then it is shared for both (whichever account is recomputed first)", async () => {
    const net = await businessNet();
    await store.recordFormEvidence([form(net(1), person(freshDomain())), form(net(1), person(freshDomain()), { accountId: B })]);
    expect(await describeAddress(net(1), "isp", A)).toMatchObject({ guard: "shared" });
    expect(await describeAddress(net(1), "isp", B)).toMatchObject({ guard: "shared" });
  });

  it("when another account's visitor's form names another organisation at an address named by its own organisation's PTR name, then it stays named (a guest on a company's Wi-Fi)", async () => {
    const net = freshNet();
    const [company, visitorsEmployer] = [freshDomain(), freshDomain()];
    await store.recordPtrEvidence([ptr(net(1), `gw.${company}`), ptr(net(1), `gw.${company}`, { accountId: B })]);
    await store.recordFormEvidence([form(net(1), person(company)), form(net(1), person(visitorsEmployer), { accountId: B })]);
    expect(await identityOf(net(1), "isp", A)).toMatchObject({ organizationDomain: company, source: "reverse_dns" });
    // in the visitor's own account the address is shared, as ever (its forms name two organisations)
    expect(await describeAddress(net(1), "isp", B)).toMatchObject({ guard: "shared" });
  });
});

describe("identitiesOf", () => {
  it("when a batch asks for many addresses of several accounts, then each gets its own answer, in order", async () => {
    const net = await businessNet();
    const [one, two] = [freshDomain(), freshDomain()];
    await store.recordFormEvidence([form(net(1), person(one)), form(net(2), person(two), { accountId: B })]);
    const queries = Array.from({ length: 300 }, (_, i) => ({ accountId: i % 2 ? B : A, ip: net(1 + (i % 3)), networkType: "isp" as const }));
    const answers = await store.identitiesOf(queries);
    expect(answers).toHaveLength(300);
    answers.forEach((answer, i) => {
      const expected = queries[i]!.accountId === A && queries[i]!.ip === net(1) ? one : queries[i]!.accountId === B && queries[i]!.ip === net(2) ? two : undefined;
      expect(answer?.organizationDomain, `query ${i}`).toBe(expected);
    });
  });
});

describe("learnReverseDns", () => {
  it("when addresses are learned, then their PTR names become evidence, each address asked once within the cache time", async () => {
    const learner = storeWith({}, true);
    const net = freshNet();
    const [domain, isp] = [freshDomain(), freshDomain("isp")];
    dns.zone.ptr.set(reverseName(net(1)), `office.${domain}`);
    dns.zone.ptr.set(reverseName(net(2)), `dyn-2.pool.${isp}`);
    const asked = () => dns.asked.filter((q) => q.name === reverseName(net(1)) || q.name === reverseName(net(2))).length;
    const addresses = [net(1), net(2), net(3), net(1)].map((ip) => ({ accountId: A, ip, networkType: "isp" as const }));
    expect(await learner.learnReverseDns(addresses)).toBe(3);
    expect(await identityOf(net(1))).toMatchObject({ organizationDomain: domain, source: "reverse_dns" });
    await learner.recordFormEvidence([form(net(2), person(freshDomain()))]);
    expect((await describeAddress(net(2)))?.guard).toBe("dynamic_line");
    expect(await learner.learnReverseDns(addresses)).toBe(0);
    expect(asked()).toBe(2);
    // another account's visitor from the same address: recorded for it without asking again
    expect(await learner.learnReverseDns([{ accountId: B, ip: net(1), networkType: "isp" }])).toBe(0);
    expect(await identityOf(net(1), "isp", B)).toMatchObject({ organizationDomain: domain });
  });

  it("when a look-up gets no answer in time, then the address is asked again after 5 minutes, not after the cache time", async () => {
    const learner = storeWith({}, true);
    const ip = freshNet()(1);
    dns.zone.silent.add(reverseName(ip));
    const address = [{ accountId: A, ip, networkType: "isp" as const }];
    expect(await learner.learnReverseDns(address)).toBe(1);
    expect(await learner.learnReverseDns(address)).toBe(0);
    offsetMs += 6 * 60_000;
    try {
      expect(await learner.learnReverseDns(address)).toBe(1);
    } finally {
      offsetMs -= 6 * 60_000;
    }
  });

  it("when an IPv6 visitor's privacy address has no PTR name, then its site's gateway's names it: ::1 of the /64, else ::1 of the /48, the latter asked once per /48", async () => {
    const learner = storeWith({}, true);
    const base = `2001:db8:${(++nets).toString(16)}`;
    const [lanOwner, siteOwner] = [freshDomain(), freshDomain()];
    dns.zone.ptr.set(reverseName6(`${base}:1::1`), `gw.${lanOwner}`);
    dns.zone.ptr.set(reverseName6(`${base}::1`), `edge.${siteOwner}`);
    const visitors = [`${base}:1:a1b2:c3d4:e5f6:1234`, `${base}:2:9:8:7:6`, `${base}:3:5:4:3:2`];
    await learner.learnReverseDns(visitors.map((ip) => ({ accountId: A, ip, networkType: "isp" as const })));
    expect(await identityOf(visitors[0]!)).toMatchObject({ organizationDomain: lanOwner, source: "reverse_dns", prefix: `${base}:1::/64` });
    expect(await identityOf(visitors[1]!)).toMatchObject({ organizationDomain: siteOwner, source: "reverse_dns" });
    expect(await identityOf(visitors[2]!)).toMatchObject({ organizationDomain: siteOwner, source: "reverse_dns" });
    expect(dns.asked.filter((q) => q.name === reverseName6(`${base}::1`)).length).toBe(1);
  });

  it("when reverse DNS is off, then nothing is asked", async () => {
    expect(await store.learnReverseDns([{ accountId: A, ip: freshNet()(1), networkType: "isp" }])).toBe(0);
  });
});
