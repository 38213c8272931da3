// The simulated B2B traffic world: organisations, their people and sites, hosts (coworking spaces,
// serviced offices, hotels), households, phones and cloud machines, and the sessions they make on
// one website, with the ground truth of who each page view belongs to. Built from a seed, a mix
// (IPv4 only, or about half the traffic on IPv6) and the networks the service typed as expected, so
// the same seed, mix and service build the same world. Its naming is modelled on how operators and
// companies name networks (bench/match/names.ts), not on the service's rules.
import { v6Cidr, v6Text, v6Value } from "./addresses.ts";
import {
  ACCESS_STYLES, accessLinePtr, BUSINESS_STYLES, type BusinessStyle, businessGatewayPtr6, businessLinePtr, cloudPtr, companyNamer, companySuffix, emailAt, FREE_MAIL, hostDomain,
  hostGatewayPtr, householdGatewayPtr6, mobilePtr, type OperatorNaming, operatorNaming, ownPtr, personName, USER_AGENTS,
} from "./names.ts";
import { addressIn, blocksIn, freeSlash48, ipOf, type Network } from "./networks.ts";
import { createRandom, type Random, subSeed } from "./random.ts";

/** Who a visitor is and where they sit. The first three are business visits; the rest must never be attributed. */
export type Kind = "own_as" | "static" | "tenant" | "home_worker" | "household" | "next_subscriber" | "guest" | "cgnat" | "mobile" | "cloud";
export const BUSINESS_KINDS: ReadonlySet<Kind> = new Set(["own_as", "static", "tenant"]);

/** `v4`: IPv4 only; `v6half`: dual-stack sites, households and phones, about half the page views on IPv6. */
export const MIXES = ["v4", "v6half"] as const;
export type Mix = (typeof MIXES)[number];

export interface Organisation {
  id: number;
  name: string;
  domain: string;
  kind: "own_as" | "static" | "tenant";
  /** Lead organisation names that name it (own AS: the AS's name as the service gives it). */
  names: string[];
  /** Lead organisation domains that name it. */
  domains: string[];
}

/**
 * Whose name a site's PTR records carry: the organisation's own domain, the access operator's
 * business name (a customer or line number, or the address under a business zone), the operator's
 * household-line name (a static line named like a dynamic one), the host's domain, or none.
 */
export type Naming = "own" | "operator" | "access-like" | "host" | "none";

/** A fixed place of business: an organisation's office, a static line, a host's network. */
export interface Site {
  id: number;
  kind: "own_as" | "static" | "host";
  host?: "coworking" | "serviced" | "hotel";
  /** The organisation; null for a host (its tenants or guests share it). */
  orgId: number | null;
  naming: Naming;
  /** A host's own brand domain, when its gateway is named under it (naming "host"). */
  domain?: string;
  /** IPv4 addresses (each one unit of evidence). */
  v4: string[];
  /** The site's IPv6 /48 (text of its first address) and its LANs' /64 numbers; absent: no IPv6. */
  v6?: { prefix: string; lans: number[] };
}

export interface Declaration {
  cidr: string;
  orgId: number;
  organizationName: string;
  organizationDomain: string;
  /** Declared before the traffic, or halfway through it (after the first half of the days). */
  when: "start" | "midway";
  /** The partner declared an access operator's household pool (a mistake the service should flag). */
  consumerPool?: boolean;
}

/** A household line: its IPv4 address changes every `period` days within the pool, or follows `leases`; its IPv6 /56 stays. */
interface HouseholdLine {
  type: "household";
  pool: number[];
  period: number;
  phase: number;
  /** Explicit addresses from a day on (a reassigned address), instead of the pool's. */
  leases?: { from: number; address: string }[];
  slash56?: string;
}

type Where =
  | { type: "site"; siteId: number; address: string; lan: number }
  | HouseholdLine
  /** A new address of these /24 blocks at every session (mobile carriers, clouds); IPv6: a new /64 of the /48. */
  | { type: "blocks"; blocks: number[]; slash48?: string }
  /** One of a few shared public addresses at every session (CGNAT); IPv6: the household's own /56. */
  | { type: "shared"; addresses: string[]; slash56?: string };

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
  /** Sends exactly one form, in the first session (a host's tenant seen once). */
  formOnce?: boolean;
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

