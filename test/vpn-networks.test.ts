// VPN operators' networks: their own ASes carried every VPN user's visit as a lead named after the
// VPN ("Proton AG", "PacketHub S.A." for NordVPN, "31173 Services AB" for Mullvad), typed
// `business`; and some hosters whose space VPNs rent were typed `business` or `isp`, as were
// Zscaler's proxies, whose egress carries many companies' employees ("ZSCALER, INC." leads), the
// other cloud security proxies, in-flight Wi-Fi, and venues whose networks carry their tenants,
// attendees or guests (Regus, convention centres, hotels with an AS of their own). Both are
// curated as `hosting` in server/tracking/ipdata/curated-networks.json: their visitors are the
// VPN's or the hoster's customers, not the operator's people. Checked here through the resolver
// against the shipped ASN data, and against the holdouts of bench/classify-set.json.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { LabelledNetwork } from "../bench/classify-measure.ts";
import { classifyNetwork, CURATED_NETWORKS, LEAD_NETWORKS, type NetworkClass, organisationKey } from "../server/tracking/ipdata/network-class.ts";
import { sharedResolver } from "../server/tracking/ipdata/resolver.ts";

/** Curated networks: the operator, the AS name in the data, its ASNs, and their type when not hosting. */
type CuratedList = readonly (readonly [string, string, readonly number[], ("hosting" | "isp")?])[];

/** VPN operators. */
const VPN_OPERATORS: CuratedList = [
  ["NordVPN", "PacketHub S.A.", [141039, 207137]],
  ["NordVPN", "PACKETHUB S.A.", [272096]],
  ["Proton VPN", "Proton AG", [62371, 199218, 208172, 209103]],
  ["Mullvad VPN", "31173 Services AB", [39351, 49399, 214813]],
  ["Mullvad VPN", "Mullvad VPN AB", [216025]],
  ["Windscribe", "Windscribe", [397540]],
  ["IVPN", "IVPN Limited", [203619]],
];

/** Hosters VPNs rent from, and a security proxy's egress (many companies' employees at one
 * address), that the rule typed `business` or `isp`. */
const HOSTERS: CuratedList = [
  ["Leaseweb", "LeaseWeb Network B.V.", [16265, 38930]],
  ["Leaseweb", "LeaseWeb LeaseWeb Network B.V.", [60626]],
  ["Leaseweb", "LEASEWEB HONG KONG LIMITED", [133752]],
  ["Leaseweb", "LEASEWEB AUSTRALIA PTY LIMITED", [136988]],
  ["ServerMania", "B2 Net Solutions Inc.", [55286]],
  ["IT7 Networks", "IT7 Networks Inc", [25820]],
  ["PEG TECH", "PEG TECH INC", [36137, 54600, 394432, 398478, 398823, 398993, 399195]],
  ["Clouvider", "Clouvider Limited", [34202, 202791, 202792, 206136, 206822, 207019, 207158]],
  ["Clouvider", "Clouvider, Inc.", [197331, 401881]],
  ["Clouvider", "Clouvider Europe B.V.", [214578]],
  ["Clouvider", "Clouvider-Anycast Clouvider Limited", [35545]],
  ["Performive", "Performive LLC", [22384]],
  ["tzulo", "tzulo, inc.", [11878]],
  ["HostRoyale", "HostRoyale LLC", [396931]],
  ["xTom", "xTom", [949, 6233, 23858, 36828]],
  ["xTom", "xTom GmbH", [35536, 35537, 39220, 41767, 43959, 43992, 57969, 205758, 208982]],
  ["xTom", "xTom Limited", [4785, 328383]],
  ["xTom", "xTom Hong Kong Limited", [9312]],
  ["xTom", "xTom Pty Ltd", [8888]],
  ["xTom", "xTom Pte Ltd", [202274]],
  ["xTom", "xTom OU", [3204]],
  ["Zenlayer", "Zenlayer Inc", [4229, 29752, 59798, 393502]],
  ["Zenlayer", "Zenlayer", [38854]],
  ["Zenlayer", "Zenlayer (Singapore) PTE. LTD", [139625]],
  ["Zenlayer", "ZENLAYER TECNOLOGIAS LTDA", [274778]],
  ["Zscaler", "ZSCALER, INC.", [22616, 53444, 53813, 62907]],
];

