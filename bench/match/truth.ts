// The ground truth of each page view: which row of the breakdown it belongs to, the organisation
// it belongs to (business visits only), and whether the world made it knowable. Knowable: from
// the organisation's own network; from an address whose PTR name is under the organisation's own
// domain; from a network the partner declared for the organisation (when the service took the
// declarations); from a static line from which one of the organisation's people submitted a form
// with its domain at any time in the run, and no other organisation's domain was seen there.
import { isFreeMail } from "./names.ts";
import { numberOf } from "./networks.ts";
import { BUSINESS_KINDS, type Kind, type World } from "./world.ts";

export const ROWS = [
  "own AS", "declared", "static+own PTR", "static+form", "static+generic PTR", "static, no evidence", "coworking",
  "home office", "consumer dynamic", "CGNAT", "mobile", "cloud",
] as const;
export type Row = (typeof ROWS)[number];

export interface VisitTruth {
  visitId: string;
  row: Row;
  /** A business visit: of a person at their organisation's own network, static line or coworking space. */
  business: boolean;
  /** The organisation a business visit belongs to; null for the others. */
  orgId: number | null;
  knowable: boolean;
  /** Knowable, but only from evidence that came later (a form sent or a network declared after it). */
  beforeEvidence: boolean;
}

const OTHER_ROWS: Record<Exclude<Kind, "own_as" | "static" | "coworking">, Row> = {
  home_office: "home office", consumer: "consumer dynamic", cgnat: "CGNAT", mobile: "mobile", cloud: "cloud",
};

function cidrRange(cidr: string): [number, number] {
  const [address, bits] = cidr.split("/");
  const size = 2 ** (32 - Number(bits));
  const start = numberOf(address!);
  return [start, start + size - 1];
}

/** The truth of every page view of the world; `declarations`: whether the service took the partner's declared networks. */
export function groundTruth(world: World, { declarations }: { declarations: boolean }): VisitTruth[] {
  const people = world.people;
  const orgs = world.orgs;
  // the first form with a business domain at each address, per domain (the place in time of the earliest)
  const formDomains = new Map<string, Map<string, number>>();
  for (const form of world.forms) {
    if (isFreeMail(form.domain)) continue;
    const seen = formDomains.get(form.address) ?? new Map<string, number>();
    if (!seen.has(form.domain)) seen.set(form.domain, form.afterVisits);
    formDomains.set(form.address, seen);
  }
  const midwayVisit = world.visits.findIndex((v) => v.day >= world.options.days / 2);
  const declared = (declarations ? world.declarations : []).map((d) => ({ ...d, range: cidrRange(d.cidr) }));

  return world.visits.map((visit, index) => {
    const person = people[visit.personId]!;
    if (!BUSINESS_KINDS.has(person.kind)) {
      return { visitId: visit.visitId, row: OTHER_ROWS[person.kind as keyof typeof OTHER_ROWS], business: false, orgId: null, knowable: false, beforeEvidence: false };
    }
    const org = orgs[person.orgId!]!;
    const base = { visitId: visit.visitId, business: true, orgId: org.id };
    if (person.kind === "own_as") return { ...base, row: "own AS", knowable: true, beforeEvidence: false };

    const ip = numberOf(visit.address);
    const declaration = declared.find((d) => d.orgId === org.id && d.range[0] <= ip && ip <= d.range[1]);
    const ownPtr = world.ptr.get(visit.address)?.endsWith(`.${org.domain}`) ?? false;
    const domains = formDomains.get(visit.address);
    const formAt = domains?.size === 1 ? domains.get(org.domain) : undefined;
    const line = world.fixedLines.get(visit.address)!;
    const knowable = !!declaration || ownPtr || formAt !== undefined;
    const declaredAt = declaration ? (declaration.when === "start" ? 0 : midwayVisit < 0 ? Infinity : midwayVisit) : Infinity;
    const evidenceAt = ownPtr ? 0 : Math.min(declaredAt, formAt ?? Infinity);
    const row: Row =
      person.kind === "coworking" ? "coworking"
      : declaration ? "declared"
      : ownPtr ? "static+own PTR"
      : formAt !== undefined ? "static+form"
      : line.ptr === "generic" ? "static+generic PTR"
      : "static, no evidence";
    return { ...base, row, knowable, beforeEvidence: knowable && index < evidenceAt };
  });
}
