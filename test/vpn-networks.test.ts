// VPN operators' networks: their own ASes carried every VPN user's visit as a lead named after the
// VPN ("Proton AG", "PacketHub S.A." for NordVPN, "31173 Services AB" for Mullvad), typed
// `business`; and some hosters whose space VPNs rent were typed `business` or `isp`, as were
// Zscaler's proxies, whose egress carries many companies' employees ("ZSCALER, INC." leads). Both are
// curated as `hosting` in server/tracking/ipdata/curated-networks.json: their visitors are the
// VPN's or the hoster's customers, not the operator's people. Checked here through the resolver
// against the shipped ASN data, and against the holdouts of bench/classify-set.json.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { LabelledNetwork } from "../bench/classify-measure.ts";
import { classifyNetwork, CURATED_NETWORKS, LEAD_NETWORKS, type NetworkClass, organisationKey } from "../server/tracking/ipdata/network-class.ts";
import { sharedResolver } from "../server/tracking/ipdata/resolver.ts";

/** VPN operators: the operator, the AS name in the data, its ASNs. */
const VPN_OPERATORS: readonly (readonly [string, string, readonly number[]])[] = [
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
const HOSTERS: readonly (readonly [string, string, readonly number[]])[] = [
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
const SHARED_EGRESS: readonly (readonly [string, string, readonly number[], "hosting" | "isp"])[] = [
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

const rows = (list: typeof VPN_OPERATORS) => list.flatMap(([operator, name, asns]) => asns.map((asn) => [asn, name, operator] as const));

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

  it.each(SHARED_EGRESS.flatMap(([operator, name, asns, type]) => asns.map((asn) => [asn, name, operator, type] as const)))(
    "when a visit comes from the shared egress AS%i (%s, %s), then it is typed %s, not a lead",
    (asn, name, _operator, type) => {
      expectCuratedHosting(asn, name, type);
    },
  );

  it("when the labelled set's holdouts are classified, then none is decided by these entries, by ASN or as a sibling", () => {
    // PacketHub's AS147049 is in the holdout: its entries say `"siblings": false`
    const set = JSON.parse(readFileSync(new URL("../bench/classify-set.json", import.meta.url), "utf8")) as LabelledNetwork[];
    const listed = new Set([...[...rows(VPN_OPERATORS), ...rows(HOSTERS)].map(([asn]) => asn), ...SHARED_EGRESS.flatMap(([, , asns]) => asns)]);
    const entries = CURATED_NETWORKS.filter((entry) => listed.has(entry.asn));
    expect(entries).toHaveLength(listed.size);
    const siblingKeys = new Set(entries.filter((entry) => entry.siblings !== false).map((entry) => organisationKey(entry.name)));
    const decided = set
      .filter((e) => e.split !== "tuning")
      .filter((e) => listed.has(e.asn) || siblingKeys.has(organisationKey(resolver.asns.nameOf(e.asn) ?? e.name)));
    expect(decided.map((e) => e.asn)).toEqual([]);
  });
});
