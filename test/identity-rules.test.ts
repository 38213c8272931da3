// The identity rules that weigh disagreeing evidence (server/identity/rules.ts, pure: the store of
// test/identities.test.ts reads and writes what they decide): a host's PTR domain (coworking,
// hotel, managed office) names nobody nor any of its tenants, a hospitality network's gateway
// names none of its guests, one person's e-mail names no line that may be a household's, and a line whose name
// reads like an access line is a static one when one organisation's people keep appearing there
// over days. Each case would attribute wrongly (or miss) without its rule; the thresholds are the
// rules' own constants.
import { describe, expect, it } from "vitest";
import { readsLikeBusinessLine, readsLikeDynamicLine } from "../server/identity/domain-names.ts";
import { rangesOf } from "../server/identity/addresses.ts";
import { AROUND_THE_CLOCK, CONSUMERS, type Evidence, HOST_TENANTS, identitiesOfRange, type IdentityRow, EMAIL_PEOPLE, HOSPITALITY_WORD, type RangeFacts, STATIC_LINE, usedAroundTheClock } from "../server/identity/rules.ts";

const DAY = 86_400_000;
const START = new Date("2026-11-01T09:00:00Z").getTime();
const facts: RangeFacts = { version: 4, operatorDomains: new Set(), movingPeople: new Set(), windowMs: 90 * DAY };

/** Evidence at an address of 198.51.100.0/24, seen from `fromDay` to `toDay` (days after START). */
function seen(host: number, kind: Evidence["kind"], domain: string, contributor = "", fromDay = 0, toDay = fromDay): Evidence {
  return { unit: `198.51.100.${host}/32`, kind, domain, contributor, firstSeenAt: new Date(START + fromDay * DAY), lastSeenAt: new Date(START + toDay * DAY) };
}
const ptr = (host: number, domain: string) => seen(host, "reverse_dns", domain);
const mail = (host: number, domain: string, person: string, fromDay = 0, toDay = fromDay) => seen(host, "form_email", domain, person, fromDay, toDay);
const line = (host: number) => seen(host, "dynamic_line", "");
const businessLine = (host: number) => seen(host, "business_line", "");

/** The unit row of an address. */
function rowOf(rows: readonly IdentityRow[], host: number): IdentityRow | undefined {
  return rows.find((r) => r.prefix === `198.51.100.${host}/32`);
}
const named = (rows: readonly IdentityRow[], host: number) => {
  const row = rowOf(rows, host);
  return row?.guard === null ? row.organizationDomain : null;
};

/** A coworking space: its PTR domain at .1, where forms of HOST_TENANTS tenants were sent. */
const space = "workhub-spaces.example";
const tenantsAtGateway = Array.from({ length: HOST_TENANTS }, (_, i) => mail(1, `tenant-${i}.example`, `tenant-${i}-person`));