/** Security proxies and browser VPNs (hosting), in-flight and hotel Wi-Fi (isp): one address for
 * many companies' employees, passengers or guests, none of them the operator's; typed `business`. */
const SHARED_EGRESS: CuratedList = [
  ["Netskope", "Netskope Inc", [55256], "hosting"],
  ["iboss", "IBOSS Inc.", [137922], "hosting"],
  ["iboss", "IBOSS, INC", [202276], "hosting"],
  ["iboss", "iboss,inc", [396253], "hosting"],
  ["Skyhigh Security", "SKYHIGH SECURITY LLC", [14600], "hosting"],
  ["Forcepoint", "Forcepoint LLC", [13448], "hosting"],
  ["Forcepoint", "Forcepoint UK Limited", [42465, 44444], "hosting"],
  ["Forcepoint", "Forcepoint Overseas Limited", [43251], "hosting"],
  ["Cisco Umbrella", "Cisco OpenDNS, LLC", [25605], "hosting"],
  ["Menlo Security", "MENLO SECURITY, INC.", [62654], "hosting"],
  ["Cato Networks", "CATO NETWORKS LTD", [13150], "hosting"],
  ["Cato Networks", "Cato Networks, Inc.", [138627], "hosting"],
  ["Opera", "Opera Software AS", [39832], "hosting"],
  ["Opera", "Opera Software Americas LLC", [21837], "hosting"],
  ["Opera", "Opera Software International AS Sp. z o.o. Oddzial w Polsce", [198992], "hosting"],
  ["Opera", "Opera Software Technology (Beijing) Co., Ltd.", [136189], "hosting"],
  ["Gogo Business Aviation", "Gogo Business Aviation LLC", [11167], "isp"],
  ["Panasonic Avionics", "Panasonic Avionics Corporation", [394603, 64294], "isp"],
  ["Anuvu", "Anuvu Operations LLC", [400110], "isp"],
  ["Inmarsat", "Inmarsat Solutions B.V.", [25222], "isp"],
  ["Inmarsat", "Inmarsat Australia Pty Ltd", [152659], "isp"],
  ["Guest-Tek", "Guest-Tek Interactive Entertainment LTD", [39852], "isp"],
];

/** Places whose network carries their visitors, not their own people: coworking and serviced
 * offices (tenants), convention and exhibition centres and stadiums (attendees), hotels with an AS
 * of their own (guests); typed `business`. A hotel chain's or an airport's corporate network stays
 * its own. */
