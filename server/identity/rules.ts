// The identity rules: what the evidence of one range (an IPv4 /24, an IPv6 /48) says of the
// organisation behind each of its units and prefixes. Pure: the store (identities.ts) reads the
// evidence and the cross-range facts (operator domains, people seen at several addresses) and
// writes what this returns. The spec's AddressIdentity states the same rules for partners.
import { knownOrganizationOfDomain } from "./organizations.ts";
import { isOperatorDomain } from "./operator-domains.ts";
import { isHostDomain } from "./host-domains.ts";
import { isBusinessBrand } from "./domain-names.ts";
import { type IpVersion, RANGE_LENGTH, holds, prefixLength, smallestPrefixHolding } from "./addresses.ts";

/** The one threshold: an identity attributes visits when its confidence is at least this (and no guard applies). */
export const ATTRIBUTION_THRESHOLD = 0.5;

/** Confidence per kind of evidence, strongest first (declared networks: 1). */
export const CONFIDENCE = {
  declared: 1,
  reverseDnsAndEmail: 0.95,
  reverseDns: 0.85,
  emailOfSeveralPeople: 0.75,
  emailOfOnePerson: 0.6,
} as const;

/**
 * A range in which e-mail at addresses without a PTR domain names this many organisations or more
 * within the window, and which holds an address whose PTR name reads like a dynamic access line
 * or shows as many people with free-mail addresses as with business ones, is a dynamic pool: e-mail alone gives no identity there. A company's static line names one
 * organisation; many companies' static lines may share a /24 (an ISP's business block), which
 * then shows no access line.
 */
export const DYNAMIC_RANGE_ORGANIZATIONS = 4;

/**
 * People with free-mail addresses at an address (at least this many, and more than those with a
 * business address) make it a place many people share (CGNAT, a café, a hotel): e-mail alone
 * gives it no identity. At the units of a PTR domain no form names, this many make the domain a
 * host's (hostDomains: a hotel or a coworking space named under its own brand, whose people
 * identify themselves as individuals, never as it). A company's line is used with its domain; a
 * household's or a carrier's by people with their own addresses. The cost: an office whose people
 * give only private addresses, two or more, is not named by its PTR name until one of them gives
 * the company's.
 */
export const CONSUMERS = 2;

/**
 * A PTR domain naming this many addresses (units) or more, over this many ranges or more, in the
 * evidence of every account, is a network operator's (its generator names its customers' lines):
 * a company on an operator's static line is seen at the few addresses of its block (a /29 or /28,
 * one gateway in practice), within one range. Counted by the identity store across scopes, so
 * that one partner's traffic alone need not reach the per-range count
 * (TRACKING_DNS_OPERATOR_PREFIXES).
 */
export const OPERATOR_UNITS = { addresses: 16, ranges: 2 } as const;

/**
 * A unit whose PTR name reads like an access line (the dynamic_line mark) is a static line after
 * all when one organisation's people keep appearing there: at least `people` people not seen
 * elsewhere, their evidence spanning `days` days or more. A household has one person of a
 * company in it, and a dynamic line changes address within a day or so, which makes its people
 * moving ones; an office on a line its operator names like any other (Deutsche Telekom's static
 * lines read like its dynamic ones) shows several colleagues over days.
 */
export const STATIC_LINE = { people: 2, days: 2 } as const;

/**
 * A PTR domain at whose units forms name this many organisations or more, none of them the domain
 * itself, is a host's (a coworking space, a hotel, a managed office): its name is the host's, its
 * visitors are its guests. It then names nobody at any unit of the range. One is enough: a
 * company's own gateway name is borne out by its people's forms, and a form naming only another
 * organisation under it is a guest's or a tenant's.
 */
export const HOST_TENANTS = 1;

/**
 * Words of a hospitality network's name (a hotel's, a hostel's, a resort's guest Wi-Fi): such a
 * network's visitors are its guests, who bring their own employers' laptops; the hotel's own staff
 * are a handful among them. Its gateway's PTR domain is then a weak signal at best: it names the
 * unit only where a form of the same domain was seen there (the staff's).
 */