/** Where a page view or form came from: the address, and its unit of evidence (an IPv4 address, a site's IPv6 /48, else the /64). */
interface Origin {
  address: string;
  unit: string;
  family: 4 | 6;
}

export interface Visit extends Origin {
  /** The `bv` query parameter of the page view's URL. */
  visitId: string;
  personId: number;
  day: number;
}

export interface Form extends Origin {
  personId: number;
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
  /** Organisations: about 20% on their own AS, tenants of one host per 20, the rest on static lines. */
  orgs: number;
  /** Page views in all. */
  visits: number;
  days: number;
  mix: Mix;
  /**
   * Partners of the service whose websites the same people visit (1: the measured one alone). The
   * others' traffic reaches the service in accounts of their own; it is never measured, only what
   * the service learns across accounts from it (a host's domain) shows in the first one's figures.
   */
  partners?: number;
}

/** The traffic one partner's website gets from the world's people. */
export interface PartnerTraffic {
  site: string;
  /** In time order. */
  sessions: Session[];
  visits: Visit[];
  forms: Form[];
}

export interface World {
  options: WorldOptions;
  site: string;
  orgs: Organisation[];
  people: Person[];
  sites: Site[];
  /** Unit of evidence -> the site it belongs to (sites' units only). */
  unitSite: Map<string, number>;
  /** In time order. */
  sessions: Session[];
  visits: Visit[];
  forms: Form[];
  /** address -> PTR name; addresses not here have none. */
  ptr: Map<string, string>;
  declarations: Declaration[];
  /** Each access operator's naming, by AS number. */
  operators: Map<number, OperatorNaming>;
  /** The other partners' traffic (WorldOptions.partners), each drawn on its own from the same people. */
  others: PartnerTraffic[];
}

/** Shares of sessions by kind of visitor (the traffic mix), before kinds without people are left out. */
const TRAFFIC_MIX: Record<Kind, number> = {
  own_as: 0.17, static: 0.3, tenant: 0.08, home_worker: 0.08, household: 0.13, next_subscriber: 0.04, guest: 0.04, cgnat: 0.07, mobile: 0.06, cloud: 0.03,
};
/** Share of sessions that end with a form, by kind. */
const FORM_RATE: Record<Kind, number> = {
  own_as: 0.04, static: 0.04, tenant: 0.05, home_worker: 0.07, household: 0.02, next_subscriber: 0.02, guest: 0.04, cgnat: 0.03, mobile: 0.02, cloud: 0.02,
};
/** Share of people of a non-business kind who type their employer's address (not a free-mail one) into forms. */
const BUSINESS_EMAIL: Partial<Record<Kind, number>> = { home_worker: 0.9, guest: 0.5, cgnat: 0.3, mobile: 0.2, cloud: 0.4 };
/** v6half: the share of sites, households and phones with IPv6, and of their sessions that use it (browsers prefer IPv6). */
const DUAL_STACK = 0.7;
const IPV6_PREFERRED = 0.85;
/** The LANs (/64 numbers inside a site's /48) a company may run: staff, guests' Wi-Fi, labs. */
const LAN_NUMBERS = [0, 1, 0x10, 0x20, 0x100];
const PAGES = [
  ["/", "Home"], ["/pricing", "Pricing"], ["/products/analytics", "Analytics"], ["/products/integrations", "Integrations"],
  ["/customers", "Customers"], ["/blog/b2b-match-rates", "Match rates explained"], ["/docs/getting-started", "Getting started"],
  ["/about", "About us"], ["/careers", "Careers"], ["/security", "Security"],
] as const;
const DAY_MINUTES = 1440;

/** The addresses of an access operator the world uses, and how it names them. */
interface Operator {
  network: Network;
  naming: OperatorNaming;
  pool: number[];
  cgnat: string[];
  /** Free /29s of its business /24s (first address), drawn at random. */
  slots: number[];
  /** IPv6: /48s it hands to business customers are drawn on demand; households' /56s come from `households48`. */
  households48?: bigint;
  next56: number;
}

/** What the builder holds while it builds: everything the parts add to. */
interface Builder {
  options: WorldOptions;
  random: Random;
  company: ReturnType<typeof companyNamer>;
  ptr: Map<string, string>;
  taken: Set<number>;
  taken6: Set<bigint>;
  hostDomains: Set<string>;
  orgs: Organisation[];
  people: Person[];
  sites: Site[];
  declarations: Declaration[];
  operators: Operator[];
}