describe("hosts", () => {
  it(`when ${CONSUMERS} people give free-mail addresses at a unit named under a brand and nobody gives the brand's, then the name names nobody (a hotel under its own brand); one colleague's form bears it out`, () => {
    const privately = (host: number, person: string) => seen(host, "free_mail", "", person);
    const hotel = [ptr(9, "quayside.example"), privately(9, "guest-a"), privately(9, "guest-b")];
    expect(rowOf(identitiesOfRange(hotel, facts), 9)).toMatchObject({ organizationDomain: null, guard: "shared", shared: true });
    expect(named(identitiesOfRange(hotel.slice(0, 2), facts), 9), "one private address: a colleague's").toBe("quayside.example");
    expect(named(identitiesOfRange([...hotel, mail(9, "quayside.example", "staff")], facts), 9)).toBe("quayside.example");
  });

  it(`when forms at a unit name ${HOST_TENANTS} organisation(s) and never its PTR domain, then that domain is a host's: it names nobody at its other units either`, () => {
    const rows = identitiesOfRange([ptr(1, space), ...tenantsAtGateway, ptr(2, space)], facts);
    expect(rowOf(rows, 1)).toMatchObject({ guard: "shared", organizationDomain: null });
    expect(named(rows, 2)).toBeNull();
    // without any form naming another organisation, the domain names its units
    expect(named(identitiesOfRange([ptr(1, space), ptr(2, space)], facts), 2)).toBe(space);
  });

  it("when a unit marked as a business line is used around the clock (linesAroundTheClock), then one guest's form names nobody and the line says it is shared (a hotel on a business line)", () => {
    const hotel = [businessLine(9), mail(9, "guest-employer.example", "guest")];
    expect(named(identitiesOfRange(hotel, facts), 9), "an office's business line: one form names it").toBe("guest-employer.example");
    const roundTheClock = { ...facts, linesAroundTheClock: new Set(["198.51.100.9/32"]) };
    expect(rowOf(identitiesOfRange(hotel, roundTheClock), 9)).toMatchObject({ guard: "shared", shared: true, organizationDomain: null });
    expect(rowOf(identitiesOfRange([businessLine(9)], roundTheClock), 9), "no form at all").toMatchObject({ guard: "shared", shared: true });
  });

  it("when visits at a unit named under a brand come around the clock (aroundTheClock), then the name names nobody (a hotel's guests); a form naming the brand bears it out (its staff)", () => {
    const hotel = [ptr(9, "quayside.example"), ptr(10, "quayside.example")];
    expect(named(identitiesOfRange(hotel, facts), 10)).toBe("quayside.example");
    const roundTheClock = { ...facts, aroundTheClock: new Set(["quayside.example"]) };
    expect(rowOf(identitiesOfRange(hotel, roundTheClock), 9)).toMatchObject({ guard: "shared", shared: true, organizationDomain: null });
    expect(named(identitiesOfRange(hotel, roundTheClock), 10), "the brand's other unit").toBeNull();
    expect(named(identitiesOfRange([...hotel, mail(9, "quayside.example", "staff")], roundTheClock), 9)).toBe("quayside.example");
  });

  it("when the scope's other ranges show the PTR domain to be a host's (hostDomains), then its unit here, with no form at all, names nobody and says it is shared", () => {
    expect(named(identitiesOfRange([ptr(2, space)], facts), 2)).toBe(space);
    const rows = identitiesOfRange([ptr(2, space)], { ...facts, hostDomains: new Set([space]) });
    expect(rowOf(rows, 2)).toMatchObject({ guard: "shared", shared: true, organizationDomain: null });
  });

  it("when a form at the unit names the PTR domain itself, then the domain is an organisation's with guests, not a host's", () => {
    const rows = identitiesOfRange([ptr(1, space), ...tenantsAtGateway, mail(1, space, "staff"), ptr(2, space)], facts);
    expect(named(rows, 2)).toBe(space);
  });

  it("when a tenant's people, several of them over days, sent forms from a host's unit, then the unit is still not the tenant's (its other tenants share it)", () => {
    const host = [ptr(1, space), ...tenantsAtGateway];
    const once = identitiesOfRange([...host, ptr(2, space), mail(2, "guest.example", "guest")], facts);
    expect(rowOf(once, 2)).toMatchObject({ guard: "shared", organizationDomain: null });
    const colleagues = identitiesOfRange([...host, ptr(3, space), mail(3, "resident.example", "r1", 0), mail(3, "resident.example", "r2", 5)], facts);
    expect(rowOf(colleagues, 3)).toMatchObject({ guard: "shared", organizationDomain: null });
  });

  it(`when forms at a PTR domain's units, one organisation a unit, name ${HOST_TENANTS} organisation(s) or more and never the domain, then the domain is a host's or provider's: it names nobody, and its units name none of their tenants`, () => {
    const provider = "lineco-spaces.example";
    const rows = identitiesOfRange(
      [ptr(1, provider), businessLine(1), mail(1, "alpha.example", "a1"), ptr(2, provider), businessLine(2), mail(2, "beta.example", "b1"), ptr(3, provider)],
      facts,
    );
    expect([named(rows, 1), named(rows, 2), named(rows, 3)]).toEqual([null, null, null]);
    // forms of the domain itself beside another organisation's keep it an organisation's (a guest's form)
    expect(named(identitiesOfRange([ptr(1, provider), mail(1, "alpha.example", "a1"), ptr(3, provider), mail(3, provider, "staff")], facts), 3)).toBe(provider);
  });

  it("when a hotel's gateway PTR domain is the only evidence of its unit, then it names nobody (its visitors are guests); a form of the hotel's own domain there names it", () => {
    const hotel = "belvedere-hotel.example";
    expect(HOSPITALITY_WORD.test("belvedere-hotel")).toBe(true);
    expect(named(identitiesOfRange([ptr(5, hotel)], facts), 5)).toBeNull();
    expect(named(identitiesOfRange([ptr(5, hotel), mail(5, hotel, "front-desk")], facts), 5)).toBe(hotel);
    // an organisation's PTR domain without such a word names its unit alone
    expect(named(identitiesOfRange([ptr(5, "belvedere-optics.example")], facts), 5)).toBe("belvedere-optics.example");
  });
});