export const HOSPITALITY_WORD = /hotel|hostel|motel|resort|hospitality|guesthouse|guest-?house|hotspot/;

/**
 * Words of a shared workplace's name (a coworking space, a business centre, serviced offices): its
 * network carries its members' and tenants' people, of many organisations. Such a PTR domain, like
 * a curated host's (host-domains.json), is a host's unless a form of the range names it (its
 * staff): its units name nobody and say they are shared. Words a company's own name rarely
 * carries only ("hub", "suites", "offices" alone name law firms and software too).
 */
export const HOST_WORD = /cowork|workspace|business-?cent(?:er|re)|serviced-?offices?|shared-?offices?/;

/**
 * An address used around the clock: at least `visits` visitor-hours over the window (a visitor's
 * page views within one clock hour count once, over every account's traffic), and its quietest
 * `quietHours` consecutive hours of the day hold at least `share` of them. An office's people
 * browse in working hours, whatever its time zone (the quiet hours are found, not assumed); a
 * hotel's or a hostel's guests, a residence's or a café's people at any hour. A PTR domain no form
 * of the range names, borne by such an address, is then a host's (a hotel under its own brand,
 * whose guests identify themselves as nobody): it names nobody. So is a line its operator names
 * as a business line (business_line) used around the clock: a hotel's on a line it buys as a
 * business, where one guest's form would otherwise name every guest. The cost: an office that works
 * around the clock (shifts, a company's VPN exit for staff in every time zone) and is named by its
 * PTR name alone is not named until one of its people gives the company's address in a form.
 * Spread evenly, a third of the visits fall in any 8 hours; an office's evening visits are a few
 * in a hundred. A hotel's guests sleep too, and a few dozen visits leave the quietest 8 hours
 * below a third by chance: one in ten tells them apart (bench:match seed 12 v6half, a hotel found
 * around the clock early on whose quietest 8 hours then held 13% of 47 visitor-hours).
 */
export const AROUND_THE_CLOCK = { visits: 12, quietHours: 8, share: 0.1 } as const;

/** Whether visits per UTC hour of the day (24 counts) show an address used around the clock (AROUND_THE_CLOCK). */
export function usedAroundTheClock(visitsByHour: readonly number[]): boolean {
  const total = visitsByHour.reduce((a, b) => a + b, 0);
  if (total < AROUND_THE_CLOCK.visits) return false;
  let quietest = Infinity;
  for (let start = 0; start < 24; start++) {
    let visits = 0;
    for (let h = 0; h < AROUND_THE_CLOCK.quietHours; h++) visits += visitsByHour[(start + h) % 24] ?? 0;
    quietest = Math.min(quietest, visits);
  }
  return quietest >= AROUND_THE_CLOCK.share * total;
}

/**
 * E-mail alone names a unit only when this many people of the organisation left it at the range's
 * units (an IPv4 /24, an IPv6 /48; people seen moving not counted), unless the unit's PTR name
 * marks a business line (the business_line evidence: static, biz, business). Any other line may
 * be a household's: a home worker's business address, or the previous subscriber's on a
 * reassigned address, is one person of a company, and so is one guest's form at a host without a
 * PTR name; on IPv6 a household's /56 and its LAN's /64, whose hosts change their privacy
 * addresses daily, likewise hold one person. An office, even a small one, shows two colleagues;
 * a line its operator sells and names as a business line is one.
 */
export const EMAIL_PEOPLE = 2;

/** The widest prefix an identity backed by e-mail may span (by PTR names: the whole range). */
export const EMAIL_PREFIX_LENGTH: Record<IpVersion, number> = { 4: 29, 6: 56 };

export type EvidenceKind = "form_email" | "reverse_dns" | "dynamic_line" | "free_mail" | "business_line";
export type EvidenceSource = "reverse_dns" | "form_email";
export type Guard = "shared" | "dynamic_line" | "dynamic_range" | "moving_person" | "network_type";