/** Every address of the /24 blocks (hosts .1 to .254) named by `name` (or not, when it answers undefined). */
function nameBlocks(ptr: Map<string, string>, blocks: number[], name: (ip: string) => string | undefined): void {
  for (const block of blocks) {
    for (let offset = 1; offset <= 254; offset++) {
      const ip = ipOf(block + offset);
      const hostName = name(ip);
      if (hostName) ptr.set(ip, hostName);
    }
  }
}

const dualStack = (b: Builder) => b.options.mix === "v6half" && b.random.chance(DUAL_STACK);

/**
 * The styles of the world's operators, in turn: the first two name business lines like household
 * lines and by customer number (the hardest cases are in every world), the others in random order.
 */
function operatorStyles(random: Random, count: number): Pick<OperatorNaming, "access" | "business">[] {
  const business: BusinessStyle[] = ["like-access", "customer", ...random.shuffled(BUSINESS_STYLES.filter((s) => s !== "like-access" && s !== "customer"))];
  const access = random.shuffled(ACCESS_STYLES);
  return Array.from({ length: count }, (_, i) => ({ business: business[i % business.length]!, access: access[i % access.length]! }));
}

/** An access operator: household pools, business /24s named by its business style, a CGNAT block. */
function addOperator(b: Builder, network: Network, businessBlocks: number, styles: Pick<OperatorNaming, "access" | "business">): Operator {
  const naming = operatorNaming(b.random, network.name, network.domain, styles);
  const [pool, business, cgnat] = [blocksIn(network, 4, b.random, b.taken), blocksIn(network, businessBlocks, b.random, b.taken), blocksIn(network, 1, b.random, b.taken)];
  nameBlocks(b.ptr, [...pool, ...cgnat], (ip) => accessLinePtr(ip, naming));
  const slots = b.random.shuffled(business.flatMap((block) => Array.from({ length: 32 }, (_, k) => block + 8 * k)));
  // every business line carries the operator's name until a customer names its own
  for (const slot of slots) for (let h = 1; h <= 6; h++) setPtr(b.ptr, ipOf(slot + h), businessLinePtr(ipOf(slot + h), naming, customerNumber(slot), h - 1));
  const households48 = b.options.mix === "v6half" ? freeSlash48(network, b.random, b.taken6) : undefined;
  const cgnatAddresses = [...new Set([1, 2, 3, 4].map(() => ipOf(cgnat[0]! + b.random.int(1, 254))))];
  return { network, naming, pool, cgnat: cgnatAddresses, slots, households48, next56: 0 };
}

/** A business customer's number: stable for its /29 (a customer of the operator). */
const customerNumber = (slot: number) => 100_000 + ((slot >>> 3) % 900_000);

function setPtr(ptr: Map<string, string>, address: string, name: string | undefined): void {
  if (name) ptr.set(address, name);
  else ptr.delete(address);
}

/** A household's /56 of the operator (its first address as text), or undefined without IPv6. */
function householdSlash56(b: Builder, operator: Operator): string | undefined {
  if (operator.households48 === undefined || !dualStack(b)) return undefined;
  const prefix = operator.households48 + (BigInt(operator.next56++ % 256) << 72n);
  setPtr(b.ptr, v6Text(prefix + 1n), householdGatewayPtr6(operator.naming, prefix.toString(16).slice(0, 14)));
  return v6Text(prefix);
}

/** A site's IPv6 /48 in `network` with 1-3 LANs, or undefined (IPv4 only, or no IPv6 there). */
function siteV6(b: Builder, network: Network): Site["v6"] {
  const prefix = dualStack(b) ? freeSlash48(network, b.random, b.taken6) : undefined;
  if (prefix === undefined) return undefined;
  const lans = b.random.shuffled(LAN_NUMBERS).slice(0, b.random.int(1, 3));
  return { prefix: v6Text(prefix), lans };
}

/** Gateway addresses of a site's IPv6: `::1` of the /48 and of each LAN's /64. */
function gateways(v6: NonNullable<Site["v6"]>): { site: string; lans: string[] } {
  const prefix = v6Value(v6.prefix);
  return { site: v6Text(prefix + 1n), lans: v6.lans.map((lan) => v6Text(prefix + (BigInt(lan) << 64n) + 1n)) };
}

