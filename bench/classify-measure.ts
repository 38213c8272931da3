// The figures of bench/classify.ts, shared with its test (test/network-classification.test.ts).
import { classifyNetwork, LEAD_NETWORKS, type NetworkClass, type NetworkType, type NetworkTypeSource } from "../server/tracking/ipdata/network-class.ts";
import type { NetworkEvidence } from "../server/tracking/ipdata/network-evidence.ts";
import type { Resolver } from "../server/tracking/ipdata/resolver.ts";

export interface LabelledNetwork {
  asn: number;
  name: string;
  class: Exclude<NetworkType, "unknown">;
  source: string;
  /** `holdout-draw`: ISP, hosting and mobile ASNs of a random draw, labelled before the round of
   * changes it measures and measured once after it. */
  split: "tuning" | "holdout" | "holdout-draw";
  /** Was in a holdout that was measured and then tuned on: the first (measured twice, 2026-11-25),
   * the second (measured once, 2026-11-26), or (3) the first random draw of operators (measured
   * once after the government type, 2026-11-28) and J:COM's AS18136 of the third, whose operator was
   * curated in the round after. */
  formerHoldout?: 1 | 2 | 3;
}

export interface Measurement {
  count: number;
  perClass: Record<string, { precision: number; recall: number; count: number }>;
  /** ISP, hosting and mobile ASNs typed as an organisation's own network (business, government or
   * education): their visitors would become that organisation's leads. */
  operatorsAsLeads: number;
  /** Businesses typed as anything but an organisation's own network: their visits wait, unlisted. */
  businessesDropped: number;
  /** The same two shares with each ASN weighted by its announced IPv4 addresses (the issue's
   * target speaks of addresses: a visitor is an address, and big networks send more of them). */
  byAddress: { operatorsAsLeads: number; businessesDropped: number };
  sources: Partial<Record<NetworkTypeSource, number>>;
  misses: { asn: number; name: string; label: string; got: NetworkType; evidence: unknown }[];
}

/** At most this share of operators typed as leads and of businesses dropped. */
export const TARGET = 0.03;

/** The target: "at most 3% of ISP, hosting and mobile addresses typed business, at most 3%
 * of businesses dropped": the operators weighted by their IPv4 addresses, the businesses counted
 * one by one (per ASN). The per-ASN operator share is printed too, but is not the target. Since the
 * government type (2026-11-28), an operator typed government or education counts as one typed
 * business: its visitors would become leads all the same. */
export const withinTarget = (m: Measurement) => m.byAddress.operatorsAsLeads <= TARGET && m.businessesDropped <= TARGET;

const OPERATORS = new Set<NetworkType>(["isp", "hosting", "mobile"]);
const share = (part: number, whole: number) => (whole ? part / whole : 0);

interface Result {
  entry: LabelledNetwork;
  evidence: NetworkEvidence | undefined;
  got: NetworkClass;
}

const isLead = (type: NetworkType) => LEAD_NETWORKS.has(type);
const isDropped = (type: NetworkType) => !LEAD_NETWORKS.has(type);

/** The share of `results` typed as `wrong` says, counted once per ASN or weighted by IPv4 addresses. */
function wrongShare(results: readonly Result[], wrong: (type: NetworkType) => boolean, weight: (r: Result) => number): number {
  const total = results.reduce((sum, r) => sum + weight(r), 0);
  return share(results.filter((r) => wrong(r.got.type)).reduce((sum, r) => sum + weight(r), 0), total);
}
const perAsn = () => 1;
const perAddress = (r: Result) => r.evidence?.ipv4 ?? 0;

export function measure(set: readonly LabelledNetwork[], resolver: Resolver): Measurement {
  const results: Result[] = set.map((entry) => {
    const name = resolver.asns.nameOf(entry.asn) ?? entry.name;
    const evidence = resolver.evidenceOf(entry.asn);
    return { entry, evidence, got: classifyNetwork({ asn: entry.asn, name }, evidence) };
  });
  const types = [...new Set(set.map((e) => e.class))];
  const perClass = Object.fromEntries(
    types.map((type) => {
      const labelled = results.filter((r) => r.entry.class === type);
      const typed = results.filter((r) => r.got.type === type);
      const hits = labelled.filter((r) => r.got.type === type).length;
      return [type, { precision: share(hits, typed.length), recall: share(hits, labelled.length), count: labelled.length }];
    }),
  );
  const operators = results.filter((r) => OPERATORS.has(r.entry.class));
  const businesses = results.filter((r) => r.entry.class === "business");
  const sources: Measurement["sources"] = {};
  for (const r of results) sources[r.got.source] = (sources[r.got.source] ?? 0) + 1;
  return {
    count: set.length,
    perClass,
    operatorsAsLeads: wrongShare(operators, isLead, perAsn),
    businessesDropped: wrongShare(businesses, isDropped, perAsn),
    byAddress: { operatorsAsLeads: wrongShare(operators, isLead, perAddress), businessesDropped: wrongShare(businesses, isDropped, perAddress) },
    sources,
    misses: results
      .filter((r) => r.got.type !== r.entry.class)
      .map((r) => ({ asn: r.entry.asn, name: r.entry.name, label: r.entry.class, got: r.got.type, evidence: r.evidence })),
  };
}
