// The simulated B2B traffic world: organisations, their people and lines, households, phones and
// cloud machines, and the sessions they make on one website, with the ground truth of who each
// page view belongs to. Built from a seed and the networks the service typed as expected, so the
// same seed and service build the same world.
import { addressIn, blocksIn, ipOf, type Network } from "./networks.ts";
import {
  accessLinePtr, cloudPtr, companyNamer, companySuffix, emailAt, FREE_MAIL, mobilePtr, ownPtr, personName, type PtrStyle,
  staticGenericPtr, USER_AGENTS,
} from "./names.ts";
import { createRandom, type Random, subSeed } from "./random.ts";

/** Who a visitor is and where they sit. The first three are business visits; the rest must never be attributed. */
export type Kind = "own_as" | "static" | "coworking" | "home_office" | "consumer" | "cgnat" | "mobile" | "cloud";
export const BUSINESS_KINDS: ReadonlySet<Kind> = new Set(["own_as", "static", "coworking"]);

export interface Organisation {
  id: number;
  name: string;
  domain: string;
  kind: "own_as" | "static" | "coworking_member";
  /** Lead organisation names that name it (own AS: the AS's name as the service gives it). */
  names: string[];
  /** Lead organisation domains that name it. */
  domains: string[];
}

/** A fixed line of an organisation (its own AS, a static line) or of a coworking space. */
export interface FixedLine {
  address: string;
  kind: "own_as" | "static" | "coworking";
  /** The organisation on the line; null for a coworking space (several share it). */
  orgId: number | null;
  /** Whose name its PTR record carries: the organisation's own domain, the ISP's generic one, the coworking operator's, or none. */
  ptr: "own" | "generic" | "operator" | "none";
}

export interface Declaration {
  cidr: string;
  orgId: number;
  organizationName: string;
  organizationDomain: string;
  /** Declared before the traffic, or halfway through it (after the first half of the days). */
  when: "start" | "midway";
}

type Where =
  | { type: "fixed"; address: string }
  /** A household line whose address changes every `period` days within the ISP's pool. */
  | { type: "dynamic"; pool: number[]; period: number; phase: number }
  /** A new address of these /24 blocks at every session (mobile carriers, clouds). */
  | { type: "blocks"; blocks: number[] }
  /** One of a few shared public addresses at every session (CGNAT). */
  | { type: "shared"; addresses: string[] };

export interface Person {
  id: number;
  kind: Kind;
  /** Business kinds: the organisation. Others: the employer whose address they may type into a form, or null. */
  orgId: number | null;
  visitorId: string;
  email: string;
  name: string;
  userAgent: string;
  formRate: number;
  where: Where;
}

export type CollectedEvent =
  | { type: "pageview"; visitorId: string; url: string; title: string; referrer?: string }
  | { type: "form"; visitorId: string; url: string; fields: Record<string, string> };

export interface Session {
  day: number;
  minute: number;
  personId: number;
  address: string;
  userAgent: string;
  /** The session's events in order, split the way the script would send them. */
  batches: CollectedEvent[][];
}

export interface Visit {
  /** The `bv` query parameter of the page view's URL. */
  visitId: string;
  personId: number;
  address: string;
  day: number;
}

export interface Form {
  personId: number;
  address: string;
  /** The e-mail address's domain (free-mail or an organisation's). */
  domain: string;
  day: number;
  /** Page views sent before it (its place in time among the visits). */
  afterVisits: number;
}

export interface SelectedNetworks {
  /** Business ASes the service types business, with the name (and domain) GET /v1/ip-lookup gives. */
  ownAs: { network: Network; serviceName: string; serviceDomain: string | null }[];
  isps: Network[];
  mobiles: Network[];
  clouds: Network[];
}

export interface WorldOptions {
  seed: number;
  /** Organisations: about 20% on their own AS, 1 coworking space per 40 with 3-6 member companies, the rest on static lines. */
  orgs: number;
  /** Page views in all. */
  visits: number;
  days: number;
}

