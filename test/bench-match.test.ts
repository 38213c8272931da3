// bench:match's arithmetic and world, without a service: the ground truth of a small hand-made
// world (what is business, knowable, known only later), the figures computed from leads read back,
// the wrong counts that fail a run, and the invariants of a generated world.
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { isbot } from "isbot";
import { afterEach, describe, expect, it } from "vitest";
import { serviceClient, WrongAnswer } from "../bench/match/api.ts";
import { drive, readBack, waitForDrain, worldStart } from "../bench/match/driver.ts";
import { getDomain } from "tldts";
import { reverseName, v6Text, v6Value } from "../bench/match/addresses.ts";
import { declared, evaluate, type LeadReadBack, namesOrganisation, undeclared, verdicts } from "../bench/match/evaluate.ts";
import {
  ACCESS_STYLES, type AccessStyle, accessLinePtr, BUSINESS_STYLES, type BusinessStyle, businessLinePtr, FREE_MAIL, isFreeMail, type OperatorNaming, ownPtr, USER_AGENTS,
} from "../bench/match/names.ts";
import { numberOf, type Network } from "../bench/match/networks.ts";
import { createRandom } from "../bench/match/random.ts";
import { groundTruth } from "../bench/match/truth.ts";
import { type RunResult, withoutLookalikeHosts } from "../bench/match/report.ts";
import { buildWorld, type Kind, type Naming, type Organisation, type Person, type Site, type World } from "../bench/match/world.ts";

const org = (id: number, name: string, domain: string, kind: Organisation["kind"], names: string[] = []): Organisation => ({ id, name, domain, kind, names, domains: [domain] });
const person = (id: number, kind: Kind, orgId: number | null, address: string, siteId = 0): Person => ({
  id, kind, orgId, visitorId: `visitor${id}xx`, email: "", name: "", userAgent: "", formRate: 0,
  where: kind === "home_worker" || kind === "household" ? { type: "household", pool: [], period: 1, phase: 0, leases: [{ from: 0, address }] } : { type: "site", siteId, address, lan: 0 },
});
const site = (id: number, kind: Site["kind"], orgId: number | null, naming: Naming, v4: string[], v6?: Site["v6"]): Site => ({ id, kind, orgId, naming, v4, ...(v6 ? { v6 } : {}) });
const V6_SITE = "2001:db8:1::";

/**
 * Visits v0..v11 over 10 days: an own-AS organisation's (v0); a static line named under its
 * company's domain (v1); a static line with the operator's name whose company's form comes between
 * v2 and v3; a host where two tenants sent forms (v4, v5); a home worker who sent their employer's
 * domain (v6) and a household (v7); a line without PTR where a second person's form (after v9)
 * makes the company knowable (v8-v10); a company's IPv6 site whose form came from another LAN (v11).
 */
function tinyWorld(): World {
  const orgs = [
    org(0, "ACME Corp", "acme.com", "own_as", ["ACME Corp"]),
    org(1, "Mueller Bau GmbH", "mueller-bau.de", "static"),
    org(2, "Nordwind Logistik GmbH", "nordwind-logistik.de", "static"),
    org(3, "A Coworker AB", "a-coworker.se", "tenant"),
    org(4, "B Coworker AB", "b-coworker.se", "tenant"),
    org(5, "Kessler Tools GmbH", "kessler-tools.de", "static"),
    org(6, "Vantara Labs Inc.", "vantara-labs.com", "static"),
  ];
  const sites = [
    site(0, "own_as", 0, "none", ["17.0.0.10"]),
    site(1, "static", 1, "own", ["203.0.113.9"]),
    site(2, "static", 2, "operator", ["203.0.113.17"]),
    { ...site(3, "host", null, "host", ["198.51.100.5"]), host: "coworking" as const },
    site(4, "static", 5, "none", ["203.0.113.33"]),
    site(5, "static", 6, "operator", [], { prefix: V6_SITE, lans: [0, 1] }),
  ];
  const people = [
    person(0, "own_as", 0, "17.0.0.10", 0),
    person(1, "static", 1, "203.0.113.9", 1),
    person(2, "static", 2, "203.0.113.17", 2),
    person(3, "tenant", 3, "198.51.100.5", 3),
    person(4, "tenant", 4, "198.51.100.5", 3),
    person(5, "home_worker", 1, "192.0.2.44"),
    person(6, "household", null, "192.0.2.45"),
    person(7, "static", 5, "203.0.113.33", 4),
    person(8, "static", 5, "203.0.113.33", 4),
    person(9, "static", 6, "", 5),
  ];
  const v4 = (personId: number): { address: string; unit: string; family: 4 | 6 } => {
    const where = people[personId]!.where;
    const address = where.type === "site" ? where.address : where.type === "household" ? where.leases![0]!.address : "";
    return { address, unit: address, family: 4 as const };
  };
  const visit = (n: number, personId: number, day: number, origin = v4(personId)) => ({ ...origin, visitId: `v${n}`, personId, day });
  const v6 = (address: string) => ({ address, unit: `${V6_SITE}/48`, family: 6 as const });
  const form = (personId: number, domain: string, day: number, afterVisits: number, origin = v4(personId)) => ({ ...origin, personId, domain, day, afterVisits });
  return {
    options: { seed: 1, orgs: 7, visits: 12, days: 10, mix: "v4" },
    site: "www.matchbench.example",
    orgs,
    people,
    sites,
    unitSite: new Map([["17.0.0.10", 0], ["203.0.113.9", 1], ["203.0.113.17", 2], ["198.51.100.5", 3], ["203.0.113.33", 4], [`${V6_SITE}/48`, 5]]),
    sessions: [],
    visits: [
      visit(0, 0, 1), visit(1, 1, 1), visit(2, 2, 1), visit(3, 2, 6), visit(4, 3, 6), visit(5, 4, 6), visit(6, 5, 6), visit(7, 6, 6),
      visit(8, 7, 6), visit(9, 8, 7), visit(10, 7, 8), visit(11, 9, 8, v6("2001:db8:1:1::abcd")),
    ],
    forms: [
      form(2, "nordwind-logistik.de", 3, 3),
      form(3, "a-coworker.se", 6, 5),
      form(4, "b-coworker.se", 6, 6),
      form(5, "mueller-bau.de", 6, 7),
      form(6, FREE_MAIL[0]!, 6, 8),
      form(7, "kessler-tools.de", 6, 9),
      form(8, "kessler-tools.de", 7, 10),
      form(9, "vantara-labs.com", 8, 11, v6("2001:db8:1::beef")),
    ],
    ptr: new Map([
      ["203.0.113.9", "gw.mueller-bau.de"],
      ["203.0.113.17", "kd512345.ham.velora-firmen.de"],
    ]),
    declarations: [
      { cidr: "203.0.113.16/29", orgId: 2, organizationName: "Nordwind Logistik GmbH", organizationDomain: "nordwind-logistik.de", when: "midway" },
      { cidr: "192.0.2.0/24", orgId: 1, organizationName: "Mueller Bau GmbH", organizationDomain: "mueller-bau.de", when: "start", consumerPool: true },
    ],
    operators: new Map(),
    others: [],
  };
}

