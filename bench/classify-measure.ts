// The figures of bench/classify.ts, shared with its test (test/network-classification.test.ts).
import { classifyNetwork, type NetworkType, type NetworkTypeSource } from "../server/tracking/network-class.ts";
import type { Resolver } from "../server/tracking/resolver.ts";

export interface LabelledNetwork {
  asn: number;
  name: string;
  class: Exclude<NetworkType, "unknown">;
  source: string;
  split: "tuning" | "holdout";
}

export interface Measurement {
  count: number;
  perClass: Record<string, { precision: number; recall: number; count: number }>;
  /** ISP, hosting and mobile ASNs typed business: they would become company leads. */
  operatorsAsBusiness: number;
  /** Businesses typed anything but business or education: their visits are dropped. */
  businessesDropped: number;
  sources: Partial<Record<NetworkTypeSource, number>>;
  misses: { asn: number; name: string; label: string; got: NetworkType; evidence: unknown }[];
}

/** At most this share of operators typed business and of businesses dropped. */
export const TARGET = 0.03;

const OPERATORS = new Set<NetworkType>(["isp", "hosting", "mobile"]);
const share = (part: number, whole: number) => (whole ? part / whole : 0);

export function measure(set: readonly LabelledNetwork[], resolver: Resolver): Measurement {
  const results = set.map((entry) => {
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
    operatorsAsBusiness: share(operators.filter((r) => r.got.type === "business").length, operators.length),
    businessesDropped: share(businesses.filter((r) => r.got.type !== "business" && r.got.type !== "education").length, businesses.length),
    sources,
    misses: results
      .filter((r) => r.got.type !== r.entry.class)
      .map((r) => ({ asn: r.entry.asn, name: r.entry.name, label: r.entry.class, got: r.got.type, evidence: r.evidence })),
  };
}