const VENUES: CuratedList = [
  ["Regus (serviced offices)", "Regus Business Centre, LLC", [14676], "isp"],
  ["Regus (serviced offices)", "Regus Paris SAS", [16077], "isp"],
  ["Regus (serviced offices)", "Regus Group Services Ltd", [203438], "isp"],
  ["Servcorp (serviced offices)", "Servcorp Australian Holdings Pty Ltd", [17978], "isp"],
  ["Convene (flexible workspace)", "Convene", [394734], "isp"],
  ["Waterman Workspaces (coworking)", "Waterman Workspaces", [151213], "isp"],
  ["GOLD COAST CONVENTION AND EXHIBITION CENTRE (convention centre)", "GOLD COAST CONVENTION AND EXHIBITION CENTRE", [137903], "isp"],
  ["Massachusetts Convention Center Authority (convention centre)", "Massachusetts Convention Center Authority", [32102, 64237], "isp"],
  ["Jacob K. Javits Convention Center (convention centre)", "Jacob K. Javits Convention Center", [33729], "isp"],
  ["RBC Convention Centre Winnipeg (convention centre)", "RBC Convention Centre Winnipeg", [395338], "isp"],
  ["Austin Convention Center (convention centre)", "Austin Convention Center", [397542], "isp"],
  ["Pennsylvania Convention Center Authority (convention centre)", "Pennsylvania Convention Center Authority", [397986], "isp"],
  ["Oklahoma City Convention Center (convention centre)", "Oklahoma City Convention Center", [399198], "isp"],
  ["Melbourne Convention and Exhibition Centre (convention centre)", "Melbourne Convention and Exhibition Centre", [45527], "isp"],
  ["Vancouver Convention Centre (convention centre)", "Vancouver Convention Centre", [46959], "isp"],
  ["Brisbane Convention and Exhibition Centre (convention centre)", "Brisbane Convention and Exhibition Centre", [58734], "isp"],
  ["Monona Terrace Community and Convention Center (convention centre)", "Monona Terrace Community and Convention Center", [64251], "isp"],
  ["Regina Exhibition Association Ltd (convention centre)", "Regina Exhibition Association Ltd", [397894], "isp"],
  ["MCH Messe Schweiz (Basel) AG (exhibition centre)", "MCH Messe Schweiz (Basel) AG", [203702], "isp"],
  ["Messe Frankfurt GmbH (exhibition centre)", "Messe Frankfurt GmbH", [20740], "isp"],
  ["Messe Duesseldorf GmbH (exhibition centre)", "Messe Duesseldorf GmbH", [29494], "isp"],
  ["Leipziger Messe GmbH (exhibition centre)", "Leipziger Messe GmbH", [35065], "isp"],
  ["Convention Communications Provisioners (event networks)", "Convention Communications Provisioners, Inc.", [15198], "isp"],
  ["New Meadowlands Stadium Co., LLC (stadium)", "New Meadowlands Stadium Co., LLC", [393325], "isp"],
  ["Bills stadium and events company llc (stadium)", "Bills stadium and events company llc", [402213], "isp"],
  ["Gaylord Rockies Resort & Convention Center (Gaylord resort and convention centre)", "Gaylord Rockies Resort & Convention Center", [32535], "isp"],
  ["Gaylord Palms Resort & Convention Center (Gaylord resort and convention centre)", "Gaylord Palms Resort & Convention Center", [394194], "isp"],
  ["Gaylord National Resort & Convention Center (Gaylord resort and convention centre)", "Gaylord National Resort & Convention Center", [400902], "isp"],
  ["Gaylord Pacific Resort and Convention Center (Gaylord resort and convention centre)", "Gaylord Pacific Resort and Convention Center", [40493], "isp"],
  ["Waterfront Hotel (hotel)", "Waterfront Hotel", [149036], "isp"],
  ["Urban Resort Hotel Co.,Ltd. (hotel)", "Urban Resort Hotel Co.,Ltd.", [151040], "isp"],
  ["Island Palms Hotel & Marina (hotel)", "Island Palms Hotel & Marina", [16521], "isp"],
  ["Bartell Hotels, A California Limited Partnership (hotel)", "Bartell Hotels, A California Limited Partnership", [18949], "isp"],
  ["Park Hotel Vitznau AG (hotel)", "Park Hotel Vitznau AG", [199225], "isp"],
  ["Podillia-hotel PJSC (hotel)", "Podillia-hotel PJSC", [201626], "isp"],
  ["Pacific Terrace Hotel (hotel)", "Pacific Terrace Hotel", [21912], "isp"],
  ["Broadmoor Hotel Inc (hotel)", "Broadmoor Hotel Inc", [26399], "isp"],
  ["Days Inn Hotel Circle Sea World (hotel)", "Days Inn Hotel Circle Sea World", [27001], "isp"],
  ["Sheraton La Jolla Hotel (hotel)", "Sheraton La Jolla Hotel", [27636], "isp"],
  ["Hard Rock Hotel and Casino Atlantic City (hotel)", "Hard Rock Hotel and Casino Atlantic City", [30183], "isp"],
  ["Santa Ana Star Casino Hotel (hotel)", "Santa Ana Star Casino Hotel", [31948], "isp"],
  ["Hotel Nikko of San Francisco, Inc. (hotel)", "Hotel Nikko of San Francisco, Inc.", [36415], "isp"],
  ["The Beverly Hilton (hotel)", "The Beverly Hilton", [53290], "isp"],
  ["Beverly Hills Hotel (hotel)", "Beverly Hills Hotel", [55132], "isp"],
  ["Loews Hotels at Universal Orlando (hotel)", "Loews Hotels at Universal Orlando", [46576], "isp"],
  ["Vancas Hotel d.o.o. (hotel)", "Vancas Hotel d.o.o.", [47676], "isp"],
  ["MI Squared Company Limited (Branch 00003)/JW Marriott Phuket Resort & Spa (hotel)", "MI Squared Company Limited (Branch 00003)/JW Marriott Phuket Resort & Spa", [154088], "isp"],
  ["Solare Hotels and Resorts Co., Ltd. (hotel)", "Solare Hotels and Resorts Co., Ltd.", [151376, 151377], "isp"],
  ["Vetal Hotel And Resort Pvt Ltd (hotel)", "Vetal Hotel And Resort Pvt Ltd", [139486], "isp"],
  ["Slavyanskaya Hotel and Business Center Ltd (hotel)", "Slavyanskaya Hotel and Business Center Ltd", [44232], "isp"],
  ["Ana Hotels SA (hotel)", "Ana Hotels SA", [48836], "isp"],
  ["Nuevos Hoteles de Panama, S.A. (hotel)", "Nuevos Hoteles de Panama, S.A.", [52437], "isp"],
  ["Flugleidahotel hf. (Icelandair Hotels) (hotel)", "Flugleidahotel hf. (Icelandair Hotels)", [210747], "isp"],
  ["City Lodge Hotels (Proprietary) Limited (hotel)", "City Lodge Hotels (Proprietary) Limited", [328505], "isp"],
];