export interface World {
  options: WorldOptions;
  site: string;
  orgs: Organisation[];
  people: Person[];
  /** In time order. */
  sessions: Session[];
  visits: Visit[];
  forms: Form[];
  /** address -> PTR name; addresses not here have none. */
  ptr: Map<string, string>;
  fixedLines: Map<string, FixedLine>;
  declarations: Declaration[];
}

/** Shares of sessions by kind of visitor (the traffic mix), before kinds without people are left out. */
const TRAFFIC_MIX: Record<Kind, number> = {
  own_as: 0.2, static: 0.32, coworking: 0.05, home_office: 0.08, consumer: 0.17, cgnat: 0.08, mobile: 0.07, cloud: 0.03,
};
/** Share of sessions that end with a form, by kind. */
const FORM_RATE: Record<Kind, number> = {
  own_as: 0.04, static: 0.04, coworking: 0.04, home_office: 0.06, consumer: 0.02, cgnat: 0.03, mobile: 0.02, cloud: 0.02,
};
/** Share of people of a kind who type their employer's address (not a free-mail one) into forms. */
const BUSINESS_EMAIL: Record<Kind, number> = {
  own_as: 1, static: 0.85, coworking: 0.85, home_office: 0.85, consumer: 0, cgnat: 0.3, mobile: 0.2, cloud: 0.4,
};
const PAGES = [
  ["/", "Home"], ["/pricing", "Pricing"], ["/products/analytics", "Analytics"], ["/products/integrations", "Integrations"],
  ["/customers", "Customers"], ["/blog/b2b-match-rates", "Match rates explained"], ["/docs/getting-started", "Getting started"],
  ["/about", "About us"], ["/careers", "Careers"], ["/security", "Security"],
] as const;
const DAY_MINUTES = 1440;

/** Dotted form of the /29 (or /32) a static company got, and its usable addresses. */
interface StaticBlock {
  cidr: string;
  usable: string[];
}

/**
 * Hands out static business addresses of an ISP's business /24s: whole /29s, or single addresses
 * from shared /29s, each /29 drawn at random so that the companies spread over the /24s.
 */
function staticAllocator(blocks: number[], random: Random) {
  const slots = blocks.flatMap((block) => Array.from({ length: 32 }, (_, k) => block + 8 * k));
  let singles: number[] = [];
  const take = () => {
    if (!slots.length) throw new Error("the ISP's business blocks are full: fewer organisations per ISP, or more ISPs");
    return slots.splice(random.int(0, slots.length - 1), 1)[0]!;
  };
  return {
    block29(): StaticBlock {
      const base = take();
      return { cidr: `${ipOf(base)}/29`, usable: [1, 2, 3, 4, 5, 6].map((h) => ipOf(base + h)) };
    },
    single(): StaticBlock {
      if (!singles.length) {
        const base = take();
        singles = [1, 2, 3, 4, 5, 6].map((h) => base + h);
      }
      const address = ipOf(singles.shift()!);
      return { cidr: `${address}/32`, usable: [address] };
    },
  };
}

interface Isp {
  network: Network;
  pool: number[];
  cgnat: string[];
  statics: ReturnType<typeof staticAllocator>;
}

/** Every address of the blocks (hosts .1 to .254) named by `name` (or not, when it answers undefined). */
function nameBlocks(ptr: Map<string, string>, blocks: number[], name: (ip: string) => string | undefined): void {
  for (const block of blocks) {
    for (let offset = 1; offset <= 254; offset++) {
      const ip = ipOf(block + offset);
      const hostName = name(ip);
      if (hostName) ptr.set(ip, hostName);
    }
  }
}