function addSite(b: Builder, site: Omit<Site, "id">): Site {
  const added = { ...site, id: b.sites.length };
  b.sites.push(added);
  return added;
}

const addOrg = (b: Builder, org: Omit<Organisation, "id">) => b.orgs[b.orgs.push({ ...org, id: b.orgs.length }) - 1]!;

function addPerson(b: Builder, kind: Kind, orgId: number | null, where: Where, emailDomain: string | null, extra: Partial<Person> = {}): Person {
  const name = personName(b.random);
  const domain = emailDomain ?? b.random.pick(FREE_MAIL);
  const person: Person = {
    id: b.people.length, kind, orgId, where, visitorId: b.random.hex(16), formRate: FORM_RATE[kind],
    email: emailAt(name, domain, b.random), name: `${name.first} ${name.last}`,
    userAgent: b.random.pick(kind === "mobile" ? USER_AGENTS.mobile : USER_AGENTS.desktop), ...extra,
  };
  b.people.push(person);
  return person;
}

/** A person at a site: one of its IPv4 addresses and one of its LANs. */
const atSite = (b: Builder, site: Site): Where => ({ type: "site", siteId: site.id, address: b.random.pick(site.v4), lan: site.v6 ? b.random.pick(site.v6.lans) : 0 });

/** Organisations on their own AS: 1-3 office addresses (and a /48), half named under the organisation's domain. */
function addOwnAs(b: Builder, ownAs: SelectedNetworks["ownAs"]): void {
  for (const { network, serviceName, serviceDomain } of ownAs) {
    const domains = [...new Set([network.domain, ...(serviceDomain ? [serviceDomain] : [])])];
    const org = addOrg(b, { name: serviceName, domain: network.domain, kind: "own_as", names: [serviceName], domains });
    const v4 = [...new Set(Array.from({ length: b.random.int(1, 3) }, () => addressIn(network, b.random)))];
    const named = b.random.chance(0.5);
    const site = addSite(b, { kind: "own_as", orgId: org.id, naming: named ? "own" : "none", v4, v6: siteV6(b, network) });
    if (named) nameOwnSite(b, site, org.domain);
    for (let n = b.random.int(2, 8); n > 0; n--) addPerson(b, "own_as", org.id, atSite(b, site), org.domain);
  }
}

/** The organisation's own names on its site: every IPv4 address, and the gateways of its /48 and LANs. */
function nameOwnSite(b: Builder, site: Site, domain: string): void {
  site.v4.forEach((address, i) => setPtr(b.ptr, address, ownPtr(domain, i, b.random)));
  if (!site.v6) return;
  const { site: gateway, lans } = gateways(site.v6);
  setPtr(b.ptr, gateway, ownPtr(domain, 0, b.random));
  lans.forEach((lan, i) => setPtr(b.ptr, lan, `lan${i + 1}-gw.${domain}`));
}

/** How the world names a site on an operator's business line when the operator names it. */
const operatorNamingOf = (operator: Operator): Naming =>
  operator.naming.business === "none" ? "none" : operator.naming.business === "like-access" ? "access-like" : "operator";

/** A static line of an operator: a single address or 1-3 of a /29, the /29's CIDR, and maybe a /48 named by the operator. */
function staticLine(b: Builder, operator: Operator): { v4: string[]; cidr: string; v6: Site["v6"]; customer: number } {
  const slot = operator.slots.pop();
  if (slot === undefined) throw new Error("the operator's business blocks are full: fewer organisations per ISP, or more ISPs");
  const single = b.random.chance(0.6);
  const usable = [1, 2, 3, 4, 5, 6].map((h) => ipOf(slot + h));
  const v4 = single ? [usable[0]!] : b.random.shuffled(usable).slice(0, b.random.int(1, 3));
  const v6 = siteV6(b, operator.network);
  const customer = customerNumber(slot);
  if (v6) setPtr(b.ptr, gateways(v6).site, businessGatewayPtr6(operator.naming, customer));
  return { v4, cidr: single ? `${v4[0]}/32` : `${ipOf(slot)}/29`, v6, customer };
}