export interface Evidence {
  unit: string;
  kind: EvidenceKind;
  /** The organisation's registrable domain ('' for dynamic_line). */
  domain: string;
  /** The keyed hash of a person's e-mail address ('' for reverse DNS). */
  contributor: string;
  firstSeenAt: Date;
  lastSeenAt: Date;
}

/** The facts of a range's recomputation that reach beyond it. */
export interface RangeFacts {
  version: IpVersion;
  /** Domains that are network operators' own: they name no organisation (PTR or e-mail). */
  operatorDomains: ReadonlySet<string>;
  /** People (contributors) whose e-mail evidence lies at two or more units within the window. */
  movingPeople: ReadonlySet<string>;
  /**
   * PTR domains every account's evidence in any range shows to be hosts' (HOST_TENANTS, or
   * CONSUMERS, counted over every unit bearing the domain): a coworking space's IPv4 gateway and
   * its IPv6 site carry one brand, and forms seen at either, on any partner's website, tell what
   * it is at both. Absent: this range's evidence only.
   */
  hostDomains?: ReadonlySet<string>;
  /**
   * PTR domains borne by an address used around the clock (AROUND_THE_CLOCK, any account's
   * traffic, any range): a host's, unless a form of the range names it. Absent: none.
   */
  aroundTheClock?: ReadonlySet<string>;
  /** Units marked as business lines (business_line) used around the clock (AROUND_THE_CLOCK): hosts' lines. Absent: none. */
  linesAroundTheClock?: ReadonlySet<string>;
  /**
   * Unit -> the organisations other accounts' forms name there within the window (their visitors
   * on other partners' websites): namedElsewhere. Absent: this account's evidence only.
   */
  otherOrganizations?: ReadonlyMap<string, ReadonlySet<string>>;
  /** How long evidence counts after it was last seen. */
  windowMs: number;
}

/** What the evidence says of a unit or prefix (a NetworkIdentity row). */
export interface IdentityRow {
  prefix: string;
  organizationDomain: string | null;
  organizationName: string | null;
  source: EvidenceSource | null;
  confidence: number;
  guard: Guard | null;
  shared: boolean;
  reverseDns: number;
  formEmail: number;
  organizations: number;
  firstSeenAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
}

/** Whether the row names an organisation with enough confidence to attribute visits. */
export const attributes = (row: Pick<IdentityRow, "organizationDomain" | "confidence" | "guard">): boolean =>
  row.organizationDomain !== null && row.guard === null && row.confidence >= ATTRIBUTION_THRESHOLD;

/** The name an identity shows for a domain: the curated organisation's, else the domain itself. */
export const nameOfDomain = (domain: string): string => knownOrganizationOfDomain(domain)?.name ?? domain;

const latest = (rows: readonly Evidence[]) => new Date(Math.max(...rows.map((r) => r.lastSeenAt.getTime())));
const earliest = (rows: readonly Evidence[]) => new Date(Math.min(...rows.map((r) => r.firstSeenAt.getTime())));

const DAY_MS = 86_400_000;

/** Days between the first and the last sighting of these rows. */
const spanDays = (rows: readonly Evidence[]) => (rows.length ? (latest(rows).getTime() - earliest(rows).getTime()) / DAY_MS : 0);

/** The evidence of one unit, read for its decision. */
interface UnitEvidence {
  unit: string;
  rows: Evidence[];
  ptrDomains: Set<string>;
  /** A host's PTR domain names the unit (HOST_TENANTS): it names nobody. */
  hosted: boolean;
  /** domain -> its people */
  emailPeople: Map<string, Set<string>>;
  /** People who gave a free-mail address at the unit. */
  consumers: Set<string>;
  dynamicLine: boolean;
  /** The unit's PTR name marks a business line (EMAIL_PEOPLE), and it is not used around the clock. */
  businessLine: boolean;
}