export function buildWorld(options: WorldOptions, networks: SelectedNetworks): World {
  if (!networks.isps.length) throw new Error("the world needs at least one ISP the service types isp");
  const random = createRandom(subSeed(options.seed, "world"));
  const company = companyNamer(random);
  const ptr = new Map<string, string>();
  const taken = new Set<number>();
  const orgs: Organisation[] = [];
  const people: Person[] = [];
  const fixedLines = new Map<string, FixedLine>();
  const declarations: Declaration[] = [];

  const ownAsCount = Math.min(networks.ownAs.length, Math.round(options.orgs * 0.2));
  const spaces = Math.max(1, Math.round(options.orgs / 40));
  const staticCount = Math.max(1, options.orgs - ownAsCount - spaces * 4);
  const businessBlocks = Math.max(2, Math.ceil(staticCount / networks.isps.length / 12));

  const isps: Isp[] = networks.isps.map((network) => {
    const [pool, business, cgnat] = [blocksIn(network, 6, random, taken), blocksIn(network, businessBlocks, random, taken), blocksIn(network, 1, random, taken)];
    const accessStyle = random.pick<PtrStyle>(["dashed", "hex", "dotted", "dashed", "hex", "none"]);
    const genericStyle = random.pick<PtrStyle>(["dashed", "hex", "dotted"]);
    nameBlocks(ptr, [...pool, ...cgnat], (ip) => accessLinePtr(ip, network.domain, accessStyle));
    nameBlocks(ptr, business, (ip) => staticGenericPtr(ip, network.domain, genericStyle));
    const cgnatAddresses = [1, 2, 3, 4].map(() => ipOf(cgnat[0]! + random.int(1, 254)));
    return { network, pool, cgnat: [...new Set(cgnatAddresses)], statics: staticAllocator(business, random) };
  });
  const carriers = networks.mobiles.map((network) => {
    const blocks = blocksIn(network, 2, random, taken);
    if (random.chance(0.5)) nameBlocks(ptr, blocks, (ip) => mobilePtr(ip, network.domain));
    return blocks;
  });
  const clouds = networks.clouds.map((network) => {
    const blocks = blocksIn(network, 4, random, taken);
    nameBlocks(ptr, blocks, (ip) => cloudPtr(ip, network.name));
    return blocks;
  });

  const addOrg = (org: Omit<Organisation, "id">) => orgs[orgs.push({ ...org, id: orgs.length }) - 1]!;
  const addPerson = (kind: Kind, orgId: number | null, where: Where, emailDomain: string | null) => {
    const name = personName(random);
    const domain = emailDomain ?? random.pick(FREE_MAIL);
    people.push({
      id: people.length, kind, orgId, where, visitorId: random.hex(16), formRate: FORM_RATE[kind],
      email: emailAt(name, domain, random), name: `${name.first} ${name.last}`,
      userAgent: random.pick(kind === "mobile" ? USER_AGENTS.mobile : USER_AGENTS.desktop),
    });
  };
  /** An employer's domain for a person of a non-business kind who types it, else null (free-mail). */
  const employerOf = (kind: Kind, employers: Organisation[]) => (employers.length && random.chance(BUSINESS_EMAIL[kind]) ? random.pick(employers) : null);

  // organisations on their own AS: 1-3 office addresses each, half of them with a PTR under the organisation's domain
  for (const { network, serviceName, serviceDomain } of networks.ownAs.slice(0, ownAsCount)) {
    const domains = [...new Set([network.domain, ...(serviceDomain ? [serviceDomain] : [])])];
    const org = addOrg({ name: serviceName, domain: network.domain, kind: "own_as", names: [serviceName], domains });
    const offices = [...new Set(Array.from({ length: random.int(1, 3) }, () => addressIn(network, random)))];
    offices.forEach((address, i) => {
      const named = random.chance(0.5);
      fixedLines.set(address, { address, kind: "own_as", orgId: org.id, ptr: named ? "own" : "none" });
      if (named) ptr.set(address, ownPtr(org.domain, i, random));
    });
    for (let n = random.int(2, 8); n > 0; n--) addPerson("own_as", org.id, { type: "fixed", address: random.pick(offices) }, org.domain);
  }

  // small companies on static lines: a single address or a /29 of an ISP; PTR under their domain, the ISP's generic name, or none
  for (let i = 0; i < staticCount; i++) {
    const isp = random.pick(isps);
    const { name, domain } = company(companySuffix(random, isp.network.domain));
    const org = addOrg({ name, domain, kind: "static", names: [], domains: [domain] });
    const block = random.chance(0.6) ? isp.statics.single() : isp.statics.block29();
    const used = random.shuffled(block.usable).slice(0, block.usable.length === 1 ? 1 : random.int(1, 3));
    const draw = random.next();
    const ptrKind = draw < 0.35 ? "own" : draw < 0.75 ? "generic" : "none";
    used.forEach((address, index) => {
      fixedLines.set(address, { address, kind: "static", orgId: org.id, ptr: ptrKind });
      if (ptrKind === "own") ptr.set(address, ownPtr(domain, index, random));
      if (ptrKind === "none") ptr.delete(address);
    });
    if (random.chance(0.25)) declarations.push({ cidr: block.cidr, orgId: org.id, organizationName: name, organizationDomain: domain, when: random.chance(0.5) ? "start" : "midway" });
    for (let n = random.int(1, 4); n > 0; n--) addPerson("static", org.id, { type: "fixed", address: random.pick(used) }, domain);
  }

  // coworking spaces: one static address shared by the people of 3-6 small companies
  for (let s = 0; s < spaces; s++) {
    const isp = random.pick(isps);
    const address = isp.statics.single().usable[0]!;
    const ptrKind = random.pick(["operator", "generic", "none"] as const);
    if (ptrKind === "operator") ptr.set(address, ownPtr(company(companySuffix(random, isp.network.domain), "coworking").domain, 0, random));
    if (ptrKind === "none") ptr.delete(address);
    fixedLines.set(address, { address, kind: "coworking", orgId: null, ptr: ptrKind });
    for (let m = random.int(3, 6); m > 0; m--) {
      const { name, domain } = company(companySuffix(random, isp.network.domain));
      const org = addOrg({ name, domain, kind: "coworking_member", names: [], domains: [domain] });
      for (let n = random.int(1, 2); n > 0; n--) addPerson("coworking", org.id, { type: "fixed", address }, domain);
    }
  }

  const employers = orgs.filter((o) => o.kind !== "coworking_member");
  const dynamicLine = (): Where => ({ type: "dynamic", pool: random.pick(isps).pool, period: random.int(1, 7), phase: random.int(0, 6) });
  const count = (share: number) => Math.max(1, Math.round(options.orgs * share));
  for (let n = count(0.5); n > 0; n--) {
    const employer = employerOf("home_office", employers);
    addPerson("home_office", employer?.id ?? null, dynamicLine(), employer?.domain ?? null);
  }
  for (let n = count(2); n > 0; n--) addPerson("consumer", null, dynamicLine(), null);
  for (let n = count(1); n > 0; n--) {
    const employer = employerOf("cgnat", employers);
    addPerson("cgnat", employer?.id ?? null, { type: "shared", addresses: random.pick(isps).cgnat }, employer?.domain ?? null);
  }
  if (carriers.length) {
    for (let n = count(1); n > 0; n--) {
      const employer = employerOf("mobile", employers);
      addPerson("mobile", employer?.id ?? null, { type: "blocks", blocks: random.pick(carriers) }, employer?.domain ?? null);
    }
  }
  if (clouds.length) {
    for (let n = count(0.25); n > 0; n--) {
      const employer = employerOf("cloud", employers);
      addPerson("cloud", employer?.id ?? null, { type: "blocks", blocks: random.pick(clouds) }, employer?.domain ?? null);
    }
  }

  const site = "www.matchbench.example";
  const { sessions, visits, forms } = traffic(options, people, site, random);
  return { options, site, orgs, people, sessions, visits, forms, ptr, fixedLines, declarations };
}