describe("static lines that read like access lines", () => {
  it(`when ${STATIC_LINE.people} people of one organisation appear at a line that reads dynamic over ${STATIC_LINE.days} days, then it is the organisation's static line`, () => {
    const rows = identitiesOfRange([line(7), mail(7, "office.example", "a", 0, 1), mail(7, "office.example", "b", STATIC_LINE.days)], facts);
    expect(rowOf(rows, 7)).toMatchObject({ guard: null, organizationDomain: "office.example", source: "form_email" });
  });

  it("when the colleagues appear on one day only, or one person over days (a home worker), then the line stays an access line", () => {
    expect(rowOf(identitiesOfRange([line(7), mail(7, "office.example", "a"), mail(7, "office.example", "b")], facts), 7)?.guard).toBe("dynamic_line");
    expect(rowOf(identitiesOfRange([line(7), mail(7, "office.example", "a", 0, 10)], facts), 7)?.guard).toBe("dynamic_line");
  });

  it("when the colleagues are seen at other lines too (a re-dialled line moves its people), then they do not make it static", () => {
    const moving = { ...facts, movingPeople: new Set(["a", "b"]) };
    const rows = identitiesOfRange([line(7), mail(7, "office.example", "a", 0), mail(7, "office.example", "b", STATIC_LINE.days)], moving);
    expect(rowOf(rows, 7)?.guard).toBe("dynamic_line");
  });
});

describe("access operators' line names", () => {
  it.each([
    ["a109-96.lfbn-lyo-1.w87-238.abo.wanadoo.fr", true],
    ["host86-150-12-34.range86-150.btcentralplus.com", true],
    ["p5dc0abcd.dip0.t-ipconnect.de", true],
    ["biz48213.ma.comcastbusiness.net", false],
    ["gw.office.ma.comcastbusiness.net", false],
    ["gw.static.example-telecom.de", false],
    ["kd40917.lyo.pro.wanadoo.fr", false], // a curated access operator's zone for its business customers
    ["dsl-90-1-2-3.pro.wanadoo.fr", true], // ... where an access label still reads dynamic
    ["fw1.office.acme-widgets.com", false],
    ["guest.acme-widgets.com", true], // a network for guests: its people come and go
    ["gast-wlan.static.zeta-werke.de", true],
    ["hotspot.grandplaza-hotel.com", true],
  ])("when a PTR name is %s, then it reads like an access line: %s", (host, expected) => {
    expect(readsLikeDynamicLine(host)).toBe(expected);
  });
});

describe("households", () => {
  const v6: RangeFacts = { ...facts, version: 6 };
  const lan = (n: number) => `2001:db8:7:${n}::/64`;
  const mail6 = (n: number, domain: string, person: string): Evidence => ({ ...mail(0, domain, person), unit: lan(n) });

  it(`when one person's form is the only evidence of a /64, then it names nobody (a household's LAN); ${EMAIL_PEOPLE} colleagues over the /48's /64s name each and their prefix`, () => {
    expect(identitiesOfRange([mail6(1, "office.example", "a")], v6).filter((r) => r.organizationDomain)).toEqual([]);
    const rows = identitiesOfRange([mail6(1, "office.example", "a"), mail6(2, "office.example", "b")], v6);
    expect(rows.filter((r) => r.organizationDomain === "office.example").map((r) => r.prefix)).toEqual([lan(1), lan(2), "2001:db8:7::/62"]);
  });

  it(`when one person's forms, over days, are the only evidence of an IPv4 line, then it names nobody (a home worker, a reassigned line's previous subscriber); ${EMAIL_PEOPLE} colleagues in the /24, or a PTR name marking a business line, name it`, () => {
    expect(rowOf(identitiesOfRange([mail(1, "office.example", "a", 0, 10)], facts), 1)).toMatchObject({ organizationDomain: null, guard: null });
    expect(named(identitiesOfRange([mail(1, "office.example", "a"), mail(2, "office.example", "b")], facts), 1)).toBe("office.example");
    expect(named(identitiesOfRange([businessLine(1), mail(1, "office.example", "a")], facts), 1)).toBe("office.example");
  });

  it.each([
    ["gw.static.example-telecom.de", true],
    ["host44.biz.example-isp.net", true],
    ["rr20931.example-telecombusiness.net", true],
    ["a109-96.lfbn-lyo-1.w87-238.abo.example-telecom.fr", false],
    ["host86-150-12-34.range86-150.example-isp.com", false],
    ["st-198-51-100-7.kmu.example-telecom.ch", true],
    ["kd40917.lyo.pro.example-telecom.fr", true],
    ["kd40917.lyo.example-telecom-pro.fr", true],
    ["promo.example-telecom.fr", false],
    ["catv-198-51-100-7.catv.fixed.example-telecom.hu", false],
  ])("when a PTR name is %s, then it marks a business line: %s", (host, expected) => {
    expect(readsLikeBusinessLine(host)).toBe(expected);
  });
});