/** Small companies on static lines: PTR under their own domain, the operator's name, or none; some declared by the partner. */
function addStatic(b: Builder, count: number): void {
  for (let i = 0; i < count; i++) {
    const operator = b.random.pick(b.operators);
    const { name, domain } = b.company(companySuffix(b.random, operator.network.domain));
    const org = addOrg(b, { name, domain, kind: "static", names: [], domains: [domain] });
    const line = staticLine(b, operator);
    const draw = b.random.next();
    const naming: Naming = draw < 0.3 ? "own" : draw < 0.85 ? operatorNamingOf(operator) : "none";
    const site = addSite(b, { kind: "static", orgId: org.id, naming, v4: line.v4, v6: line.v6 });
    if (naming === "own") nameOwnSite(b, site, domain);
    if (naming === "none") for (const address of [...line.v4, ...(line.v6 ? [gateways(line.v6).site] : [])]) b.ptr.delete(address);
    if (b.random.chance(0.2)) {
      const when = b.random.chance(0.5) ? "start" : "midway";
      b.declarations.push({ cidr: line.cidr, orgId: org.id, organizationName: name, organizationDomain: domain, when });
      if (line.v6) b.declarations.push({ cidr: `${line.v6.prefix}/48`, orgId: org.id, organizationName: name, organizationDomain: domain, when });
    }
    for (let n = b.random.int(1, 4); n > 0; n--) addPerson(b, "static", org.id, atSite(b, site), domain);
  }
}

const HOST_KINDS = ["coworking", "serviced", "hotel"] as const;

/**
 * Hosts: one network for every tenant or guest, named under the host's brand (most without a word
 * saying what it is), the operator's name, or none. The first (a coworking space) is one whose
 * tenants send a single form in all: one tenant seen once.
 */
function addHosts(b: Builder, count: number): void {
  for (let h = 0; h < count; h++) {
    const kind = HOST_KINDS[h % HOST_KINDS.length]!;
    const operator = b.random.pick(b.operators);
    const line = staticLine(b, operator);
    const draw = b.random.next();
    const naming: Naming = draw < 0.6 ? "host" : draw < 0.85 ? operatorNamingOf(operator) : "none";
    const site = addSite(b, { kind: "host", host: kind, orgId: null, naming, v4: line.v4.slice(0, 1), v6: line.v6 });
    const suffix = companySuffix(b.random, operator.network.domain);
    if (naming === "host") site.domain = hostDomain(b.random, kind, suffix, b.hostDomains);
    const gatewayName = site.domain ? hostGatewayPtr(site.domain, b.random) : undefined;
    if (naming === "host" || naming === "none") for (const address of [...site.v4, ...(site.v6 ? [gateways(site.v6).site] : [])]) setPtr(b.ptr, address, gatewayName);
    if (kind === "hotel") addGuests(b, site);
    else addTenants(b, site, kind, suffix, h === 0);
  }
}

function addTenants(b: Builder, site: Site, kind: "coworking" | "serviced", suffix: string, seenOnce: boolean): void {
  const [fewest, most, staff] = kind === "coworking" ? [3, 6, 2] : [2, 4, 3];
  let first = true;
  for (let m = b.random.int(fewest, most); m > 0; m--) {
    const { name, domain } = b.company(b.random.chance(0.7) ? suffix : "com");
    const org = addOrg(b, { name, domain, kind: "tenant", names: [], domains: [domain] });
    for (let n = b.random.int(1, staff); n > 0; n--) {
      addPerson(b, "tenant", org.id, atSite(b, site), domain, seenOnce ? { formRate: 0, formOnce: first } : {});
      first = false;
    }
  }
}

/** An employer's domain for a person of a non-business kind who types it, else null (free-mail). */
function employerOf(b: Builder, kind: Kind): Organisation | null {
  return b.orgs.length && b.random.chance(BUSINESS_EMAIL[kind] ?? 0) ? b.random.pick(b.orgs) : null;
}

/** A hotel's guests: travellers, half of them typing their employer's address. */
function addGuests(b: Builder, site: Site): void {
  for (let n = b.random.int(6, 12); n > 0; n--) {
    const employer = employerOf(b, "guest");
    addPerson(b, "guest", employer?.id ?? null, atSite(b, site), employer?.domain ?? null);
  }
}