function unitEvidence(unit: string, rows: Evidence[], hosts: ReadonlySet<string> = new Set(), linesAroundTheClock: ReadonlySet<string> = new Set()): UnitEvidence {
  const businessLine = rows.some((r) => r.kind === "business_line");
  // a business line used around the clock: a hotel's, whose guests share it (AROUND_THE_CLOCK)
  const hostsGuests = businessLine && linesAroundTheClock.has(unit);
  const emailPeople = new Map<string, Set<string>>();
  for (const row of rows.filter((r) => r.kind === "form_email")) emailPeople.set(row.domain, (emailPeople.get(row.domain) ?? new Set()).add(row.contributor));
  const ptrDomains = new Set(rows.filter((r) => r.kind === "reverse_dns").map((r) => r.domain));
  return {
    unit,
    rows,
    ptrDomains: new Set([...ptrDomains].filter((d) => !hosts.has(d))),
    hosted: hostsGuests || [...ptrDomains].some((d) => hosts.has(d)),
    consumers: new Set(rows.filter((r) => r.kind === "free_mail").map((r) => r.contributor)),
    emailPeople,
    dynamicLine: rows.some((r) => r.kind === "dynamic_line"),
    businessLine: businessLine && !hostsGuests,
  };
}

/**
 * The PTR domains of the range that are hosts' or providers': forms at their units, in one unit or
 * spread over several (a host's several gateway addresses, an operator naming each customer's
 * line after itself), never name the domain, and name other organisations (HOST_TENANTS of them
 * or more) or come from CONSUMERS people or more with free-mail addresses. Such a name is no
 * organisation's; a line carrying it may be shared by its tenants or guests.
 */
function hostDomains(units: readonly UnitEvidence[]): Set<string> {
  const seen = new Map<string, { organizations: Set<string>; consumers: Set<string> }>();
  for (const u of units) {
    for (const domain of u.ptrDomains) {
      const at = seen.get(domain) ?? { organizations: new Set(), consumers: new Set() };
      for (const organization of u.emailPeople.keys()) at.organizations.add(organization);
      for (const person of u.consumers) at.consumers.add(person);
      seen.set(domain, at);
    }
  }
  const isHost = (domain: string, { organizations, consumers }: { organizations: Set<string>; consumers: Set<string> }) =>
    !organizations.has(domain) && (organizations.size >= HOST_TENANTS || consumers.size >= CONSUMERS);
  return new Set([...seen].filter(([domain, at]) => isHost(domain, at)).map(([domain]) => domain));
}

/** Organisations that e-mail at units without a PTR domain names (the dynamic-range rule). */
function emailOnlyOrganizations(units: readonly UnitEvidence[]): number {
  return new Set(units.filter((u) => u.ptrDomains.size === 0).flatMap((u) => [...u.emailPeople.keys()])).size;
}

/**
 * Whether other accounts' forms name another organisation at a unit this account names by e-mail
 * alone: a unit's organisations are then counted over every account's forms, and such a line is
 * shared (a host's business line whose tenants fill in forms on different partners' websites, one
 * or two on each) as it is when one account's forms name both. Like a host's or an operator's
 * domain, the fact only takes a name away, never gives one: other accounts' forms name nothing
 * here. A unit named by the organisation's own PTR name keeps it: a company's gateway where a
 * visitor (a consultant on its guest Wi-Fi) typed their own employer's address on some partner's
 * website is still the company's, and a host's brand is learned across accounts by its domain
 * (hostDomains). The service's traffic over all partners grows with their number; the forms of
 * all of them taking away what one office's own name says would grow with it.
 */
function namedElsewhere(u: UnitEvidence, named: ReadonlySet<string>, facts: RangeFacts): boolean {
  const elsewhere = facts.otherOrganizations?.get(u.unit);
  const [domain] = named;
  if (named.size !== 1 || !elsewhere || u.ptrDomains.has(domain!)) return false;
  return [...elsewhere].some((other) => other !== domain && !facts.operatorDomains.has(other) && !isOperatorDomain(other));
}

