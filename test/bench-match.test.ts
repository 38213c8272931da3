// bench:match's arithmetic and world, without a service: the ground truth of a small hand-made
// world (what is business, knowable, known only later), the figures computed from leads read back,
// the wrong counts that fail a run, and the invariants of a generated world.
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { isbot } from "isbot";
import { afterEach, describe, expect, it } from "vitest";
import { serviceClient, WrongAnswer } from "../bench/match/api.ts";
import { drive, readBack, waitForDrain } from "../bench/match/driver.ts";
import { evaluate, type LeadReadBack, namesOrganisation, verdicts } from "../bench/match/evaluate.ts";
import { FREE_MAIL, isFreeMail, ownPtr, USER_AGENTS } from "../bench/match/names.ts";
import { numberOf, type Network } from "../bench/match/networks.ts";
import { createRandom } from "../bench/match/random.ts";
import { domainOfPtr } from "../server/identity/domain-names.ts";
import { groundTruth } from "../bench/match/truth.ts";
import { buildWorld, type Kind, type Organisation, type Person, type World } from "../bench/match/world.ts";

const org = (id: number, name: string, domain: string, kind: Organisation["kind"], names: string[] = []): Organisation => ({ id, name, domain, kind, names, domains: [domain] });
const person = (id: number, kind: Kind, orgId: number | null, address: string): Person => ({
  id, kind, orgId, visitorId: `visitor${id}xx`, email: "", name: "", userAgent: "", formRate: 0, where: { type: "fixed", address },
});

/**
 * Visits v0..v7 over 10 days (v0-v2 on day 1, v3-v7 on day 6): an own-AS organisation's (v0), a
 * static line named under its company's domain (v1), a static line with the ISP's generic name
 * whose company's form comes between v2 and v3, a coworking space where two companies sent forms
 * (v4, v5), a home-office worker who sent their employer's domain (v6) and a household (v7).
 */
function tinyWorld(): World {
  const orgs = [
    org(0, "ACME Corp", "acme.com", "own_as", ["ACME Corp"]),
    org(1, "Mueller Bau GmbH", "mueller-bau.de", "static"),
    org(2, "Nordwind Logistik GmbH", "nordwind-logistik.de", "static"),
    org(3, "A Coworker AB", "a-coworker.se", "coworking_member"),
    org(4, "B Coworker AB", "b-coworker.se", "coworking_member"),
  ];
  const people = [
    person(0, "own_as", 0, "17.0.0.10"),
    person(1, "static", 1, "203.0.113.9"),
    person(2, "static", 2, "203.0.113.17"),
    person(3, "coworking", 3, "198.51.100.5"),
    person(4, "coworking", 4, "198.51.100.5"),
    person(5, "home_office", 1, "192.0.2.44"),
    person(6, "consumer", null, "192.0.2.45"),
  ];
  const visit = (n: number, personId: number, day: number) => ({ visitId: `v${n}`, personId, address: people[personId]!.where.type === "fixed" ? (people[personId]!.where as { address: string }).address : "", day });
  return {
    options: { seed: 1, orgs: 5, visits: 8, days: 10 },
    site: "www.matchbench.example",
    orgs,
    people,
    sessions: [],
    visits: [visit(0, 0, 1), visit(1, 1, 1), visit(2, 2, 1), visit(3, 2, 6), visit(4, 3, 6), visit(5, 4, 6), visit(6, 5, 6), visit(7, 6, 6)],
    forms: [
      { personId: 2, address: "203.0.113.17", domain: "nordwind-logistik.de", day: 3, afterVisits: 3 },
      { personId: 3, address: "198.51.100.5", domain: "a-coworker.se", day: 6, afterVisits: 5 },
      { personId: 4, address: "198.51.100.5", domain: "b-coworker.se", day: 6, afterVisits: 6 },
      { personId: 5, address: "192.0.2.44", domain: "mueller-bau.de", day: 6, afterVisits: 7 },
      { personId: 6, address: "192.0.2.45", domain: FREE_MAIL[0]!, day: 6, afterVisits: 8 },
    ],
    ptr: new Map([
      ["203.0.113.9", "gw.mueller-bau.de"],
      ["203.0.113.17", "static-203-0-113-17.business.isp.example"],
    ]),
    fixedLines: new Map([
      ["17.0.0.10", { address: "17.0.0.10", kind: "own_as", orgId: 0, ptr: "none" }],
      ["203.0.113.9", { address: "203.0.113.9", kind: "static", orgId: 1, ptr: "own" }],
      ["203.0.113.17", { address: "203.0.113.17", kind: "static", orgId: 2, ptr: "generic" }],
      ["198.51.100.5", { address: "198.51.100.5", kind: "coworking", orgId: null, ptr: "none" }],
    ]),
    declarations: [{ cidr: "203.0.113.16/29", orgId: 2, organizationName: "Nordwind Logistik GmbH", organizationDomain: "nordwind-logistik.de", when: "midway" }],
  };
}