const poolAddress = (b: Builder, operator: Operator) => ipOf(b.random.pick(operator.pool) + b.random.int(1, 254));

function householdLine(b: Builder, operator: Operator): HouseholdLine {
  return { type: "household", pool: operator.pool, period: b.random.int(1, 10), phase: b.random.int(0, 9), slash56: householdSlash56(b, operator) };
}

/**
 * Home workers (an employer's e-mail address from a household line), a third of them moving to
 * another address midway while the next subscriber gets their old one; households.
 */
function addHouseholds(b: Builder): void {
  const count = (share: number) => Math.max(1, Math.round(b.options.orgs * share));
  for (let n = count(0.4); n > 0; n--) {
    const operator = b.random.pick(b.operators);
    const employer = employerOf(b, "home_worker");
    const line = householdLine(b, operator);
    if (b.random.chance(0.35)) {
      const [before, after, successorBefore] = [poolAddress(b, operator), poolAddress(b, operator), poolAddress(b, operator)];
      const day = b.random.int(Math.floor(b.options.days / 4), Math.floor((3 * b.options.days) / 4));
      line.leases = [{ from: 0, address: before }, { from: day, address: after }];
      const successor = { ...householdLine(b, operator), leases: [{ from: 0, address: successorBefore }, { from: day, address: before }] };
      addPerson(b, "next_subscriber", null, successor, null);
    }
    addPerson(b, "home_worker", employer?.id ?? null, line, employer?.domain ?? null);
  }
  for (let n = count(1.5); n > 0; n--) addPerson(b, "household", null, householdLine(b, b.random.pick(b.operators)), null);
}

/** CGNAT customers, phones on carriers (IPv6: a /64 of the carrier's /48 each session), cloud machines. */
function addRoaming(b: Builder, carriers: { blocks: number[]; slash48?: string }[], clouds: number[][]): void {
  const count = (share: number) => Math.max(1, Math.round(b.options.orgs * share));
  for (let n = count(0.8); n > 0; n--) {
    const operator = b.random.pick(b.operators);
    const employer = employerOf(b, "cgnat");
    addPerson(b, "cgnat", employer?.id ?? null, { type: "shared", addresses: operator.cgnat, slash56: householdSlash56(b, operator) }, employer?.domain ?? null);
  }
  for (let n = carriers.length ? count(0.8) : 0; n > 0; n--) {
    const carrier = b.random.pick(carriers);
    const employer = employerOf(b, "mobile");
    const slash48 = carrier.slash48 && dualStack(b) ? carrier.slash48 : undefined;
    addPerson(b, "mobile", employer?.id ?? null, { type: "blocks", blocks: carrier.blocks, slash48 }, employer?.domain ?? null);
  }
  for (let n = clouds.length ? count(0.2) : 0; n > 0; n--) {
    const employer = employerOf(b, "cloud");
    addPerson(b, "cloud", employer?.id ?? null, { type: "blocks", blocks: b.random.pick(clouds) }, employer?.domain ?? null);
  }
}

/** The partner's mistake: an operator's household /24 declared as one of its customers. */
function declareConsumerPool(b: Builder): void {
  const customers = b.orgs.filter((o) => o.kind === "static");
  if (!customers.length) return;
  const org = b.random.pick(customers);
  const pool = b.random.pick(b.operators).pool[0]!;
  b.declarations.push({ cidr: `${ipOf(pool)}/24`, orgId: org.id, organizationName: org.name, organizationDomain: org.domain, when: "start", consumerPool: true });
}

/** Unit of evidence -> site: each IPv4 address, and the site's /48. */
function unitsOf(sites: readonly Site[]): Map<string, number> {
  const units = new Map<string, number>();
  for (const site of sites) {
    for (const address of site.v4) units.set(address, site.id);
    if (site.v6) units.set(`${site.v6.prefix}/48`, site.id);
  }
  return units;
}