/** The unit's row: one organisation named, by which evidence and how surely, or why none. */
function unitRow(u: UnitEvidence, dynamicRange: boolean, facts: RangeFacts, rangePeople: ReadonlyMap<string, ReadonlySet<string>>): IdentityRow {
  const named = new Set([...u.ptrDomains, ...u.emailPeople.keys()]);
  const people = new Set([...u.emailPeople.values()].flatMap((p) => [...p]));
  const base = {
    prefix: u.unit,
    reverseDns: u.ptrDomains.size,
    formEmail: people.size,
    organizations: named.size,
    firstSeenAt: earliest(u.rows),
    lastSeenAt: latest(u.rows),
    expiresAt: new Date(latest(u.rows).getTime() + facts.windowMs),
  };
  const none = { ...base, organizationDomain: null, organizationName: null, source: null, confidence: 0 };
  if (named.size >= 2 || namedElsewhere(u, named, facts)) return { ...none, guard: "shared", shared: true };
  const [domain] = named;
  // a host's gateway with no other evidence: its tenants' or guests' line, say so
  if (domain === undefined) return { ...none, guard: u.dynamicLine ? "dynamic_line" : u.hosted ? "shared" : null, shared: u.hosted };
  // more people with free-mail than with business addresses (two at least): a place many people share (CGNAT, a café, a hotel)
  const crowded = u.consumers.size >= CONSUMERS && u.consumers.size > people.size;
  if (crowded && !u.ptrDomains.has(domain)) return { ...none, guard: "shared", shared: true };
  const supporting = u.rows.filter((r) => r.domain === domain);
  const identity = { ...base, organizationDomain: domain, organizationName: nameOfDomain(domain), guard: null, shared: false, expiresAt: new Date(latest(supporting).getTime() + facts.windowMs) };
  if (u.ptrDomains.has(domain)) {
    return { ...identity, source: "reverse_dns", confidence: u.emailPeople.has(domain) ? CONFIDENCE.reverseDnsAndEmail : CONFIDENCE.reverseDns };
  }
  const settled = [...u.emailPeople.get(domain)!].filter((p) => !facts.movingPeople.has(p));
  const settledRows = supporting.filter((r) => settled.includes(r.contributor));
  // the same organisation's people over days: a static line, whatever its name reads like
  const staticLine = settled.length >= STATIC_LINE.people && spanDays(settledRows) >= STATIC_LINE.days;
  const guard: Guard | null = staticLine ? null : u.dynamicLine ? "dynamic_line" : dynamicRange ? "dynamic_range" : settled.length === 0 ? "moving_person" : null;
  if (guard) return { ...none, guard, shared: false };
  // a host's unit (a coworking space, a serviced office): every tenant's people share its line,
  // and a tenant whose people fill forms there, however often, is one of several; the unit names
  // none of them (a visitor is named by their own organisation's evidence elsewhere)
  if (u.hosted) return { ...none, guard: "shared", shared: true };
  // possibly a household's line (a home worker, a reassigned line's previous subscriber, an IPv6 LAN): one person of a company is no office
  if (!u.businessLine && (rangePeople.get(domain)?.size ?? 0) < EMAIL_PEOPLE) return { ...none, guard: null, shared: false };
  return { ...identity, source: "form_email", confidence: settled.length >= 2 ? CONFIDENCE.emailOfSeveralPeople : CONFIDENCE.emailOfOnePerson };
}

/**
 * The prefix rows: the units attributed to one organisation (two or more) give it the smallest
 * prefix holding them, unless another unit with evidence in that prefix says otherwise (another
 * organisation, shared, a dynamic line, a guard), or the prefix is wider than e-mail may span
 * (EMAIL_PREFIX_LENGTH) while one of the units has no PTR name of the organisation. Its confidence
 * and source are its weakest unit's; it lapses with its first unit.
 */