const url = (id: string) => `https://www.matchbench.example/pricing?bv=${id}`;
const lead = (leadId: string, organizationName: string, organizationDomain: string | null, ids: string[]): LeadReadBack => ({
  leadId, organizationName, organizationDomain, visitUrls: ids.map(url),
});

describe("groundTruth", () => {
  it("when the world is read, then each visit gets its row, organisation and knowability", () => {
    const truths = groundTruth(tinyWorld(), { declarations: false });
    expect(truths.map((t) => [t.visitId, t.row, t.business, t.orgId, t.knowable, t.beforeEvidence])).toEqual([
      ["v0", "own AS", true, 0, true, false],
      ["v1", "static+own PTR", true, 1, true, false],
      ["v2", "static+form", true, 2, true, true], // the form came after it: knowable only by backfill
      ["v3", "static+form", true, 2, true, false],
      ["v4", "coworking", true, 3, false, false], // two companies' domains at the address: shared
      ["v5", "coworking", true, 4, false, false],
      ["v6", "home office", false, null, false, false], // a business domain from a household line is no evidence
      ["v7", "consumer dynamic", false, null, false, false],
    ]);
  });

  it("when the service took the declarations, then visits from a declared network are in the declared row, knowable from halfway", () => {
    const truths = groundTruth(tinyWorld(), { declarations: true });
    expect(truths.filter((t) => t.row === "declared").map((t) => [t.visitId, t.knowable, t.beforeEvidence])).toEqual([
      ["v2", true, true],
      ["v3", true, false],
    ]);
  });

  it("when only one company of a coworking space sent a form, then its visits there are knowable and the others' are not", () => {
    const world = tinyWorld();
    world.forms = world.forms.filter((f) => f.domain !== "b-coworker.se");
    const truths = groundTruth(world, { declarations: false });
    expect(truths.filter((t) => t.row === "coworking").map((t) => [t.visitId, t.knowable])).toEqual([
      ["v4", true],
      ["v5", false],
    ]);
  });
});

