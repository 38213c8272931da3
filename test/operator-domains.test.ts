// Network operators' domains (server/identity/operator-domains.json, read by operator-domains.ts and
// domain-names.ts): each curated entry checked against the shipped ASN data (its AS numbers carry
// the names recorded and are typed as an operator's network), and a PTR name or an identity under
// each of its domains naming nobody; then the naming-structure rules that need no list: a line
// number under an operator zone, and an address spelled in pieces, in hex or in the domain's label.
import { describe, expect, it } from "vitest";
import { domainOfPtr, registrableDomain } from "../server/identity/domain-names.ts";
import { isOperatorDomain, OPERATORS, operatorOfAsn } from "../server/identity/operator-domains.ts";
import { type Evidence, identitiesOfRange } from "../server/identity/rules.ts";
import { sharedResolver } from "../server/tracking/ipdata/resolver.ts";

const resolver = sharedResolver();
/** The first IPv4 address of each AS in the data (one walk over its ranges). */
const firstAddress = new Map<number, string>();
resolver.asns.eachIpv4Range((asn, start) => {
  if (!firstAddress.has(asn)) firstAddress.set(asn, `${start >>> 24}.${(start >>> 16) & 255}.${(start >>> 8) & 255}.${start & 255}`);
});

const AT = new Date("2026-11-01T00:00:00Z");
const facts = { version: 4, operatorDomains: new Set<string>(), movingPeople: new Set<string>(), windowMs: 90 * 86_400_000 } as const;
const evidenceOf = (unit: string, kind: Evidence["kind"], domain: string, contributor = ""): Evidence => ({ unit, kind, domain, contributor, firstSeenAt: AT, lastSeenAt: AT });

describe("operator domains", () => {
  it("when the list is read, then no domain belongs to two entries and every entry has a source", () => {
    const domains = OPERATORS.flatMap((entry) => entry.domains);
    expect(new Set(domains).size).toBe(domains.length);
    expect(OPERATORS.filter((entry) => !/^https:\/\//.test(entry.source) || !entry.naming || !entry.brands.length)).toEqual([]);
    expect(OPERATORS.length).toBeGreaterThanOrEqual(60);
  });

  it.each(OPERATORS.map((entry) => [entry.operator, entry] as const))(
    "when %s's entry is checked, then its ASNs carry the recorded names in the data, are typed an operator's network, and a PTR or an identity under each of its domains names nobody",
    (_name, entry) => {
      for (const { asn, name } of entry.asns) {
        expect(resolver.asns.nameOf(asn), `AS${asn}`).toBe(name);
        expect(operatorOfAsn(asn)).toBe(entry);
        const type = resolver.resolve(firstAddress.get(asn)!, { geo: false })?.networkType;
        expect(entry.kind === "hosting" ? ["hosting"] : ["isp", "mobile"], `AS${asn} typed ${type}`).toContain(type);
      }
      for (const domain of entry.domains) {
        expect(registrableDomain(domain), domain).toBe(domain);
        expect(isOperatorDomain(domain.toUpperCase())).toBe(true);
        // a business line named after its customer under the operator's zone, as operators do
        expect(domainOfPtr(`gw.acme-widgets.${domain}`, "192.0.2.7"), domain).toBeNull();
        // evidence stored under the domain (before it was listed) names no organisation either
        const rows = identitiesOfRange([evidenceOf("192.0.2.7/32", "reverse_dns", domain), evidenceOf("192.0.2.7/32", "form_email", domain, "person-1")], facts);
        expect(rows.filter((r) => r.organizationDomain !== null), domain).toEqual([]);
      }
    },
  );

  it("when a PTR domain is not an operator's, then it still names its organisation (the list is not a blanket)", () => {
    expect(isOperatorDomain("acme-widgets.com")).toBe(false);
    expect(domainOfPtr("gw.acme-widgets.com", "192.0.2.7")).toBe("acme-widgets.com");
  });
});

describe("operator naming structure", () => {
  it.each([
    ["biz48213.ma.example-cable.net", "a business line's number under a region zone"],
    ["kd40917.business.example-telecom.de", "a customer number under a business zone"],
    ["rr20931.biz.example-broadband.com", "a line number under a business zone"],
    ["ln918875-6.fix.example-telecom.pl", "a line and port number under a fixed-line zone"],
    ["gw.fixed.example-telecom.pl", "a host under an operator's fixed-line zone"],
    ["gw.acme-widgets.examplecablebiz.com", "a line under an operator's business brand (<brand>biz)"],
    ["office.example-telecom-business.de", "a line under an operator's business brand (<brand>-business)"],
    ["gw.acme-widgets.example-telecom-empresas.es", "a line under an operator's business brand (<brand>-empresas)"],
    ["office.example-telecom-pro.fr", "a line under an operator's business brand (<brand>-pro)"],
  ])("when a PTR name is %s (%s), then it names no organisation", (host) => {
    expect(domainOfPtr(host, "192.0.2.7")).toBeNull();
  });

  it.each([
    ["fw1.office.acme-widgets.com", "a host named by role under a company's zone"],
    ["vpn2024.acme-widgets.com", "a numbered host directly under the company's domain"],
  ])("when a PTR name is %s (%s), then it names the company", (host) => {
    expect(domainOfPtr(host, "192.0.2.7")).toBe("acme-widgets.com");
  });

  it("when a company's domain begins with biz or ends in another word, then it is no operator's business brand", () => {
    expect(domainOfPtr("gw.bizarro-design.com", "192.0.2.7")).toBe("bizarro-design.com");
    expect(domainOfPtr("gw.showbiz-media.com", "192.0.2.7")).toBe("showbiz-media.com");
    expect(domainOfPtr("gw.showbiz.com", "192.0.2.7")).toBeNull(); // a label ending in biz is read as a brand: the rule's known cost
    expect(domainOfPtr("gw.techpro.de", "192.0.2.7")).toBe("techpro.de"); // a business zone's word only after a dash
    expect(domainOfPtr("gw.clean-pro.de", "192.0.2.7")).toBeNull(); // ... where it is read as a brand: the same cost
  });

  it("when the address's octets are spread over the name's labels, then it names no organisation; the same name for another address names its domain", () => {
    const host = "a109-96.lfbn-lyo-1.w87-238.abo.example-telecom.fr";
    expect(domainOfPtr(host, "87.238.109.96")).toBeNull();
    expect(domainOfPtr(host, "87.238.109.97")).toBe("example-telecom.fr");
  });

  it("when the address is spelled in hex split by a dash, or reversed in hex, then it names no organisation", () => {
    // 198.51.100.7 = c6.33.64.07
    expect(domainOfPtr("c633-6407.lines.example-telecom.nl", "198.51.100.7")).toBeNull();
    expect(domainOfPtr("x07-6433c6.lines.example-telecom.nl", "198.51.100.7")).toBeNull();
    expect(domainOfPtr("x07-6433c6.lines.example-telecom.nl", "198.51.100.8")).toBe("example-telecom.nl");
  });

  it("when the address is spelled in the registrable domain's own label (a per-block domain), then it names no organisation", () => {
    expect(domainOfPtr("ns3012345.ip-51-75-3.eu", "51.75.3.18")).toBeNull();
  });
});