const url = (id: string) => `https://www.matchbench.example/pricing?bv=${id}`;
const lead = (leadId: string, organizationName: string, organizationDomain: string | null, ids: string[]): LeadReadBack => ({
  leadId, organizationName, organizationDomain, visitUrls: ids.map(url),
});
const truthRows = (world: World, declarations = false) => groundTruth(world, { declarations }).map((t) => [t.visitId, t.row, t.orgId, t.knowable, t.beforeEvidence]);

describe("groundTruth", () => {
  it("when the world is read, then each visit gets its row, organisation and knowability, and the declared networks' visits are marked", () => {
    const truths = groundTruth(tinyWorld(), { declarations: false });
    expect(truths.map((t) => [t.visitId, t.row, t.orgId, t.knowable, t.beforeEvidence])).toEqual([
      ["v0", "own AS", 0, true, false],
      ["v1", "static, own PTR", 1, true, false],
      ["v2", "static, operator's name", 2, true, true], // one form on a business-named line; it came after v2: knowable only by backfill
      ["v3", "static, operator's name", 2, true, false],
      ["v4", "host tenant", 3, false, false], // two tenants' domains at the host: nobody's
      ["v5", "host tenant", 4, false, false],
      ["v6", "home worker", null, false, false], // a business domain from a household line is no evidence
      ["v7", "household", null, false, false],
      ["v8", "static, no PTR", 5, true, true], // a line without PTR: knowable from the second person's form on
      ["v9", "static, no PTR", 5, true, true],
      ["v10", "static, no PTR", 5, true, false],
      ["v11", "static, operator's name", 6, true, false], // the form came from another LAN of the site's /48
    ]);
    expect(truths.filter((t) => t.declared).map((t) => t.visitId)).toEqual(["v2", "v3", "v6", "v7"]);
    expect(truths.map((t) => t.family)).toEqual([...Array(11).fill(4), 6]);
  });

  it("when one person's form is all a line without PTR shows, then its visits are not knowable (it could be a household)", () => {
    const world = tinyWorld();
    world.forms = world.forms.filter((f) => f.personId !== 8);
    expect(truthRows(world).filter(([, row]) => row === "static, no PTR").map(([id, , , knowable]) => [id, knowable])).toEqual([["v8", false], ["v9", false], ["v10", false]]);
  });

  it("when only one tenant of a host sent a form, then its visits there are knowable only once a second form came on another day", () => {
    const world = tinyWorld();
    world.forms = world.forms.filter((f) => f.domain !== "b-coworker.se");
    expect(truthRows(world).filter(([, row]) => row === "host tenant")).toEqual([["v4", "host tenant", 3, false, false], ["v5", "host tenant", 4, false, false]]);
    world.forms.push({ ...world.forms.find((f) => f.domain === "a-coworker.se")!, day: 9, afterVisits: 12 });
    expect(truthRows(world).filter(([, row]) => row === "host tenant")).toEqual([["v4", "host tenant", 3, true, true], ["v5", "host tenant", 4, false, false]]);
  });

  it("when a host showed only its own brand's PTR name, or one person's form under an operator's business-line name, then its visits are a look-alike host's", () => {
    const hostVisits = (world: World) => groundTruth(world, { declarations: false }).filter((t) => t.row === "host tenant").map((t) => [t.visitId, t.lookalikeHost]);
    const world = tinyWorld();
    world.sites[3]!.domain = "quayside.se";
    expect(hostVisits(world)).toEqual([["v4", false], ["v5", false]]); // its tenants' forms name two organisations
    const [aForm, bForm] = world.forms.filter((f) => f.domain.endsWith("-coworker.se"));
    world.forms = world.forms.filter((f) => !f.domain.endsWith("-coworker.se"));
    expect(hostVisits(world)).toEqual([["v4", true], ["v5", true]]);
    expect(groundTruth(world, { declarations: false }).filter((t) => t.lookalikeHost).map((t) => t.visitId)).toEqual(["v4", "v5"]);
    const privately = (personId: number, day: number) => ({ ...aForm!, personId, domain: "gmail.com", day });
    world.forms.push(privately(4, 2));
    expect(hostVisits(world)).toEqual([["v4", true], ["v5", true]]); // one private address: anybody's
    world.forms.push(privately(5, 3));
    expect(hostVisits(world)).toEqual([["v4", false], ["v5", false]]); // two people giving private addresses: not an office's people
    world.forms = world.forms.filter((f) => f.domain !== "gmail.com");
    world.sites[3]!.domain = "quayside-cowork.se"; // a word says what it is
    expect(hostVisits(world)).toEqual([["v4", false], ["v5", false]]);
    world.sites[3]!.naming = "operator";
    world.forms.push(aForm!);
    expect(hostVisits(world)).toEqual([["v4", true], ["v5", true]]); // one tenant's word on a business line
    world.forms.push({ ...bForm!, domain: "a-coworker.se" }); // a second person
    expect(hostVisits(world)).toEqual([["v4", false], ["v5", false]]);
  });

  it("when another partner's website got its tenants' forms at a host, then the host is no look-alike on the measured one's (the service learns a host across accounts)", () => {
    const hostVisits = (world: World) => groundTruth(world, { declarations: false }).filter((t) => t.row === "host tenant").map((t) => t.lookalikeHost);
    const world = tinyWorld();
    world.sites[3]!.domain = "quayside.se";
    const tenantForms = world.forms.filter((f) => f.domain.endsWith("-coworker.se"));
    world.forms = world.forms.filter((f) => !f.domain.endsWith("-coworker.se"));
    expect(hostVisits(world)).toEqual([true, true]);
    world.others = [{ site: "www.partner2.example", sessions: [], visits: [], forms: tenantForms }];
    expect(hostVisits(world)).toEqual([false, false]);
  });

  it("when the service took the declarations, then a declared organisation's visits are knowable from the declaration, the household pool's stay not business", () => {
    const truths = groundTruth(tinyWorld(), { declarations: true }).filter((t) => t.declared);
    expect(truths.map((t) => [t.visitId, t.business, t.knowable, t.beforeEvidence])).toEqual([
      ["v2", true, true, true],
      ["v3", true, true, false],
      ["v6", false, false, false],
      ["v7", false, false, false],
    ]);
  });
});