export function buildWorld(options: WorldOptions, networks: SelectedNetworks): World {
  if (!networks.isps.length) throw new Error("the world needs at least one ISP the service types isp");
  const random = createRandom(subSeed(options.seed, `world ${options.mix}`));
  const b: Builder = {
    options, random, company: companyNamer(random), ptr: new Map(), taken: new Set(), taken6: new Set(), hostDomains: new Set(),
    orgs: [], people: [], sites: [], declarations: [], operators: [],
  };
  const ownAsCount = Math.min(networks.ownAs.length, Math.round(options.orgs * 0.2));
  const hosts = Math.max(3, Math.round(options.orgs / 20));
  const staticCount = Math.max(1, options.orgs - ownAsCount - Math.round(hosts * 2.4));
  const businessBlocks = Math.max(2, Math.ceil((staticCount + hosts) / networks.isps.length / 12));
  const styles = operatorStyles(random, networks.isps.length);
  b.operators = networks.isps.map((network, i) => addOperator(b, network, businessBlocks, styles[i]!));
  const carriers = networks.mobiles.map((network) => {
    const blocks = blocksIn(network, 2, random, b.taken);
    if (random.chance(0.5)) nameBlocks(b.ptr, blocks, (ip) => mobilePtr(ip, network.domain));
    const prefix = options.mix === "v6half" ? freeSlash48(network, random, b.taken6) : undefined;
    const slash48 = prefix === undefined ? undefined : v6Text(prefix);
    return { blocks, slash48 };
  });
  const clouds = networks.clouds.map((network) => {
    const blocks = blocksIn(network, 4, random, b.taken);
    nameBlocks(b.ptr, blocks, (ip) => cloudPtr(ip, network.name));
    return blocks;
  });
  addOwnAs(b, networks.ownAs.slice(0, ownAsCount));
  addStatic(b, staticCount);
  addHosts(b, hosts);
  addHouseholds(b);
  addRoaming(b, carriers, clouds);
  declareConsumerPool(b);

  const site = "www.matchbench.example";
  const { sessions, visits, forms } = traffic(options, b.people, b.sites, site, random);
  const operators = new Map(b.operators.map((o) => [o.network.asn, o.naming] as const));
  // drawn after the measured partner's, each from its own stream: the first partner's world is the same whatever their number
  const others = Array.from({ length: Math.max(0, (options.partners ?? 1) - 1) }, (_, i) => {
    const otherSite = `www.partner${i + 2}.example`;
    return { site: otherSite, ...traffic(options, b.people, b.sites, otherSite, createRandom(subSeed(options.seed, `traffic ${options.mix} ${otherSite}`))) };
  });
  return { options, site, orgs: b.orgs, people: b.people, sites: b.sites, unitSite: unitsOf(b.sites), sessions, visits, forms, ptr: b.ptr, declarations: b.declarations, operators, others };
}

/** A random interface identifier: a privacy address's lower 64 bits (never the gateway's ::1). */
const interfaceId = (random: Random) => BigInt(`0x${random.hex(8)}`) | (1n << 40n);

/** The IPv6 origin of a session where the person has IPv6; undefined where they have none. */
function v6Origin(where: Where, sites: readonly Site[], random: Random): Origin | undefined {
  const at = (prefix: string, subnet: bigint, unitBits: number) => {
    const address = v6Value(prefix) + (subnet << 64n) + interfaceId(random);
    return { address: v6Text(address), unit: unitBits === 64 ? v6Cidr(address, 64) : `${prefix}/${unitBits}`, family: 6 as const };
  };
  switch (where.type) {
    case "site": {
      const v6 = sites[where.siteId]!.v6;
      return v6 && at(v6.prefix, BigInt(where.lan), 48);
    }
    case "household":
    case "shared":
      return where.slash56 ? at(where.slash56, BigInt(random.int(0, 3)), 56) : undefined;
    case "blocks":
      return where.slash48 ? at(where.slash48, BigInt(random.int(0, 65535)), 64) : undefined;
  }
}

/** The IPv4 address a person's session of `day` comes from. */
function v4Address(person: Person, day: number, random: Random, seed: number): string {
  const where = person.where;
  switch (where.type) {
    case "site":
      return where.address;
    case "shared":
      return random.pick(where.addresses);
    case "blocks":
      return ipOf(random.pick(where.blocks) + random.int(1, 254));
    case "household": {
      if (where.leases) return where.leases.filter((l) => l.from <= day).at(-1)!.address;
      // the same line keeps its address for `period` days, then gets another of the pool
      const epoch = Math.floor((day + where.phase) / where.period);
      const h = subSeed(seed, `line ${person.id} ${epoch}`);
      return ipOf(where.pool[h % where.pool.length]! + 1 + ((h >>> 8) % 254));
    }
  }
}

