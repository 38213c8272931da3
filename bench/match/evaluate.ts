// The arithmetic of the figures: the leads and visits read back from the partner API against the
// ground truth of every page view sent. Pure: no service, no I/O (test/bench-match.test.ts).
import type { Organisation } from "./world.ts";
import { ROWS, type Row, type VisitTruth } from "./truth.ts";

/** A lead as read back, with the URLs of its visits (every page of GET /v1/leads/{leadId}/visits). */
export interface LeadReadBack {
  leadId: string;
  /** A string in the contract; null tolerated, so that a service answering null is measured rather than crashing the run. */
  organizationName: string | null;
  organizationDomain: string | null;
  /** How the service recognised the lead's organisation (LeadDTO.identitySource): printed with the wrong attributions. */
  identitySource?: string;
  visitUrls: string[];
}

export interface Tally {
  visits: number;
  /** Attributed to any organisation (listed among some lead's visits). */
  attributed: number;
  /** Attributed to the organisation the visit belongs to. */
  right: number;
  knowable: number;
  knowableRight: number;
  /** Knowable only from evidence that came later, and attributed to the right organisation all the same. */
  beforeEvidence: number;
  beforeEvidenceRight: number;
}

export interface Ratio {
  numerator: number;
  denominator: number;
}

export interface Evaluation {
  rows: Record<Row, Tally>;
  business: Tally;
  /** Home office, consumers, CGNAT, mobile and cloud: never to be attributed. */
  other: Tally;
  figures: { matchRate: Ratio; precision: Ratio; leak: Ratio; knowableMatch: Ratio };
  /** Wrong attributions by row and lead, most first: `row -> lead name (domain)`. */
  wrong: [string, number][];
  /** Of the wrong attributions, those at look-alike hosts (truth.ts): no stored evidence tells them from an office. */
  wrongAtLookalikeHosts: number;
  /** Wrong counts: a visit read back that was never sent or was read twice, more attributed than sent. */
  problems: string[];
}

export const TARGETS = { precision: 0.97, leak: 0.005, knowableMatch: 0.9 } as const;

const emptyTally = (): Tally => ({ visits: 0, attributed: 0, right: 0, knowable: 0, knowableRight: 0, beforeEvidence: 0, beforeEvidenceRight: 0 });
const normalName = (name: string | null) => (name ?? "").trim().toLowerCase();
const normalDomain = (domain: string) => domain.trim().toLowerCase().replace(/\.$/, "");

/** Whether the lead names the organisation: one of its names, or one of its domains. */
export function namesOrganisation(lead: Pick<LeadReadBack, "organizationName" | "organizationDomain">, org: Organisation): boolean {
  if (org.names.some((n) => normalName(n) === normalName(lead.organizationName))) return true;
  return !!lead.organizationDomain && org.domains.some((d) => normalDomain(d) === normalDomain(lead.organizationDomain!));
}

/** The `bv` parameter of a visit's URL, or undefined when it has none. */
function visitIdOf(url: string): string | undefined {
  try {
    return new URL(url).searchParams.get("bv") ?? undefined;
  } catch {
    return undefined;
  }
}

export const ratio = ({ numerator, denominator }: Ratio) => (denominator ? numerator / denominator : undefined);

/** The headline's visits: none from a network the partner declared. */
export const undeclared = (t: VisitTruth) => !t.declared;
export const declared = (t: VisitTruth) => t.declared;

/**
 * The figures over the visits `inScope` keeps (every visit by default); the wrong counts over all
 * visits read back, whatever the scope.
 */
export function evaluate(truths: readonly VisitTruth[], orgs: readonly Organisation[], leads: readonly LeadReadBack[], inScope: (t: VisitTruth) => boolean = () => true): Evaluation {
  const byId = new Map(truths.map((t) => [t.visitId, t] as const));
  const rows = Object.fromEntries(ROWS.map((r) => [r, emptyTally()])) as Record<Row, Tally>;
  const business = emptyTally();
  const other = emptyTally();
  const problems: string[] = [];
  const unknown: string[] = [];
  const readBy = new Map<string, string>();
  const wrong = new Map<string, number>();
  let wrongAtLookalikeHosts = 0;
  let attributedTotal = 0;

  const tallies = (t: VisitTruth) => [rows[t.row], t.business ? business : other];
  for (const t of truths) {
    if (!inScope(t)) continue;
    for (const tally of tallies(t)) {
      tally.visits += 1;
      if (t.knowable) tally.knowable += 1;
      if (t.beforeEvidence) tally.beforeEvidence += 1;
    }
  }
  for (const lead of leads) {
    for (const url of lead.visitUrls) {
      attributedTotal += 1;
      const id = visitIdOf(url);
      const truth = id === undefined ? undefined : byId.get(id);
      if (!truth) {
        unknown.push(url);
        continue;
      }
      const earlier = readBy.get(truth.visitId);
      if (earlier !== undefined) {
        problems.push(`visit ${truth.visitId} read twice: in lead ${earlier} and in lead ${lead.leadId}`);
        continue;
      }
      readBy.set(truth.visitId, lead.leadId);
      if (!inScope(truth)) continue;
      const right = truth.orgId !== null && namesOrganisation(lead, orgs[truth.orgId]!);
      for (const tally of tallies(truth)) {
        tally.attributed += 1;
        if (right) tally.right += 1;
        if (right && truth.knowable) tally.knowableRight += 1;
        if (right && truth.beforeEvidence) tally.beforeEvidenceRight += 1;
      }
      if (!right) {
        const key = `${truth.row} -> ${lead.organizationName} (${lead.organizationDomain ?? "no domain"}${lead.identitySource ? `, ${lead.identitySource}` : ""})`;
        wrong.set(key, (wrong.get(key) ?? 0) + 1);
        if (truth.lookalikeHost) wrongAtLookalikeHosts += 1;
      }
    }
  }
  if (unknown.length) problems.push(`${unknown.length} visits read back were never sent, e.g. ${unknown.slice(0, 3).join(", ")}`);
  if (attributedTotal > truths.length) problems.push(`${attributedTotal} visits read back, more than the ${truths.length} sent`);

  return {
    rows,
    business,
    other,
    figures: {
      matchRate: { numerator: business.right, denominator: business.visits },
      precision: { numerator: business.right + other.right, denominator: business.attributed + other.attributed },
      leak: { numerator: other.attributed, denominator: other.visits },
      knowableMatch: { numerator: business.knowableRight, denominator: business.knowable },
    },
    wrong: [...wrong].sort(([a, m], [b, n]) => n - m || (a < b ? -1 : 1)),
    wrongAtLookalikeHosts,
    problems,
  };
}

/** Each target with its verdict; a figure without a denominator meets none. */
export function verdicts(figures: Evaluation["figures"]) {
  const precision = ratio(figures.precision);
  const leak = ratio(figures.leak);
  const knowable = ratio(figures.knowableMatch);
  return [
    { name: "precision", target: `>= ${TARGETS.precision * 100}%`, met: precision !== undefined && precision >= TARGETS.precision },
    { name: "consumer leak", target: `<= ${TARGETS.leak * 100}%`, met: leak !== undefined && leak <= TARGETS.leak },
    { name: "knowable match", target: `>= ${TARGETS.knowableMatch * 100}%`, met: knowable !== undefined && knowable >= TARGETS.knowableMatch },
  ];
}