describe("evaluate", () => {
  const world = tinyWorld();
  const truths = groundTruth(world, { declarations: false });

  it("when leads take right, wrong and no visits, then the headline counts each with its numerator and denominator, without the declared networks' visits", () => {
    const e = evaluate(truths, world.orgs, [
      lead("l1", "ACME Corp", null, ["v0"]), // right by its AS's name
      lead("l2", "mueller-bau.de", "mueller-bau.de", ["v1", "v6"]), // right; v6 is declared (out of the headline)
      lead("l3", "Nordwind", "Nordwind-Logistik.de.", ["v3"]), // declared: out of the headline
      lead("l4", "A Coworker", "a-coworker.se", ["v4", "v5"]), // v5 is B Coworker's: wrong
      lead("l5", "velora-firmen.de", "velora-firmen.de", ["v8"]), // the operator's name: wrong
      lead("l6", "Kessler", "kessler-tools.de", ["v10"]),
    ], undeclared);
    expect(e.problems).toEqual([]);
    expect(e.figures).toEqual({
      matchRate: { numerator: 4, denominator: 8 },
      precision: { numerator: 4, denominator: 6 },
      leak: { numerator: 0, denominator: 0 },
      knowableMatch: { numerator: 3, denominator: 6 },
    });
    expect(e.rows["static, no PTR"]).toMatchObject({ visits: 3, attributed: 2, right: 1, knowable: 3, knowableRight: 1, beforeEvidence: 2, beforeEvidenceRight: 0 });
    expect(e.rows["host tenant"]).toMatchObject({ visits: 2, attributed: 2, right: 1, knowable: 0 });
    expect(e.wrong).toEqual([
      ["host tenant -> A Coworker (a-coworker.se)", 1],
      ["static, no PTR -> velora-firmen.de (velora-firmen.de)", 1],
    ]);
    expect(verdicts(e.figures).map((v) => v.met)).toEqual([false, false, false]);
    expect(e.wrongAtLookalikeHosts).toBe(0);
    const lookalike = evaluate(truths.map((t) => ({ ...t, lookalikeHost: t.row === "host tenant" })), world.orgs, [lead("l4", "A Coworker", "a-coworker.se", ["v4", "v5"])]);
    expect([lookalike.wrong, lookalike.wrongAtLookalikeHosts]).toEqual([[["host tenant -> A Coworker (a-coworker.se)", 1]], 1]);
    // how the service recognised a wrong lead is printed with it (which rule named the host's line)
    const bySource = evaluate(truths, world.orgs, [{ ...lead("l4", "A Coworker", "a-coworker.se", ["v4", "v5"]), identitySource: "form_email" }]);
    expect(bySource.wrong).toEqual([["host tenant -> A Coworker (a-coworker.se, form_email)", 1]]);
    // the runs' summary gives precision without the look-alike hosts' wrong visits apart, the worst run named
    const runOf = (seed: number, headline: typeof e) => ({ seed, mix: "v4", headline }) as RunResult;
    expect(lookalike.figures.precision).toEqual({ numerator: 1, denominator: 2 });
    expect(withoutLookalikeHosts([runOf(1, lookalike)])).toBe("precision without those visits (not a target): minimum 1 / 1 = 100.0% (seed 1 v4)");
    expect(withoutLookalikeHosts([runOf(1, lookalike), runOf(2, e)])).toBe("precision without those visits (not a target): minimum 4 / 6 = 66.7% (seed 2 v4)");
    const inDeclared = evaluate(truths, world.orgs, [lead("l2", "mueller-bau.de", "mueller-bau.de", ["v1", "v6"])], declared);
    expect(inDeclared.figures).toMatchObject({ precision: { numerator: 0, denominator: 1 }, leak: { numerator: 1, denominator: 2 } });
  });

  it("when every business visit is attributed right and nothing else, then the targets are met", () => {
    const e = evaluate(truths, world.orgs, [
      lead("l1", "ACME Corp", "acme.com", ["v0"]),
      lead("l2", "Mueller Bau", "mueller-bau.de", ["v1"]),
      lead("l3", "Nordwind", "nordwind-logistik.de", ["v2", "v3"]),
      lead("l4", "Kessler", "kessler-tools.de", ["v8", "v9", "v10"]),
      lead("l5", "Vantara", "vantara-labs.com", ["v11"]),
    ]);
    expect(e.figures.precision).toEqual({ numerator: 8, denominator: 8 });
    expect(e.figures.leak).toEqual({ numerator: 0, denominator: 2 });
    expect(verdicts(e.figures).map((v) => v.met)).toEqual([true, true, true]);
  });

  it("when a visit is read twice or a URL was never sent, then each is a problem and nothing is counted twice, inside the scope or not", () => {
    const e = evaluate(truths, world.orgs, [
      lead("l1", "ACME Corp", null, ["v0", "zzz", "v3"]),
      { ...lead("l2", "Mueller Bau", "mueller-bau.de", ["v1", "v0"]), visitUrls: [url("v1"), url("v0"), url("v3"), "https://www.matchbench.example/no-id"] },
    ], undeclared);
    expect(e.problems).toEqual([
      "visit v0 read twice: in lead l1 and in lead l2",
      "visit v3 read twice: in lead l1 and in lead l2",
      "2 visits read back were never sent, e.g. https://www.matchbench.example/pricing?bv=zzz, https://www.matchbench.example/no-id",
    ]);
    expect(e.business.attributed).toBe(2);
  });

  it("when nothing was attributed, then precision has no value and its target is not met", () => {
    const e = evaluate(truths, world.orgs, []);
    expect(e.figures.precision).toEqual({ numerator: 0, denominator: 0 });
    expect(verdicts(e.figures)).toMatchObject([{ name: "precision", met: false }, { name: "consumer leak", met: true }, { name: "knowable match", met: false }]);
  });
});