/** Where a session comes from: IPv6 when the person has it and the browser prefers it, else IPv4. */
function originOf(person: Person, day: number, sites: readonly Site[], random: Random, seed: number): Origin {
  const v6 = random.chance(IPV6_PREFERRED) ? v6Origin(person.where, sites, random) : undefined;
  if (v6) return v6;
  const address = v4Address(person, day, random, seed);
  return { address, unit: address, family: 4 };
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

/** Whether a person's session ends with a form: at their rate, or their one form in their first session. */
function sendsForm(person: Person, formsSent: Set<number>, random: Random): boolean {
  if (person.formOnce) return !formsSent.has(person.id);
  return random.chance(person.formRate);
}

/** Sessions until `visits` page views: each picks a kind by the traffic mix, then one of its people, a day and a time. */
function traffic(options: WorldOptions, people: Person[], sites: readonly Site[], site: string, random: Random) {
  const byKind = new Map<Kind, Person[]>();
  for (const person of people) byKind.set(person.kind, [...(byKind.get(person.kind) ?? []), person]);
  const kinds = (Object.keys(TRAFFIC_MIX) as Kind[]).filter((k) => byKind.has(k));
  const total = kinds.reduce((sum, k) => sum + TRAFFIC_MIX[k], 0);
  const pickKind = () => {
    let r = random.next() * total;
    for (const kind of kinds) if ((r -= TRAFFIC_MIX[kind]) < 0) return kind;
    return kinds[kinds.length - 1]!;
  };
  const drafts: (Session & { order: number; origin: Origin; pages: { visitId: string }[]; form?: Form })[] = [];
  const formsSent = new Set<number>();
  let views = 0;
  while (views < options.visits) {
    const person = random.pick(byKind.get(pickKind())!);
    const day = random.int(0, options.days - 1);
    const minute = BUSINESS_KINDS.has(person.kind) ? random.int(7 * 60, 19 * 60) : random.int(0, DAY_MINUTES - 1);
    const origin = originOf(person, day, sites, random, options.seed);
    const count = Math.min(random.geometric(0.45, 8), options.visits - views);
    const events: CollectedEvent[] = [];
    const pages: { visitId: string }[] = [];
    let referrer: string | undefined = random.chance(0.5) ? random.pick(["https://www.google.com/", "https://www.linkedin.com/", "https://www.bing.com/"]) : undefined;
    for (let p = 0; p < count; p++) {
      const visitId = (views + p).toString(36);
      const [path, title] = random.pick(PAGES);
      events.push({ type: "pageview", visitorId: person.visitorId, url: `https://${site}${path}?bv=${visitId}`, title, ...(referrer ? { referrer } : {}) });
      pages.push({ visitId });
      referrer = `https://${site}${path}`;
    }
    views += count;
    let form: Form | undefined;
    if (sendsForm(person, formsSent, random)) {
      formsSent.add(person.id);
      const fields: Record<string, string> = { email: person.email, name: person.name, message: "Please send us an offer." };
      events.push({ type: "form", visitorId: person.visitorId, url: `https://${site}/contact`, fields });
      form = { ...origin, personId: person.id, domain: person.email.slice(person.email.indexOf("@") + 1), day, afterVisits: 0 };
    }
    drafts.push({ order: drafts.length, day, minute, personId: person.id, address: origin.address, origin, userAgent: person.userAgent, batches: batchesOf(events, random), pages, ...(form ? { form } : {}) });
  }
  // in time order; a formOnce person's form stays in their first session of the draw, which is not always their earliest: fine, it is one form
  drafts.sort((a, b) => a.day - b.day || a.minute - b.minute || a.order - b.order);
  const visits: Visit[] = [];
  const forms: Form[] = [];
  for (const s of drafts) {
    for (const { visitId } of s.pages) visits.push({ ...s.origin, visitId, personId: s.personId, day: s.day });
    if (s.form) forms.push({ ...s.form, afterVisits: visits.length });
  }
  const sessions = drafts.map(({ day, minute, personId, address, userAgent, batches }) => ({ day, minute, personId, address, userAgent, batches }));
  return { sessions, visits, forms };
}