/** One row per ASN: [asn, AS name, operator, type]. */
const rows = (list: CuratedList) => list.flatMap(([operator, name, asns, type = "hosting"]) => asns.map((asn) => [asn, name, operator, type] as const));

const resolver = sharedResolver();
/** The first IPv4 address of each AS in the data (one walk over its ranges). */
const firstAddress = new Map<number, string>();
resolver.asns.eachIpv4Range((asn, start) => {
  if (!firstAddress.has(asn)) firstAddress.set(asn, `${start >>> 24}.${(start >>> 16) & 255}.${(start >>> 8) & 255}.${start & 255}`);
});

const networkOf = (c: NetworkClass) => ({ networkType: c.type, networkTypeSource: c.source });

/** The AS is in the data under `name`, curated as `type` (hosting by default), and typed so:
 * through the resolver at its first IPv4 address, or by the classifier for an AS that announces
 * IPv6 only. */
function expectCuratedHosting(asn: number, name: string, type: "hosting" | "isp" = "hosting"): void {
  expect(resolver.asns.nameOf(asn)).toBe(name);
  expect(CURATED_NETWORKS.find((entry) => entry.asn === asn)).toMatchObject({ type, name });
  const ip = firstAddress.get(asn);
  const resolved = ip
    ? resolver.resolve(ip, { geo: false })
    : { asn, organizationName: name, ...networkOf(classifyNetwork({ asn, name }, resolver.evidenceOf(asn))) };
  expect(resolved).toMatchObject({ asn, organizationName: name, networkType: type, networkTypeSource: "curated" });
  expect(LEAD_NETWORKS.has(resolved!.networkType)).toBe(false);
}

describe("VPN operators' networks", () => {
  it.each(rows(VPN_OPERATORS))("when a visit comes from the VPN operator's AS%i (%s, %s), then it is a hosting network, not a lead", (asn, name) => {
    expectCuratedHosting(asn, name);
  });

  it.each(rows(HOSTERS))("when a visit comes from the hoster's AS%i (%s, %s), then it is a hosting network, not a lead", (asn, name) => {
    expectCuratedHosting(asn, name);
  });

  it.each(rows([...SHARED_EGRESS, ...VENUES]))(
    "when a visit comes from the shared egress or venue AS%i (%s, %s), then it is typed %s, not a lead",
    (asn, name, _operator, type) => {
      expectCuratedHosting(asn, name, type);
    },
  );

  it("when the labelled set's holdouts are classified, then none is decided by these entries, by ASN or as a sibling", () => {
    // PacketHub's AS147049 is in the holdout: its entries say `"siblings": false`
    const set = JSON.parse(readFileSync(new URL("../bench/classify-set.json", import.meta.url), "utf8")) as LabelledNetwork[];
    const listed = new Set(rows([...VPN_OPERATORS, ...HOSTERS, ...SHARED_EGRESS, ...VENUES]).map(([asn]) => asn));
    const entries = CURATED_NETWORKS.filter((entry) => listed.has(entry.asn));
    expect(entries).toHaveLength(listed.size);
    const siblingKeys = new Set(entries.filter((entry) => entry.siblings !== false).map((entry) => organisationKey(entry.name)));
    const decided = set
      .filter((e) => e.split !== "tuning")
      .filter((e) => listed.has(e.asn) || siblingKeys.has(organisationKey(resolver.asns.nameOf(e.asn) ?? e.name)));
    expect(decided.map((e) => e.asn)).toEqual([]);
  });
});