describe("namesOrganisation", () => {
  it("when a lead names an own-AS organisation by its AS name or a domain, then it is that organisation; a small company only by its domain", () => {
    const own = org(0, "ACME Corp", "acme.com", "own_as", ["ACME Corp"]);
    expect(namesOrganisation({ organizationName: " acme corp", organizationDomain: null }, own)).toBe(true);
    expect(namesOrganisation({ organizationName: "Other", organizationDomain: "ACME.com" }, own)).toBe(true);
    const small = org(1, "Mueller Bau GmbH", "mueller-bau.de", "static");
    expect(namesOrganisation({ organizationName: "Mueller Bau GmbH", organizationDomain: null }, small)).toBe(false);
    expect(namesOrganisation({ organizationName: "Mueller Bau GmbH", organizationDomain: "mueller.de" }, small)).toBe(false);
  });
});

/** Made-up networks on documentation and unrouted-looking ranges: the world needs ranges and names, not the real data. */
const network = (asn: number, role: Network["role"], name: string, domain: string, first: string, addresses: number, v6?: string): Network => ({
  asn, role, name, domain, ranges: [[numberOf(first), numberOf(first) + addresses - 1]], addresses,
  ranges6: v6 ? [[v6Value(v6), v6Value(v6) + (1n << 96n) - 1n]] : [],
});
const worldNetworks = {
  ownAs: [0, 1, 2, 3, 4].map((i) => ({ network: network(64500 + i, "business", `Corp ${i}`, `corp${i}.com`, `10.${i}.0.0`, 65_536, `2001:db8:${i}::`), serviceName: `CORP ${i}`, serviceDomain: null })),
  isps: [
    network(64600, "isp", "Big ISP", "bigisp.de", "20.0.0.0", 1 << 20, "2001:db8:100::"),
    network(64601, "isp", "Other ISP", "otherisp.es", "30.0.0.0", 1 << 20, "2001:db8:200::"),
    network(64602, "isp", "Third Telecom", "third-telecom.fr", "60.0.0.0", 1 << 20, "2001:db8:300::"),
  ],
  mobiles: [network(64700, "mobile", "Carrier", "carrier.com", "40.0.0.0", 1 << 16, "2001:db8:400::")],
  clouds: [network(64800, "hosting", "Amazon Data Services", "amazon.com", "50.0.0.0", 1 << 16)],
};
const options = { seed: 7, orgs: 40, visits: 3000, days: 20, mix: "v4" as const };
/** Several worlds of each mix: a class drawn at random shows in at least one of them. */
const worlds = (mix: "v4" | "v6half", seeds = [1, 2, 3, 4, 5, 6]) => seeds.map((seed) => buildWorld({ ...options, seed, mix }, worldNetworks));
const inRange = (cidr: string, address: string) => {
  const [base, bits] = cidr.split("/");
  return Math.floor(numberOf(address) / 2 ** (32 - Number(bits))) === Math.floor(numberOf(base!) / 2 ** (32 - Number(bits)));
};

