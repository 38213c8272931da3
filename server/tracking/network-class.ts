// Which kind of network an autonomous system is. The rule (also in spec/openapi.yaml and the
// README), first match wins:
//   1. no AS holds the address (private, reserved, unrouted)        -> unknown
//   2. the AS is on a curated list below (big clouds/CDNs, ISPs, carriers, research networks)
//   3. the AS organisation's name contains a keyword, checked in the order
//      mobile, hosting, education, isp (KEYWORDS below)
//   4. any other named AS                                              -> business
// Only business and education networks become organisation leads. The rule errs towards
// dropping: a business whose name reads like a telecom is lost rather than an ISP's subscriber
// being shown as a company.
export type NetworkType = "business" | "isp" | "hosting" | "mobile" | "education" | "unknown";

export const NETWORK_TYPES: readonly NetworkType[] = ["business", "isp", "hosting", "mobile", "education", "unknown"];

/** Types whose visits become leads; the others are counted and dropped. */
export const LEAD_NETWORKS: ReadonlySet<NetworkType> = new Set(["business", "education"]);

/** Curated ASNs (names as in the data set). */
export const CURATED_ASNS: Record<Exclude<NetworkType, "business" | "unknown">, readonly number[]> = {
  // Clouds, CDNs and hosters: Amazon, Google, Microsoft, DigitalOcean, OVH, Hetzner, Akamai/Linode,
  // Cloudflare, Vultr, Alibaba, Oracle, IBM Cloud, Leaseweb, Contabo, Scaleway, Fastly, Tencent,
  // Hostinger, GoDaddy, Rackspace, M247, QuadraNet, Hivelocity, Datacamp.
  hosting: [
    16509, 14618, 396982, 15169, 8075, 14061, 16276, 24940, 63949, 13335, 20473, 45102, 31898, 36351, 60781, 51167, 12876, 54113,
    20940, 16625, 132203, 47583, 26496, 19994, 9009, 8100, 29802, 212238,
  ],
  // Residential and transit ISPs: Comcast, AT&T, Verizon, Charter, Cox, Deutsche Telekom, Vodafone DE,
  // Orange, BT, Telefonica ES/DE/BR, KPN, Vodafone NL, Free, SFR, Virgin Media, Sky, CenturyLink,
  // Telia, Swisscom, Telstra, China Telecom/Unicom, KT, NTT, Rostelecom, Airtel, 1&1, TIM, Proximus,
  // Liberty Global, Ukrtelecom, Uninet, Claro, TPG, Optus, SoftBank, KDDI, Cogent, Lumen/Level 3,
  // Hurricane Electric, Arelion, Tata, Zayo.
  isp: [
    7922, 7018, 701, 20115, 22773, 3320, 3209, 3215, 2856, 3352, 1136, 33915, 12322, 15557, 5089, 5607, 209, 3301, 3303, 1221, 4134,
    4837, 4766, 4713, 12389, 9498, 24560, 6805, 8881, 3269, 5432, 6830, 6849, 8151, 28573, 18881, 26599, 7545, 4804, 17676, 2516,
    10796, 11427, 12271, 20001, 11426, 33363, 7843, 1239, 3561, 174, 6939, 3356, 1299, 2914, 6453, 6461,
  ],
  // Mobile carriers: T-Mobile US, Verizon Wireless (Cellco), AT&T Mobility, Jio, China Mobile,
  // Airtel mobile, Vodafone Idea, Vodafone IT/ES.
  mobile: [21928, 6167, 22394, 20057, 55836, 9808, 56040, 56041, 45609, 38266, 30722, 12430],
  // Universities and research-and-education networks: MIT, UT Austin, UC Berkeley, Stanford,
  // DFN, Jisc, Renater, Internet2, NII.
  education: [3, 18, 25, 32, 680, 786, 2200, 11537, 2907],
};

/** Keywords of AS organisation names (case-insensitive, whole words), in the order they are tried. */
export const KEYWORDS: readonly [NetworkType, RegExp][] = [
  ["mobile", /\b(mobile|mobil|mobility|wireless|cellular|cellco|gsm|lte)\b/i],
  ["hosting", /\b(hosting|hoster|host|cloud|data ?cent(er|re)s?|datacent(er|re)s?|servers?|vps|colo|colocation|cdn|dedicated|vpn)\b/i],
  ["education", /\b(universit(y|ies|é|e|a|at|aet|ät|ario|ad|ade)|college|school|academy|polytechnic|hochschule|education(al)?|academic|research network|edu)\b/i],
  ["isp", /\b(telecom|telekom|telecommunications?|telecomunica\w*|telefonica|telco|broadband|cable|communications?|isp|internet|dsl|fib(er|re)|networks?|telephone|telephony|carrier|backbone|transit)\b/i],
];

const curated = new Map<number, NetworkType>(
  Object.entries(CURATED_ASNS).flatMap(([type, asns]) => asns.map((asn) => [asn, type as NetworkType] as const)),
);

export function classifyNetwork(as: { asn: number; name: string } | undefined): NetworkType {
  if (!as) return "unknown";
  const listed = curated.get(as.asn);
  if (listed) return listed;
  return KEYWORDS.find(([, pattern]) => pattern.test(as.name))?.[0] ?? "business";
}