describe("evaluate", () => {
  const world = tinyWorld();
  const truths = groundTruth(world, { declarations: false });

  it("when leads take right, wrong and no visits, then the figures count each with its numerator and denominator", () => {
    const e = evaluate(truths, world.orgs, [
      lead("l1", "ACME Corp", null, ["v0"]), // right by its AS's name
      lead("l2", "mueller-bau.de", "mueller-bau.de", ["v1", "v6"]), // right, and a home-office visit: a leak
      lead("l3", "Nordwind", "Nordwind-Logistik.de.", ["v3"]), // right by domain (case and trailing dot aside); v2 never attributed
      lead("l4", "A Coworker", "a-coworker.se", ["v4", "v5"]), // v5 is B Coworker's: wrong
    ]);
    expect(e.problems).toEqual([]);
    expect(e.figures).toEqual({
      matchRate: { numerator: 4, denominator: 6 },
      precision: { numerator: 4, denominator: 6 },
      leak: { numerator: 1, denominator: 2 },
      knowableMatch: { numerator: 3, denominator: 4 },
    });
    expect(e.rows["static+form"]).toMatchObject({ visits: 2, attributed: 1, right: 1, knowable: 2, knowableRight: 1, beforeEvidence: 1, beforeEvidenceRight: 0 });
    expect(e.rows.coworking).toMatchObject({ visits: 2, attributed: 2, right: 1, knowable: 0 });
    expect(e.other).toMatchObject({ visits: 2, attributed: 1, right: 0 });
    expect(e.wrong).toEqual([
      ["coworking -> A Coworker (a-coworker.se)", 1],
      ["home office -> mueller-bau.de (mueller-bau.de)", 1],
    ]);
    expect(verdicts(e.figures).map((v) => v.met)).toEqual([false, false, false]);
  });

  it("when every business visit is attributed right and nothing else, then the targets are met", () => {
    const e = evaluate(truths, world.orgs, [
      lead("l1", "ACME Corp", "acme.com", ["v0"]),
      lead("l2", "Mueller Bau", "mueller-bau.de", ["v1"]),
      lead("l3", "Nordwind", "nordwind-logistik.de", ["v2", "v3"]),
    ]);
    expect(e.figures.precision).toEqual({ numerator: 4, denominator: 4 });
    expect(e.figures.leak).toEqual({ numerator: 0, denominator: 2 });
    expect(verdicts(e.figures).map((v) => v.met)).toEqual([true, true, true]);
  });

  it("when a visit is read twice or a URL was never sent, then each is a problem and nothing is counted twice", () => {
    const e = evaluate(truths, world.orgs, [
      lead("l1", "ACME Corp", null, ["v0", "zzz"]),
      { ...lead("l2", "Mueller Bau", "mueller-bau.de", ["v1", "v0"]), visitUrls: [url("v1"), url("v0"), "https://www.matchbench.example/no-id"] },
    ]);
    expect(e.problems).toEqual([
      "visit v0 read twice: in lead l1 and in lead l2",
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

/** Made-up networks on unrouted-looking ranges: the world needs ranges and names, not the real data. */
const network = (asn: number, role: Network["role"], name: string, domain: string, first: string, addresses: number): Network => ({
  asn, role, name, domain, ranges: [[numberOf(first), numberOf(first) + addresses - 1]], addresses,
});
const worldNetworks = {
  ownAs: [0, 1, 2, 3, 4].map((i) => ({ network: network(64500 + i, "business", `Corp ${i}`, `corp${i}.com`, `10.${i}.0.0`, 65_536), serviceName: `CORP ${i}`, serviceDomain: null })),
  isps: [network(64600, "isp", "Big ISP", "bigisp.de", "20.0.0.0", 1 << 20), network(64601, "isp", "Other ISP", "otherisp.es", "30.0.0.0", 1 << 20)],
  mobiles: [network(64700, "mobile", "Carrier", "carrier.com", "40.0.0.0", 1 << 16)],
  clouds: [network(64800, "hosting", "Amazon Data Services", "amazon.com", "50.0.0.0", 1 << 16)],
};

describe("buildWorld", () => {
  const options = { seed: 7, orgs: 40, visits: 3000, days: 20 };

  it("when built twice from one seed, then the worlds are the same; another seed builds another", () => {
    const json = (w: World) => JSON.stringify({ orgs: w.orgs, people: w.people, sessions: w.sessions, declarations: w.declarations, ptr: [...w.ptr] });
    expect(json(buildWorld(options, worldNetworks))).toBe(json(buildWorld(options, worldNetworks)));
    expect(json(buildWorld({ ...options, seed: 8 }, worldNetworks))).not.toBe(json(buildWorld(options, worldNetworks)));
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

  it("when built, then only an organisation's own lines carry PTR names under its domain, households never sit on a fixed line, and declarations cover their company's lines", () => {
    const world = buildWorld(options, worldNetworks);
    const domains = new Map(world.orgs.map((o) => [o.domain, o.id] as const));
    for (const [address, host] of world.ptr) {
      const owner = [...domains].find(([domain]) => host.endsWith(`.${domain}`));
      if (owner) expect(world.fixedLines.get(address)?.orgId).toBe(owner[1]);
    }
    for (const visit of world.visits) {
      const kind = world.people[visit.personId]!.kind;
      expect(world.fixedLines.has(visit.address)).toBe(kind === "own_as" || kind === "static" || kind === "coworking");
    }
    const staticSlash24s = new Set([...world.fixedLines.values()].filter((l) => l.kind === "static").map((l) => l.address.split(".").slice(0, 3).join(".")));
    expect(staticSlash24s.size).toBeGreaterThan(worldNetworks.isps.length); // spread over each ISP's business /24s
    expect(world.declarations.length).toBeGreaterThan(0);
    for (const d of world.declarations) {
      const [base, bits] = d.cidr.split("/");
      const lines = [...world.fixedLines.values()].filter((l) => l.orgId === d.orgId);
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) {
        const offset = numberOf(line.address) - numberOf(base!);
        expect(offset >= 0 && offset < 2 ** (32 - Number(bits))).toBe(true);
      }
    }
  });
});

describe("world PTR names", () => {
  it("when the documented PTR rules read the world's names, then a company's own names give its domain and operators' generic and access-line names give none", () => {
    const world = buildWorld({ seed: 3, orgs: 40, visits: 500, days: 10 }, worldNetworks);
    const ownDomain = new Map(world.orgs.map((o) => [o.id, o.domain] as const));
    let own = 0;
    for (const [ip, host] of world.ptr) {
      const line = world.fixedLines.get(ip);
      if (line?.ptr === "own") {
        own += 1;
        expect(domainOfPtr(host, ip)).toBe(ownDomain.get(line.orgId!));
      } else if (line?.ptr !== "operator") {
        expect([host, domainOfPtr(host, ip)]).toEqual([host, null]);
      }
    }
    expect(own).toBeGreaterThan(5);
    // every label a company may use, not only those this world drew
    const random = createRandom(1);
    const names = new Set(Array.from({ length: 300 }, (_, i) => ownPtr("mueller-bau.de", i % 3, random)));
    expect([...names].filter((host) => domainOfPtr(host, "203.0.113.9") !== "mueller-bau.de")).toEqual([]);
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
 * A loopback stand-in for the service as MATCH-CONTRACT.md describes it (not the service): it
 * attributes each page view from an address in `knownLines` to that organisation's lead (one per
 * domain), drops the rest, takes declared networks or answers 404, and pages its lists by at most
 * 7 items whatever the asked limit, so that the bench's paging is exercised.
 */
async function fakeService(knownLines: Map<string, { name: string; domain: string }>, opts: { declarations: boolean; collectStatus?: number }) {
  const leads = new Map<string, { leadId: string; organizationName: string; organizationDomain: string; visits: { url: string }[] }>();
  let declared = 0;
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
      const { events } = (await body(req)) as { events: { type: string; url: string }[] };
      const org = knownLines.get(String(req.headers["x-forwarded-for"]));
      const views = org ? events.filter((e) => e.type === "pageview") : [];
      if (org) {
        const lead = leads.get(org.domain) ?? { leadId: `lead_${leads.size}`, organizationName: org.name, organizationDomain: org.domain, visits: [] };
        lead.visits.push(...views.map((v) => ({ url: v.url })));
        leads.set(org.domain, lead);
      }
      return json(opts.collectStatus ?? 202, { received: events.length, queued: views.length });
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
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, declared: () => declared };
}

describe("drive, waitForDrain and readBack", () => {
  let server: Server | undefined;
  afterEach(async () => {
    if (server) await new Promise((resolve) => server!.close(resolve));
    server = undefined;
  });
  const world = buildWorld({ seed: 5, orgs: 40, visits: 600, days: 10 }, worldNetworks);
  /** Every static line and coworking space of the world, as a perfect identifier of static lines would know them. */
  const staticLines = new Map(
    [...world.fixedLines.values()]
      .filter((l) => l.kind === "static")
      .map((l) => [l.address, world.orgs[l.orgId!]!] as const),
  );

  it("when the service takes declarations and attributes every static line, then the bench reads every visit back through the pages and counts them right", async () => {
    const fake = await fakeService(staticLines, { declarations: true });
    server = fake.server;
    const client = serviceClient(fake.base, "key", "admin@bench.example");
    const sent = await drive(client, world, "ds_fake", 3);
    expect(sent).toMatchObject({ declarationsSupported: true, declared: world.declarations.length, events: world.sessions.reduce((n, s) => n + s.batches.flat().length, 0) });
    expect(await waitForDrain(client, "ds_fake", 30, 1)).toBe(true);
    const e = evaluate(groundTruth(world, { declarations: true }), world.orgs, await readBack(client, "ds_fake"));
    expect(e.problems).toEqual([]);
    const staticRows = (["declared", "static+own PTR", "static+form", "static+generic PTR", "static, no evidence"] as const).map((r) => e.rows[r]);
    expect(staticRows.every((t) => t.right === t.visits)).toBe(true);
    expect(e.figures.precision.numerator).toBe(e.figures.precision.denominator);
    expect(e.figures.precision.denominator).toBe(staticRows.reduce((n, t) => n + t.visits, 0));
    expect(e.figures.leak.numerator).toBe(0);
    expect(sent.queued).toBe(e.figures.precision.denominator); // the answers' counts add up across concurrent visitors
  });

  it("when the service has no declared networks (404), then the bench goes on without them after asking once", async () => {
    const fake = await fakeService(new Map(), { declarations: false });
    server = fake.server;
    const sent = await drive(serviceClient(fake.base, "key", "admin@bench.example"), world, "ds_fake", 3);
    expect(sent).toMatchObject({ declarationsSupported: false, declared: 0, queued: 0 });
  });

  it("when the collector answers another status than 202, then the run stops with a wrong answer", async () => {
    const fake = await fakeService(new Map(), { declarations: false, collectStatus: 200 });
    server = fake.server;
    await expect(drive(serviceClient(fake.base, "key", "admin@bench.example"), world, "ds_fake", 3)).rejects.toThrow(WrongAnswer);
  });
});

