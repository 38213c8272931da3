// The ground truth of each page view: which row of the breakdown it belongs to, the organisation
// it belongs to (business visits only), whether the world made it knowable, and whether it came
// from a network the partner declared (those are reported on their own line, not in the headline).
//
// Knowable, from what the world shows and not from any rule of the service:
// - an organisation's own AS, or a site whose PTR names are under the organisation's own domain;
// - a network the partner declared for the organisation (when the service took the declarations),
//   from the declaration on;
// - forms with the organisation's domain from the unit (an IPv4 address, a site's IPv6 /48) when no
//   other organisation's domain was ever seen there, and the evidence is strong enough for the unit:
//   one form on a line the operator names as a business line; two people on a line that could be
//   a household's (no PTR, or a name like the operator's household lines); two people or two days
//   at a host (one network for many tenants: one form is one tenant's word, not the network's).
//
// A look-alike host: one that showed nothing but what one company's office shows (its gateway named
// under its own brand with no word saying what it is, no business form and fewer than two people
// giving private addresses at its units, or an operator's business-line name with one person's
// business form at most), on any partner's website (WorldOptions.partners). No stored evidence
// tells such a network from its company's own line; the wrong visits at it are counted apart.
import { isFreeMail, saysWhatHostIs } from "./names.ts";
import { isV6, numberOf, v6Value } from "./addresses.ts";
import { BUSINESS_KINDS, type Form, type Kind, type Naming, type Site, type World } from "./world.ts";

export const ROWS = [
  "own AS", "static, own PTR", "static, operator's name", "static, named like a household", "static, no PTR", "host tenant",
  "home worker", "household", "next subscriber", "host guest", "CGNAT", "mobile", "cloud",
] as const;
export type Row = (typeof ROWS)[number];

export interface VisitTruth {
  visitId: string;
  row: Row;
  /** A business visit: of a person at their organisation's own network, static line or host. */
  business: boolean;
  /** The organisation a business visit belongs to; null for the others. */
  orgId: number | null;
  knowable: boolean;
  /** Knowable, but only from evidence that came later (a form sent or a network declared after it). */
  beforeEvidence: boolean;
  /** From inside a network the partner declared (whoever the visitor is). */
  declared: boolean;
  family: 4 | 6;
  /** At a host that looked like one company's office (see the head of this file). */
  lookalikeHost: boolean;
}

const OTHER_ROWS: Record<Exclude<Kind, "own_as" | "static" | "tenant">, Row> = {
  home_worker: "home worker", household: "household", next_subscriber: "next subscriber", guest: "host guest", cgnat: "CGNAT", mobile: "mobile", cloud: "cloud",
};
const STATIC_ROWS: Record<Naming, Row> = {
  own: "static, own PTR", operator: "static, operator's name", "access-like": "static, named like a household", none: "static, no PTR", host: "host tenant",
};

/** How much repeated evidence a unit needs before its forms make it knowable. */
type Strength = "one form" | "two people" | "two people or days";

function strengthOf(kind: "own_as" | "static" | "host", naming: Naming): Strength {
  if (kind === "host") return "two people or days";
  return naming === "operator" || naming === "own" ? "one form" : "two people";
}

/** The place in time (visits before it) at which the unit's forms name `domain` strongly enough; Infinity: never. */
function formEvidenceAt(forms: readonly Form[], domain: string, strength: Strength): number {
  const people = new Set<number>();
  const days = new Set<number>();
  for (const form of forms) {
    if (form.domain !== domain) continue;
    people.add(form.personId);
    days.add(form.day);
    const enough = strength === "one form" || people.size >= 2 || (strength === "two people or days" && days.size >= 2);
    if (enough) return form.afterVisits;
  }
  return Infinity;
}

/** Whether a host showed only what one company's office shows, from the people who sent business forms and free-mail ones at its units. */
function looksLikeAnOffice(site: Site, formPeople: number, privatePeople: number): boolean {
  if (site.kind !== "host") return false;
  if (site.naming === "host") return formPeople === 0 && privatePeople < 2 && !saysWhatHostIs(site.domain ?? "");
  return site.naming === "operator" && formPeople <= 1;
}