describe("buildWorld", () => {
  it("when built twice from one seed and mix, then the worlds are the same; another seed or mix builds another", () => {
    const json = (w: World) => JSON.stringify({ orgs: w.orgs, people: w.people, sessions: w.sessions, declarations: w.declarations, ptr: [...w.ptr] });
    expect(json(buildWorld(options, worldNetworks))).toBe(json(buildWorld(options, worldNetworks)));
    expect(json(buildWorld({ ...options, seed: 8 }, worldNetworks))).not.toBe(json(buildWorld(options, worldNetworks)));
    expect(json(buildWorld({ ...options, mix: "v6half" }, worldNetworks))).not.toBe(json(buildWorld(options, worldNetworks)));
  });

  it("when a world has other partners, then the measured partner's traffic is the one it has alone, and each other's is drawn on its own from the same people", () => {
    const alone = buildWorld(options, worldNetworks);
    const shared = buildWorld({ ...options, partners: 3 }, worldNetworks);
    expect(alone.others).toEqual([]);
    expect(JSON.stringify(shared.sessions)).toBe(JSON.stringify(alone.sessions));
    expect(shared.others.map((o) => o.site)).toEqual(["www.partner2.example", "www.partner3.example"]);
    const [second, third] = shared.others;
    expect(JSON.stringify(second!.sessions)).not.toBe(JSON.stringify(third!.sessions));
    const people = new Set(shared.people.map((p) => p.id));
    expect(second!.visits.length).toBe(options.visits);
    expect(second!.visits.every((v) => people.has(v.personId))).toBe(true);
    expect(second!.sessions.flatMap((s) => s.batches.flat()).every((e) => e.url.startsWith("https://www.partner2.example/"))).toBe(true);
  });

  it("when built, then its page views are the asked number with unique ids, each sent in a session at its visitor's address, forms at rates of a few percent", () => {
    const world = buildWorld(options, worldNetworks);
    const sentIds = world.sessions.flatMap((s) => s.batches.flat().flatMap((e) => (e.type === "pageview" ? [new URL(e.url).searchParams.get("bv")!] : [])));
    expect(sentIds).toHaveLength(options.visits);
    expect(new Set(sentIds).size).toBe(options.visits);
    expect(world.visits.map((v) => v.visitId)).toEqual(sentIds);
    expect(world.sessions.every((s, i) => i === 0 || world.sessions[i - 1]!.day <= s.day)).toBe(true);
    expect(world.sessions.every((s) => s.batches.every((b) => b.length >= 1 && b.length <= 3))).toBe(true);
    expect(world.forms.length / world.sessions.length).toBeGreaterThan(0.01);
    expect(world.forms.length / world.sessions.length).toBeLessThan(0.08);
  });

  it("when built, then every business visitor sits at a site of their organisation (a host for tenants) and nobody else at a company's site", () => {
    for (const world of worlds("v6half", [1, 2])) {
      for (const visit of world.visits) {
        const person = world.people[visit.personId]!;
        const siteId = world.unitSite.get(visit.unit);
        const site = siteId === undefined ? undefined : world.sites[siteId];
        if (person.kind === "own_as" || person.kind === "static") expect(site?.orgId).toBe(person.orgId);
        else if (person.kind === "tenant" || person.kind === "guest") expect(site?.kind).toBe("host");
        else expect(site).toBeUndefined();
      }
    }
  });

  it("when built, then access operators name business lines by customer or line numbers under zones that are not the AS's site, and name households with the address encoded", () => {
    const all = worlds("v4", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    for (const world of all) expect([...world.operators.values()].map((n) => n.business).slice(0, 2).sort()).toEqual(["customer", "like-access"]);
    const namings = all.flatMap((w) => [...w.operators.values()]);
    expect(namings.some((n) => !worldNetworks.isps.some((isp) => n.zone === isp.domain))).toBe(true); // a brand zone
    expect(new Set(namings.map((n) => n.business))).toEqual(new Set(BUSINESS_STYLES));
    expect(new Set(namings.map((n) => n.access))).toEqual(new Set(ACCESS_STYLES));
    const staticNamings = new Set(all.flatMap((w) => w.sites.filter((s) => s.kind === "static").map((s) => s.naming)));
    expect(staticNamings).toEqual(new Set(["own", "operator", "access-like", "none"]));
  });

  it("when built, then hosts of each kind name every guest with one gateway name, most without a word saying what they are, and the first host's tenants send one form in all", () => {
    const all = worlds("v4");
    const hosts = all.flatMap((w) => w.sites.filter((s) => s.kind === "host").map((s) => ({ s, name: w.ptr.get(s.v4[0]!) })));
    expect(new Set(hosts.map((h) => h.s.host))).toEqual(new Set(["coworking", "serviced", "hotel"]));
    const named = hosts.filter((h) => h.s.naming === "host").map((h) => h.name!);
    expect(named.filter((n) => !/cowork|hub|suite|office|hotel/.test(n)).length).toBeGreaterThan(named.length / 2);
    for (const h of hosts.filter((x) => x.s.naming === "host")) expect(h.name!.endsWith(`.${h.s.domain}`)).toBe(true); // the brand the truth reads
    for (const world of all) {
      const first = world.sites.find((s) => s.kind === "host")!;
      const tenants = world.people.filter((p) => p.where.type === "site" && p.where.siteId === first.id);
      expect(new Set(tenants.map((p) => p.orgId)).size).toBeGreaterThanOrEqual(3);
      const forms = world.forms.filter((f) => tenants.some((p) => p.id === f.personId));
      expect(forms.length).toBeLessThanOrEqual(1);
    }
    expect(all.some((w) => w.forms.some((f) => w.people[f.personId]!.formOnce))).toBe(true);
    const tenantDomains = all.flatMap((w) =>
      w.sites.filter((s) => s.kind === "host" && s.host !== "hotel").slice(1).map((host) => new Set(w.forms.filter((f) => w.unitSite.get(f.unit) === host.id && !isFreeMail(f.domain)).map((f) => f.domain)).size),
    );
    expect(Math.max(...tenantDomains)).toBeGreaterThanOrEqual(2); // a host whose forms name several organisations
  });

  it("when built, then home workers send business e-mail from household lines and the next subscriber later comes from a home worker's old address", () => {
    const world = buildWorld(options, worldNetworks);
    const homeForms = world.forms.filter((f) => world.people[f.personId]!.kind === "home_worker" && !isFreeMail(f.domain));
    expect(homeForms.length).toBeGreaterThan(0);
    expect(homeForms.every((f) => !world.unitSite.has(f.unit))).toBe(true);
    const worker = new Map(world.visits.filter((v) => world.people[v.personId]!.kind === "home_worker").map((v) => [v.address, v.day] as const));
    const successor = world.visits.filter((v) => world.people[v.personId]!.kind === "next_subscriber" && worker.has(v.address) && worker.get(v.address)! < v.day);
    expect(successor.length).toBeGreaterThan(0);
  });

  it("when the mix is v6half, then about half the page views are IPv6, PTR names sit only on gateways (::1), and a company runs several /64s in its /48", () => {
    for (const world of worlds("v6half", [1, 2, 3])) {
      const share = world.visits.filter((v) => v.family === 6).length / world.visits.length;
      expect(share).toBeGreaterThan(0.3);
      expect(share).toBeLessThan(0.7);
      const v6Names = [...world.ptr.keys()].filter((ip) => ip.includes(":"));
      expect(v6Names.length).toBeGreaterThan(0);
      expect(v6Names.every((ip) => ip.endsWith("::1"))).toBe(true);
      expect(world.visits.filter((v) => v.family === 6).every((v) => !world.ptr.has(v.address))).toBe(true);
      const lans = new Map<string, Set<string>>();
      for (const v of world.visits.filter((x) => x.family === 6 && world.unitSite.has(x.unit))) lans.set(v.unit, (lans.get(v.unit) ?? new Set()).add(v.address.split(":").slice(0, 4).join(":")));
      expect([...lans.values()].some((s) => s.size >= 2)).toBe(true);
      const households = world.visits.filter((v) => v.family === 6 && v.unit.endsWith("/56"));
      expect(households.length).toBeGreaterThan(0);
      expect(new Set(households.map((v) => v.address)).size).toBeGreaterThan(2 * new Set(households.map((v) => v.unit)).size); // privacy addresses
    }
  });

  it("when built, then the partner declares some companies' lines (each covering its company's addresses) and one household pool", () => {
    const world = buildWorld(options, worldNetworks);
    const pools = world.declarations.filter((d) => d.consumerPool);
    expect(pools).toHaveLength(1);
    expect(world.visits.some((v) => inRange(pools[0]!.cidr, v.address) && world.people[v.personId]!.kind === "household")).toBe(true);
    const companies = world.declarations.filter((d) => !d.consumerPool);
    expect(companies.length).toBeGreaterThan(0);
    for (const d of companies) {
      const addresses = world.sites.filter((s) => s.orgId === d.orgId).flatMap((s) => s.v4);
      expect(addresses.length).toBeGreaterThan(0);
      for (const address of addresses) expect(inRange(d.cidr, address)).toBe(true);
    }
  });
});

describe("world PTR names", () => {
  const ip = "93.184.216.34";
  const naming = (business: BusinessStyle, access: AccessStyle = "hex"): OperatorNaming => ({ zone: "velora.de", businessZone: "velora-firmen.de", access, business, pops: ["ham", "muc"] });

  it("when an operator names business lines by customer or line number, then the name spells no part of the address", () => {
    for (const style of ["customer", "line"] as const) {
      const name = businessLinePtr(ip, naming(style), 512345, 1)!;
      expect(name).toMatch(/^(kd|ln)512345-2\./);
      expect(name).not.toMatch(/93|184|216|5db8d822/);
    }
    expect(businessLinePtr(ip, naming("like-access", "pieces"), 512345, 0)).toBe(accessLinePtr(ip, naming("none", "pieces")));
  });

  it("when an operator names household lines, then each style encodes the address its own way (two addresses, two names) or gives none", () => {
    for (const style of ACCESS_STYLES) {
      const [a, b] = [accessLinePtr(ip, naming("none", style)), accessLinePtr("93.184.216.35", naming("none", style))];
      if (style === "none") expect([a, b]).toEqual([undefined, undefined]);
      else expect(a).not.toBe(b);
    }
    expect(accessLinePtr(ip, naming("none", "hex"))).toContain("5db8d822");
    expect(accessLinePtr(ip, naming("none", "pieces"))).toBe("l34-216.ham-bng1.k93-184.home.velora.de");
  });

  it("when a company names its own line, then the name's registrable domain is the company's", () => {
    const random = createRandom(1);
    const names = new Set(Array.from({ length: 300 }, (_, i) => ownPtr("mueller-bau.de", i % 3, random)));
    expect([...names].filter((host) => getDomain(host) !== "mueller-bau.de")).toEqual([]);
  });

  it("when the world's DNS names an IPv6 gateway, then its reverse name is the 32 nibbles under ip6.arpa", () => {
    expect(reverseName("2001:db8:1::1")).toBe(`1.${"0.".repeat(19)}1.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa`);
    expect(v6Text(v6Value("2001:0db8:0001:0000:0000:0000:0000:0001"))).toBe("2001:db8:1::1");
    expect(reverseName("192.0.2.1")).toBe("1.2.0.192.in-addr.arpa");
  });
});

describe("world names", () => {
  it("when a visitor's browser or free-mail provider is drawn, then the service sees a browser and a free-mail domain", () => {
    expect([...USER_AGENTS.desktop, ...USER_AGENTS.mobile].filter((ua) => isbot(ua))).toEqual([]);
    expect(FREE_MAIL.length).toBeGreaterThanOrEqual(4);
    expect(FREE_MAIL.every(isFreeMail)).toBe(true);
  });
});

/**
 * A loopback stand-in for the service, answering the few operations bench/match/api.ts calls as the spec words them (not the service): it
 * attributes each page view from an address in `knownLines` to that organisation's lead (one per
 * domain), drops the rest, takes declared networks or answers 404, and pages its lists by at most
 * 7 items whatever the asked limit, so that the bench's paging is exercised. It keeps each
 * request's X-Request-Start.
 */
async function fakeService(knownLines: Map<string, { name: string; domain: string }>, opts: { declarations: boolean; collectStatus?: number }) {
  const leads = new Map<string, { leadId: string; organizationName: string; organizationDomain: string; visits: { url: string }[] }>();
  let declared = 0;
  /** Events received per dataset. */
  const events = new Map<string, number>();
  const requestStarts: string[] = [];
  const body = async (req: IncomingMessage) => {
    let text = "";
    for await (const chunk of req) text += chunk;
    return JSON.parse(text || "{}");
  };
  const page = <T>(items: T[], cursor: string | null) => {
    const from = Number(cursor ?? 0);
    return { data: items.slice(from, from + 7), nextCursor: from + 7 < items.length ? String(from + 7) : null };
  };
  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url!, "http://fake");
    const json = (status: number, value?: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(value === undefined ? undefined : JSON.stringify(value));
    if (req.method === "POST" && url.pathname === "/collect") {
      const { events: batch } = (await body(req)) as { events: { type: string; url: string }[] };
      const dataset = url.searchParams.get("dataset")!;
      requestStarts.push(String(req.headers["x-request-start"]));
      events.set(dataset, (events.get(dataset) ?? 0) + batch.length);
      const org = knownLines.get(String(req.headers["x-forwarded-for"]));
      const views = org ? batch.filter((e) => e.type === "pageview") : [];
      if (org) {
        const lead = leads.get(org.domain) ?? { leadId: `lead_${leads.size}`, organizationName: org.name, organizationDomain: org.domain, visits: [] };
        lead.visits.push(...views.map((v) => ({ url: v.url })));
        leads.set(org.domain, lead);
      }
      return json(opts.collectStatus ?? 202, { received: batch.length, queued: views.length });
    }
    if (req.method === "POST" && url.pathname === "/v1/declared-networks") {
      await body(req);
      return opts.declarations ? json(201, { id: `dnet_${++declared}` }) : json(404, { error: "not_found", message: "Not found" });
    }
    if (url.pathname === "/metrics") return res.writeHead(200).end("ingest_writer_lag_seconds 0\n");
    if (url.pathname === "/v1/leads") {
      const all = [...leads.values()].map(({ visits, ...l }) => ({ ...l, visitCount: visits.length }));
      return json(200, page(all, url.searchParams.get("cursor")));
    }
    const visitsOf = /^\/v1\/leads\/([^/]+)\/visits$/.exec(url.pathname);
    const lead = visitsOf && [...leads.values()].find((l) => l.leadId === visitsOf[1]);
    if (lead) return json(200, page(lead.visits, url.searchParams.get("cursor")));
    json(404, { error: "not_found", message: "Not found" });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, declared: () => declared, events, requestStarts };
}