describe("rangesOf", () => {
  it("when a network lies within a range, then that range; when it covers several, each of them; when more than 256, none", () => {
    expect(rangesOf("198.51.100.16/28")).toEqual(["198.51.100.0/24"]);
    expect(rangesOf("198.51.100.0/24")).toEqual(["198.51.100.0/24"]);
    expect(rangesOf("198.51.254.0/23")).toEqual(["198.51.254.0/24", "198.51.255.0/24"]);
    expect(rangesOf("198.51.0.0/16")).toHaveLength(256);
    expect(rangesOf("198.51.0.0/16")?.at(-1)).toBe("198.51.255.0/24");
    expect(rangesOf("2001:db8:1:2::/64")).toEqual(["2001:db8:1::/48"]);
    expect(rangesOf("2001:db8:ff00::/47")).toEqual(["2001:db8:ff00::/48", "2001:db8:ff01::/48"]);
    expect(rangesOf("2001:db8:ff00::/40")).toHaveLength(256);
    expect(rangesOf("2001:db8::/32")).toBeUndefined(); // 65,536 /48s
  });
});

describe("usedAroundTheClock", () => {
  /** Visits per UTC hour: `perHour` in each of the hours listed. */
  const visitsAt = (hours: readonly number[], perHour = 1) => Array.from({ length: 24 }, (_, h) => (hours.includes(h) ? perHour : 0));
  const allDay = Array.from({ length: 24 }, (_, h) => h);
  const workingHours = allDay.filter((h) => h >= 7 && h < 19);

  it("when visits are spread over the whole day, then the address is used around the clock (a hotel, a hostel)", () => {
    expect(usedAroundTheClock(visitsAt(allDay))).toBe(true);
  });

  it("when visits come in working hours, whatever the time zone, then it is not: an office", () => {
    expect(usedAroundTheClock(visitsAt(workingHours, 3))).toBe(false);
    // the same office seen from UTC+9: its working hours wrap past midnight UTC
    expect(usedAroundTheClock(visitsAt(workingHours.map((h) => (h + 15) % 24), 3))).toBe(false);
  });

  it("when a hotel's guests visit less at night, the quietest 8 hours holding 13% of the visits, then it is still used around the clock", () => {
    // bench:match seed 12 v6half's hotel after 47 visitor-hours
    expect(usedAroundTheClock([1, 0, 0, 0, 2, 2, 0, 2, 1, 3, 4, 3, 6, 3, 3, 0, 2, 2, 1, 5, 2, 3, 1, 1])).toBe(true);
  });

  it("when an office's people add a few late visits, then it is still an office", () => {
    const office = visitsAt(workingHours, 5);
    for (const h of [21, 23, 2]) office[h] = 1;
    expect(usedAroundTheClock(office)).toBe(false);
  });

  it(`when fewer than ${AROUND_THE_CLOCK.visits} visitor-hours were seen, then nothing is concluded yet`, () => {
    const few = visitsAt(allDay.filter((h) => h % 2 === 0).slice(0, AROUND_THE_CLOCK.visits - 1));
    expect(usedAroundTheClock(few)).toBe(false);
    expect(usedAroundTheClock(visitsAt(allDay.filter((h) => h % 2 === 0)))).toBe(true);
  });
});
