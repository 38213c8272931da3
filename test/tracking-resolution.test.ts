// Resolution without a database: addresses to numbers and masks, the network classification
// rule, and the curated lists checked against the installed data set.
import { describe, expect, it } from "vitest";
import { maskIp, parseIp } from "../server/tracking/ipdata/ip.ts";
import { classifyNetwork, CURATED_NETWORKS } from "../server/tracking/ipdata/network-class.ts";
import { KNOWN_ORGANIZATIONS } from "../server/identity/organizations.ts";
import { sharedResolver } from "../server/tracking/ipdata/resolver.ts";
import { keptFields, emailOf, looksLikeCardNumber } from "../server/tracking/collect/events.ts";
import { ADDRESSES } from "./support/tracking.ts";

describe("addresses", () => {
  it.each([
    ["1.2.3.4", { version: 4, value: 0x01020304 }],
    ["255.255.255.255", { version: 4, value: 0xffffffff }],
    ["::ffff:8.8.4.4", { version: 4, value: 0x08080404 }],
    ["2001:db8::1", { version: 6, words: [0x20010db8, 0, 0, 1] }],
    ["::", { version: 6, words: [0, 0, 0, 0] }],
    ["ffff::ffff", { version: 6, words: [0xffff0000, 0, 0, 0xffff] }],
  ])("when %s is parsed, then it is the number it stands for", (text, expected) => {
    expect(parseIp(text)).toEqual(expected);
  });

  it.each(["", "1.2.3", "1.2.3.256", "example.com", "2001:db8::1::2"])("when %j is parsed, then it is no address", (text) => {
    expect(parseIp(text)).toBeUndefined();
  });

  it.each([
    ["17.253.144.10", "17.253.144.0"],
    ["::ffff:17.253.144.10", "17.253.144.0"],
    ["2a03:2880:f10c:83:face:b00c:0:25de", "2a03:2880:f10c::"],
    ["2001:db8::1", "2001:db8:0::"],
  ])("when %s is masked, then %s is left", (ip, masked) => {
    expect(maskIp(ip)).toBe(masked);
  });
});

describe("classifyNetwork", () => {
  it.each([
    [undefined, "unknown"],
    [{ asn: 16509, name: "Amazon.com, Inc." }, "hosting"],
    [{ asn: 7922, name: "Comcast Cable Communications, LLC" }, "isp"],
    [{ asn: 21928, name: "T-Mobile USA, Inc." }, "mobile"],
    [{ asn: 3, name: "Massachusetts Institute of Technology" }, "education"],
    [{ asn: 64500, name: "Example Mobile Telesystems" }, "mobile"],
    [{ asn: 64501, name: "Example Hosting Ltd" }, "hosting"],
    [{ asn: 64502, name: "Universität Beispiel" }, "education"],
    [{ asn: 64503, name: "Example Telecom S.A." }, "isp"],
    // mobile is tried before isp, education before hosting
    [{ asn: 64504, name: "Example Telecom Mobile" }, "mobile"],
    [{ asn: 64505, name: "University Cloud Services" }, "education"],
    [{ asn: 64506, name: "Acme Widgets GmbH" }, "business"],
    // whole words only: "Hostess" is no host; "Mobil" and "Host" alone are no keywords
    [{ asn: 64507, name: "Hostess Brands, LLC" }, "business"],
    [{ asn: 64508, name: "Exxon Mobil Corporation" }, "business"],
    [{ asn: 64509, name: "Host Hotels and Resorts, L.P." }, "business"],
  ] as const)("when the network is %j and there is no evidence, then it is %s", (as, type) => {
    expect(classifyNetwork(as).type).toBe(type);
  });
});

describe("the data set", () => {
  const resolver = sharedResolver();

  it("when loaded, then it holds both address families", () => {
    const size = resolver.asns.size;
    expect(size.ipv4).toBeGreaterThan(300_000);
    expect(size.ipv6).toBeGreaterThan(50_000);
  });

  it("when the curated organisations are checked, then each ASN carries the organisation's name in the data", () => {
    for (const org of KNOWN_ORGANIZATIONS) {
      for (const asn of org.asns) expect(resolver.asns.nameOf(asn), `${org.domain} AS${asn}`).toBe(org.name);
    }
  });

  it("when the curated network lists are checked, then every ASN is in the data under the name recorded", () => {
    const differing = CURATED_NETWORKS.filter((entry) => resolver.asns.nameOf(entry.asn) !== entry.name);
    expect(differing).toEqual([]);
  });

  it.each([
    [ADDRESSES.business, { asn: 714, networkType: "business", organizationDomain: "apple.com", country: "US", city: "Cupertino" }],
    [ADDRESSES.education, { asn: 3, networkType: "education", organizationDomain: "mit.edu" }],
    [ADDRESSES.isp, { asn: 7922, networkType: "isp" }],
    [ADDRESSES.hosting, { asn: 15169, networkType: "hosting" }],
    [ADDRESSES.mobile, { asn: 21928, networkType: "mobile" }],
    [ADDRESSES.businessV6, { asn: 32934, networkType: "business", country: null }],
    ["192.168.0.1", { asn: null, networkType: "unknown", organizationName: null }],
  ])("when the fixture %s is resolved, then it is what the tests say", (ip, expected) => {
    expect(resolver.resolve(ip)).toMatchObject(expected);
  });
});

describe("form fields", () => {
  it("when a form carries secrets and card data, then only the other fields are kept", () => {
    expect(
      keptFields({ email: "a@b.example", Password: "x", "cc-number": "4", card_holder: "A", note: "5555 5555 5555 4444", phone: "+49 30 1234567", iban: "DE" }),
    ).toEqual({ email: "a@b.example", phone: "+49 30 1234567" });
  });

  it("when card-like digits fail the Luhn check, then they are not taken for a card", () => {
    expect(looksLikeCardNumber("4111 1111 1111 1111")).toBe(true);
    expect(looksLikeCardNumber("4111 1111 1111 1112")).toBe(false);
    expect(looksLikeCardNumber("+49 30 1234567")).toBe(false);
  });

  it("when a form has several addresses, then the e-mail field's wins, trimmed and lower case", () => {
    expect(emailOf({ note: "cc boss@x.example", message: "other@x.example", Work_Email: " Me@X.example " })).toBe("me@x.example");
    expect(emailOf({ company: "Acme" })).toBeUndefined();
  });
});