/** The address a person's session of `day` comes from. */
function addressOf(person: Person, day: number, random: Random, seed: number): string {
  const where = person.where;
  switch (where.type) {
    case "fixed":
      return where.address;
    case "shared":
      return random.pick(where.addresses);
    case "blocks":
      return ipOf(random.pick(where.blocks) + random.int(1, 254));
    case "dynamic": {
      // the same line keeps its address for `period` days, then gets another of the pool
      const epoch = Math.floor((day + where.phase) / where.period);
      const h = subSeed(seed, `line ${person.id} ${epoch}`);
      return ipOf(where.pool[h % where.pool.length]! + 1 + ((h >>> 8) % 254));
    }
  }
}

/** Splits a session's events into batches of 1 to 3 (the script sends a page's events as they come). */
function batchesOf(events: CollectedEvent[], random: Random): CollectedEvent[][] {
  const batches: CollectedEvent[][] = [];
  for (let i = 0; i < events.length; ) {
    const size = random.int(1, 3);
    batches.push(events.slice(i, i + size));
    i += size;
  }
  return batches;
}

/** Sessions until `visits` page views: each picks a kind by the traffic mix, then one of its people, a day and a time. */
function traffic(options: WorldOptions, people: Person[], site: string, random: Random) {
  const byKind = new Map<Kind, Person[]>();
  for (const person of people) byKind.set(person.kind, [...(byKind.get(person.kind) ?? []), person]);
  const kinds = (Object.keys(TRAFFIC_MIX) as Kind[]).filter((k) => byKind.has(k));
  const total = kinds.reduce((sum, k) => sum + TRAFFIC_MIX[k], 0);
  const pickKind = () => {
    let r = random.next() * total;
    for (const kind of kinds) if ((r -= TRAFFIC_MIX[kind]) < 0) return kind;
    return kinds[kinds.length - 1]!;
  };
  const drafts: (Session & { order: number; pages: { visitId: string }[]; form?: Form })[] = [];
  let views = 0;
  while (views < options.visits) {
    const person = random.pick(byKind.get(pickKind())!);
    const day = random.int(0, options.days - 1);
    const minute = BUSINESS_KINDS.has(person.kind) ? random.int(7 * 60, 19 * 60) : random.int(0, DAY_MINUTES - 1);
    const address = addressOf(person, day, random, options.seed);
    const count = Math.min(random.geometric(0.45, 8), options.visits - views);
    const events: CollectedEvent[] = [];
    const pages: { visitId: string }[] = [];
    let referrer: string | undefined = random.chance(0.5) ? random.pick(["https://www.google.com/", "https://www.linkedin.com/", "https://www.bing.com/"]) : undefined;
    for (let p = 0; p < count; p++) {
      const visitId = (views + p).toString(36);
      const [path, title] = random.pick(PAGES);
      const url = `https://${site}${path}?bv=${visitId}`;
      events.push({ type: "pageview", visitorId: person.visitorId, url, title, ...(referrer ? { referrer } : {}) });
      pages.push({ visitId });
      referrer = `https://${site}${path}`;
    }
    views += count;
    let form: Form | undefined;
    if (random.chance(person.formRate)) {
      const fields: Record<string, string> = { email: person.email, name: person.name, message: "Please send us an offer." };
      events.push({ type: "form", visitorId: person.visitorId, url: `https://${site}/contact`, fields });
      form = { personId: person.id, address, domain: person.email.slice(person.email.indexOf("@") + 1), day, afterVisits: 0 };
    }
    drafts.push({ order: drafts.length, day, minute, personId: person.id, address, userAgent: person.userAgent, batches: batchesOf(events, random), pages, ...(form ? { form } : {}) });
  }
  drafts.sort((a, b) => a.day - b.day || a.minute - b.minute || a.order - b.order);
  const visits: Visit[] = [];
  const forms: Form[] = [];
  for (const s of drafts) {
    for (const { visitId } of s.pages) visits.push({ visitId, personId: s.personId, address: s.address, day: s.day });
    if (s.form) forms.push({ ...s.form, afterVisits: visits.length });
  }
  const sessions = drafts.map(({ day, minute, personId, address, userAgent, batches }) => ({ day, minute, personId, address, userAgent, batches }));
  return { sessions, visits, forms };
}