function prefixRows(units: readonly IdentityRow[], facts: RangeFacts): IdentityRow[] {
  const byDomain = new Map<string, IdentityRow[]>();
  for (const row of units.filter(attributes)) byDomain.set(row.organizationDomain!, [...(byDomain.get(row.organizationDomain!) ?? []), row]);
  const rows: IdentityRow[] = [];
  for (const [domain, own] of byDomain) {
    if (own.length < 2) continue;
    const prefix = smallestPrefixHolding(own.map((r) => r.prefix));
    const widest = own.every((r) => r.source === "reverse_dns") ? RANGE_LENGTH[facts.version] : EMAIL_PREFIX_LENGTH[facts.version];
    if (prefixLength(prefix) < widest) continue;
    if (units.some((r) => holds(prefix, r.prefix) && (r.organizationDomain !== domain || !attributes(r)))) continue;
    const weakest = own.reduce((a, b) => (b.confidence < a.confidence ? b : a));
    rows.push({
      ...weakest,
      prefix,
      reverseDns: own.reduce((n, r) => n + r.reverseDns, 0),
      formEmail: own.reduce((n, r) => n + r.formEmail, 0),
      organizations: 1,
      firstSeenAt: new Date(Math.min(...own.map((r) => r.firstSeenAt.getTime()))),
      lastSeenAt: new Date(Math.max(...own.map((r) => r.lastSeenAt.getTime()))),
      expiresAt: new Date(Math.min(...own.map((r) => r.expiresAt.getTime()))),
    });
  }
  return rows;
}

/** PTR domains that say they are hosts' (curated, or a host's or hospitality word in the name) and that no form of the range names (its staff's). */
function namedHosts(evidence: readonly Evidence[], formDomains: ReadonlySet<string>): string[] {
  const ptr = new Set(evidence.filter((e) => e.kind === "reverse_dns").map((e) => e.domain));
  const label = (d: string) => d.slice(0, d.indexOf("."));
  return [...ptr].filter((d) => !formDomains.has(d) && (isHostDomain(d) || HOST_WORD.test(label(d)) || HOSPITALITY_WORD.test(label(d))));
}

/**
 * The identity rows of a range from its evidence within the window: one per unit with evidence,
 * then one per prefix its evidence spans. Evidence naming an operator's domain (learned, or curated
 * in operator-domains.json) names nothing.
 */
export function identitiesOfRange(evidence: readonly Evidence[], facts: RangeFacts): IdentityRow[] {
  const formDomains = new Set(evidence.filter((e) => e.kind === "form_email").map((e) => e.domain));
  const counted = evidence.filter(
    (e) =>
      e.kind === "dynamic_line" ||
      e.kind === "business_line" ||
      !(facts.operatorDomains.has(e.domain) || isOperatorDomain(e.domain) || (e.kind === "reverse_dns" && isBusinessBrand(e.domain))),
  );
  const byUnit = new Map<string, Evidence[]>();
  for (const row of counted) byUnit.set(row.unit, [...(byUnit.get(row.unit) ?? []), row]);
  const roundTheClock = [...(facts.aroundTheClock ?? [])].filter((d) => !formDomains.has(d));
  const hosts = new Set([...hostDomains([...byUnit].map(([unit, rows]) => unitEvidence(unit, rows))), ...(facts.hostDomains ?? []), ...namedHosts(counted, formDomains), ...roundTheClock]);
  const units = [...byUnit].map(([unit, rows]) => unitEvidence(unit, rows, hosts, facts.linesAroundTheClock));
  // a range of businesses' static lines names many organisations too: it is a pool only where
  // access lines are seen, or where as many people give free-mail addresses as business ones
  const consumers = new Set(units.flatMap((u) => [...u.consumers])).size;
  const businessPeople = new Set(units.flatMap((u) => [...u.emailPeople.values()].flatMap((p) => [...p]))).size;
  const dynamicRange = emailOnlyOrganizations(units) >= DYNAMIC_RANGE_ORGANIZATIONS && (units.some((u) => u.dynamicLine) || consumers >= businessPeople);
  const rangePeople = new Map<string, Set<string>>();
  for (const [domain, people] of units.flatMap((u) => [...u.emailPeople])) {
    rangePeople.set(domain, new Set([...(rangePeople.get(domain) ?? []), ...[...people].filter((p) => !facts.movingPeople.has(p))]));
  }
  const unitRows = units.map((u) => unitRow(u, dynamicRange, facts, rangePeople));
  return [...unitRows, ...prefixRows(unitRows, facts)];
}
