// How the PTR rules read names in the formats real operators give their lines (the operators'
// published or commonly seen reverse-DNS formats, with addresses of their own blocks), most of
// them operators the curated list (operator-domains.json) does not hold: the rules must read a
// network they have never seen by its name's structure. A household's or a server's name names
// nobody and never marks a business line (one person's form would then name a household); an
// operator's business line names nobody and marks one; a company's own host names the company.
import { describe, expect, it } from "vitest";
import { domainOfPtr, readsLikeBusinessLine, readsLikeDynamicLine, registrableDomain } from "../server/identity/domain-names.ts";
import { isOperatorDomain } from "../server/identity/operator-domains.ts";

/** [PTR name, its address]: households' access lines (cable, DSL, fibre, mobile), by operator. */
const ACCESS_LINES: [string, string][] = [
  ["c-73-15-22-101.hsd1.ca.comcast.net", "73.15.22.101"],
  ["cpe-72-130-1-2.socal.res.rr.com", "72.130.1.2"],
  ["pool-71-105-1-2.nycmny.fios.verizon.net", "71.105.1.2"],
  ["108-203-1-2.lightspeed.sntcca.sbcglobal.net", "108.203.1.2"],
  ["host86-150-1-2.range86-150.btcentralplus.com", "86.150.1.2"],
  ["cpc1-cmbg20-2-0-cust5.5-4.cable.virginm.net", "86.1.2.3"],
  ["5ac1b2c3.bb.sky.com", "90.193.178.195"],
  ["p5b0c1d2e.dip0.t-ipconnect.de", "91.12.29.46"],
  ["dslb-088-074-001-002.088.074.pools.vodafone-ip.de", "88.74.1.2"],
  ["ip5f5a1b2c.dynamic.kabel-deutschland.de", "95.90.27.44"],
  ["x4d0c1b2a.dyn.telefonica.de", "77.12.27.42"],
  ["mue-88-130-1-2.dsl.tropolys.de", "88.130.1.2"],
  ["1-2-3-4.ftth.glasfaser.deutsche-glasfaser.de", "1.2.3.4"],
  ["lfbn-ncy-1-123-45.w90-1.abo.wanadoo.fr", "90.1.123.45"],
  ["lns-bzn-48f-81-56-1-2.adsl.proxad.net", "81.56.1.2"],
  ["2.1.12.5.rev.sfr.net", "5.12.1.2"],
  ["93-38-1-2.ip41.fastwebnet.it", "93.38.1.2"],
  ["net-93-144-1-2.cust.vodafonedsl.it", "93.144.1.2"],
  ["88.red-83-1-2.dynamicip.rima-tde.net", "83.1.2.88"],
  ["d51a4b3c2.access.telenet.be", "81.164.179.194"],
  ["host-1-2-3-4.dynamic.voo.be", "1.2.3.4"],
  ["5ed12345.cm-7-1c.dynamic.ziggo.nl", "94.209.35.69"],
  ["ip4da1b2c3.direct-adsl.nl", "77.161.178.195"],
  ["a1-2-3-4.cpe.netcabo.pt", "1.2.3.4"],
  ["bl5-1-2.dsl.telepac.pt", "1.2.3.4"],
  ["h-1-2-3-4.a123.priv.bahnhof.se", "1.2.3.4"],
  ["c-1-2-3-4.bbcust.telenor.se", "1.2.3.4"],
  ["m83-187-1-2.cust.tele2.se", "83.187.1.2"],
  ["ti0123a400-1234.bb.online.no", "1.2.3.4"],
  ["dsl-hkibng12-1234ab-5.dhcp.inet.fi", "1.2.3.4"],
  ["user-5-173-1-2.play-internet.pl", "5.173.1.2"],
  ["89-64-1-2.dynamic.chello.pl", "89.64.1.2"],
  ["catv-1-2-3-4.catv.fixed.vodafone.hu", "1.2.3.4"],
  ["1.2.3.4.dsl.dyn.forthnet.gr", "1.2.3.4"],
  ["78.160.1.2.dynamic.ttnet.com.tr", "78.160.1.2"],
  ["broadband-1-2-3-4.ip.moscow.rt.ru", "1.2.3.4"],
  ["s0106001122334455.vc.shawcable.net", "24.80.1.2"],
  ["bras-base-toroon0123w-grc-01-70-50-1-2.dsl.bell.ca", "70.50.1.2"],
  ["d75-157-1-2.bchsia.telus.net", "75.157.1.2"],
  ["cpe001122334455-cm00112233.cpe.net.cable.rogers.com", "99.224.1.2"],
  ["kd027083123045.ppp-bb.dion.ne.jp", "27.83.123.45"],
  ["p1234567-ipngn2001funabasi.chiba.ocn.ne.jp", "153.1.2.3"],
  ["softbank126001002003.bbtec.net", "126.1.2.3"],
  ["ppp1-2-3-4.lns20.syd4.internode.on.net", "1.2.3.4"],
  ["1-2-3-4.tpgi.com.au", "1.2.3.4"],
  ["bb116-15-1-2.singnet.com.sg", "116.15.1.2"],
  ["mx-ll-1-2-3-4.dynamic.3bb.co.th", "1.2.3.4"],
  ["201-1-2-3.dsl.telesp.net.br", "201.1.2.3"],
  ["b1a2c3d4.virtua.com.br", "177.162.195.212"],
  ["dsl-189-1-2-3-dyn.prod-infinitum.com.mx", "189.1.2.3"],
  ["abts-kk-dynamic-1.2.3.4.airtelbroadband.in", "122.1.2.3"],
  ["apn-1-2-3-4.dynamic.gprs.plus.pl", "1.2.3.4"],
  ["general1234.broadband.hyperoptic.com", "1.2.3.4"],
];