/**
 * Site id -> the people who sent forms at its units, with a free-mail address or (`free` false) an
 * organisation's, on any partner's website: the service learns a host from every account's forms.
 */
function formPeopleBySite(world: World, free: boolean): Map<number, Set<number>> {
  const people = new Map<number, Set<number>>();
  const allForms = [world.forms, ...world.others.map((o) => o.forms)].flat();
  for (const form of allForms.filter((f) => isFreeMail(f.domain) === free)) {
    const siteId = world.unitSite.get(form.unit);
    if (siteId !== undefined) people.set(siteId, (people.get(siteId) ?? new Set()).add(form.personId));
  }
  return people;
}

/** The sites that are look-alike hosts, by id. */
function lookalikeHosts(world: World): Set<number> {
  const [business, privately] = [formPeopleBySite(world, false), formPeopleBySite(world, true)];
  return new Set(world.sites.filter((s) => looksLikeAnOffice(s, business.get(s.id)?.size ?? 0, privately.get(s.id)?.size ?? 0)).map((s) => s.id));
}

/** CIDR -> [first, last] as numbers (IPv4) or bigints (IPv6). */
function inCidr(cidr: string, address: string): boolean {
  const [base, bitsText] = cidr.split("/") as [string, string];
  if (isV6(base) !== isV6(address)) return false;
  const hostBits = (isV6(base) ? 128 : 32) - Number(bitsText);
  if (isV6(base)) return v6Value(address) >> BigInt(hostBits) === v6Value(base) >> BigInt(hostBits);
  return Math.floor(numberOf(address) / 2 ** hostBits) === Math.floor(numberOf(base) / 2 ** hostBits);
}

/** The truth of every page view of the world; `declarations`: whether the service took the partner's declared networks. */
export function groundTruth(world: World, { declarations }: { declarations: boolean }): VisitTruth[] {
  const { people, orgs } = world;
  // business forms by unit, in time order
  const formsAt = new Map<string, Form[]>();
  for (const form of world.forms) if (!isFreeMail(form.domain)) formsAt.set(form.unit, [...(formsAt.get(form.unit) ?? []), form]);
  const midwayVisit = world.visits.findIndex((v) => v.day >= world.options.days / 2);
  const declaredAt = (when: "start" | "midway") => (!declarations ? Infinity : when === "start" ? 0 : midwayVisit < 0 ? Infinity : midwayVisit);
  const lookalikes = lookalikeHosts(world);

  return world.visits.map((visit, index) => {
    const person = people[visit.personId]!;
    const declaration = world.declarations.find((d) => inCidr(d.cidr, visit.address));
    const siteId = world.unitSite.get(visit.unit);
    const base = { visitId: visit.visitId, declared: !!declaration, family: visit.family, lookalikeHost: siteId !== undefined && lookalikes.has(siteId) };
    if (!BUSINESS_KINDS.has(person.kind)) {
      return { ...base, row: OTHER_ROWS[person.kind as keyof typeof OTHER_ROWS], business: false, orgId: null, knowable: false, beforeEvidence: false };
    }
    const org = orgs[person.orgId!]!;
    if (person.kind === "own_as") return { ...base, row: "own AS" as Row, business: true, orgId: org.id, knowable: true, beforeEvidence: false };
    const site = world.sites[world.unitSite.get(visit.unit)!]!;
    const forms = formsAt.get(visit.unit) ?? [];
    const onlyThisOrg = forms.every((f) => f.domain === org.domain);
    const fromForms = onlyThisOrg ? formEvidenceAt(forms, org.domain, strengthOf(site.kind, site.naming)) : Infinity;
    const fromPtr = site.naming === "own" ? 0 : Infinity;
    const fromDeclaration = declaration?.orgId === org.id ? declaredAt(declaration.when) : Infinity;
    const evidenceAt = Math.min(fromForms, fromPtr, fromDeclaration);
    const knowable = evidenceAt !== Infinity;
    const row = site.kind === "host" ? "host tenant" : STATIC_ROWS[site.naming];
    return { ...base, row, business: true, orgId: org.id, knowable, beforeEvidence: knowable && index < evidenceAt };
  });
}