describe("drive, waitForDrain and readBack", () => {
  let server: Server | undefined;
  afterEach(async () => {
    if (server) await new Promise((resolve) => server!.close(resolve));
    server = undefined;
  });
  const world = buildWorld({ seed: 5, orgs: 40, visits: 600, days: 10, mix: "v4" }, worldNetworks);
  /** Every static line of the world, as a perfect identifier of static lines would know them. */
  const staticLines = new Map(world.sites.filter((s) => s.kind === "static").flatMap((s) => s.v4.map((address) => [address, world.orgs[s.orgId!]!] as const)));

  it("when the service takes declarations and attributes every static line, then the bench reads every visit back through the pages and counts them right", async () => {
    const fake = await fakeService(staticLines, { declarations: true });
    server = fake.server;
    const client = serviceClient(fake.base, "key", "admin@bench.example");
    const sent = await drive(client, world, ["ds_fake"], 3);
    expect(sent).toMatchObject({ declarationsSupported: true, declared: world.declarations.length, events: world.sessions.reduce((n, s) => n + s.batches.flat().length, 0) });
    expect(await waitForDrain(client, "ds_fake", 30, 1)).toBe(true);
    const e = evaluate(groundTruth(world, { declarations: true }), world.orgs, await readBack(client, "ds_fake"));
    expect(e.problems).toEqual([]);
    const staticRows = (["static, own PTR", "static, operator's name", "static, named like a household", "static, no PTR"] as const).map((r) => e.rows[r]);
    expect(staticRows.every((t) => t.right === t.visits)).toBe(true);
    expect(e.figures.precision.numerator).toBe(e.figures.precision.denominator);
    expect(e.figures.precision.denominator).toBe(staticRows.reduce((n, t) => n + t.visits, 0));
    expect(e.figures.leak.numerator).toBe(0);
    expect(sent.queued).toBe(e.figures.precision.denominator); // the answers' counts add up across concurrent visitors
  });

  it("when the world has another partner, then its sessions go to its own dataset and the measured partner's counts are its own alone", async () => {
    const fake = await fakeService(new Map(), { declarations: true });
    server = fake.server;
    const shared = buildWorld({ seed: 5, orgs: 40, visits: 600, days: 10, mix: "v4", partners: 2 }, worldNetworks);
    const sent = await drive(serviceClient(fake.base, "key", "admin@bench.example"), shared, ["ds_measured", "ds_other"], 3);
    const eventsOf = (sessions: typeof shared.sessions) => sessions.reduce((n, s) => n + s.batches.flat().length, 0);
    expect(sent.events).toBe(eventsOf(shared.sessions));
    expect(Object.fromEntries(fake.events)).toEqual({ ds_measured: eventsOf(shared.sessions), ds_other: eventsOf(shared.others[0]!.sessions) });
  });

  it("when the world is driven, then each batch carries its world time in X-Request-Start: on the world's days, which end before the run", async () => {
    const fake = await fakeService(new Map(), { declarations: false });
    server = fake.server;
    const start = worldStart(world.options.days, new Date());
    const sent = await drive(serviceClient(fake.base, "key", "admin@bench.example"), world, ["ds_fake"], 3);
    const times = fake.requestStarts.map((value) => {
      expect(value).toMatch(/^t=\d+\.\d{3}$/);
      return Number(value.slice(2)) * 1000;
    });
    expect(times).toHaveLength(sent.requests);
    expect(Math.max(...times)).toBeLessThanOrEqual(Date.now());
    const days = new Set(times.map((at) => Math.floor((at - start.getTime()) / 86_400_000)));
    expect([...days].sort((a, b) => a - b)).toEqual([...new Set(world.sessions.map((s) => s.day))].sort((a, b) => a - b));
    expect(days.size).toBe(world.options.days);
  });

  it("when the service has no declared networks (404), then the bench goes on without them after asking once", async () => {
    const fake = await fakeService(new Map(), { declarations: false });
    server = fake.server;
    const sent = await drive(serviceClient(fake.base, "key", "admin@bench.example"), world, ["ds_fake"], 3);
    expect(sent).toMatchObject({ declarationsSupported: false, declared: 0, queued: 0 });
  });

  it("when the collector answers another status than 202, then the run stops with a wrong answer", async () => {
    const fake = await fakeService(new Map(), { declarations: false, collectStatus: 200 });
    server = fake.server;
    await expect(drive(serviceClient(fake.base, "key", "admin@bench.example"), world, ["ds_fake"], 3)).rejects.toThrow(WrongAnswer);
  });
});