/** Servers' and clouds' names: a machine, not an organisation. */
const SERVERS: [string, string][] = [
  ["ec2-3-250-1-2.eu-west-1.compute.amazonaws.com", "3.250.1.2"],
  ["static.1.2.3.4.clients.your-server.de", "4.3.2.1"],
  ["vps-1a2b3c4d.vps.ovh.net", "1.2.3.4"],
  ["li123-45.members.linode.com", "1.2.3.4"],
  ["1-2-3-4.rev.cloud.scaleway.com", "1.2.3.4"],
  ["unn-1-2-3-4.datapacket.com", "1.2.3.4"],
];

/** Operators' business lines: sold and named as such, the customer not named. */
const BUSINESS_LINES: [string, string][] = [
  ["rrcs-24-1-2-3.nys.biz.rr.com", "24.1.2.3"],
  ["host-1-2-3-4.business.telecomitalia.it", "1.2.3.4"],
  ["static-1-2-3-4.business.vodafone.co.uk", "1.2.3.4"],
  ["31-1-2-3.static.upc.ch", "31.1.2.3"],
  ["static-1-2-3-4.ipcom.comunitel.net", "1.2.3.4"],
  ["1.2.3.4.static.user.ono.com", "1.2.3.4"],
];

describe("real operators' PTR formats", () => {
  it.each(ACCESS_LINES)("when a household's line is named %s, then it names nobody and marks no business line", (host, ip) => {
    expect(domainOfPtr(host, ip)).toBeNull();
    expect(readsLikeBusinessLine(host)).toBe(false);
  });

  it("when households' lines are named by operators the curated list does not hold, then most still read as access lines (the dynamic mark) by their labels alone", () => {
    const unlisted = ACCESS_LINES.filter(([host]) => !isOperatorDomain(registrableDomain(host) ?? ""));
    const dynamic = unlisted.filter(([host]) => readsLikeDynamicLine(host));
    expect(unlisted.length).toBeGreaterThan(20);
    expect(dynamic.length / unlisted.length).toBeGreaterThanOrEqual(0.8);
  });

  it.each(SERVERS)("when a server is named %s, then it names nobody", (host, ip) => {
    expect(domainOfPtr(host, ip)).toBeNull();
  });

  it.each(BUSINESS_LINES)("when an operator's business line is named %s, then it names nobody and marks a business line", (host, ip) => {
    expect(domainOfPtr(host, ip)).toBeNull();
    expect(readsLikeBusinessLine(host)).toBe(true);
    expect(readsLikeDynamicLine(host)).toBe(false);
  });

  it("when `fixed` names an operator's fixed network beside an access label, then the line reads dynamic; alone, it still marks a fixed (static) line", () => {
    expect(readsLikeDynamicLine("catv-1-2-3-4.catv.fixed.vodafone.hu")).toBe(true);
    expect(readsLikeBusinessLine("ln918875-6.fix.example-telecom.pl")).toBe(true);
    expect(readsLikeBusinessLine("gw.fixed.example-telecom.pl")).toBe(true);
  });

  it.each([
    ["2001-db8-a540-1f2e--1.ip6.example-isp.de", "groups dashed"],
    ["a540-1f2e.region.example-telecom.pl", "two groups, the first with a letter"],
    ["x2001-db8.lines.example-fibre.net", "unpadded groups after a letter"],
    ["1f2e.a540.example-cable.net", "groups in reverse order"],
    ["e.2.f.1.0.4.5.a.example-isp.net", "nibbles reversed, as in ip6.arpa"],
  ])("when an IPv6 customer prefix is named %s (%s), then it names nobody", (host) => {
    expect(domainOfPtr(host, "2001:db8:a540:1f2e::1")).toBeNull();
    expect(domainOfPtr("gw.acme-widgets.com", "2001:db8:a540:1f2e::1")).toBe("acme-widgets.com");
  });

  it.each([
    ["fw.northwind-traders.co.uk", "northwind-traders.co.uk"],
    ["mail.acme-widgets.com", "acme-widgets.com"],
    ["vpn.kessler-maschinenbau.de", "kessler-maschinenbau.de"],
  ])("when a company names its gateway %s, then it names the company", (host, domain) => {
    expect(domainOfPtr(host, "192.0.2.7")).toBe(domain);
  });
});
