// Hosts' domains (server/identity/host-domains.json, read by host-domains.ts, applied by rules.ts):
// each curated entry's shape, and a PTR name under each of its domains naming nobody while a form of
// the domain itself (the host's staff) names it; then the host words of a name, which need no list.
import { describe, expect, it } from "vitest";
import { registrableDomain } from "../server/identity/domain-names.ts";
import { HOSTS, isHostDomain } from "../server/identity/host-domains.ts";
import { isOperatorDomain } from "../server/identity/operator-domains.ts";
import { type Evidence, identitiesOfRange } from "../server/identity/rules.ts";

const AT = new Date("2026-11-01T00:00:00Z");
const facts = { version: 4, operatorDomains: new Set<string>(), movingPeople: new Set<string>(), windowMs: 90 * 86_400_000 } as const;
const evidenceOf = (host: number, kind: Evidence["kind"], domain: string, contributor = ""): Evidence => ({ unit: `198.51.100.${host}/32`, kind, domain, contributor, firstSeenAt: AT, lastSeenAt: AT });
/** The unit's row: what it names and whether it says it is shared. */
const unitOf = (rows: ReturnType<typeof identitiesOfRange>, host: number) => rows.find((r) => r.prefix === `198.51.100.${host}/32`);

describe("host domains", () => {
  it("when the list is read, then no domain belongs to two entries or to an operator, and every entry has a source and a reason", () => {
    const domains = HOSTS.flatMap((entry) => entry.domains);
    expect(new Set(domains).size).toBe(domains.length);
    expect(domains.filter(isOperatorDomain)).toEqual([]);
    expect(HOSTS.filter((entry) => !/^https:\/\//.test(entry.source) || !entry.naming || !entry.brands.length)).toEqual([]);
  });

  it.each(HOSTS.map((entry) => [entry.host, entry] as const))(
    "when %s's domains name a gateway, then the unit names nobody and says it is shared; a form of the domain itself (its staff) names it",
    (_name, entry) => {
      for (const domain of entry.domains) {
        expect(registrableDomain(`gw.${domain}`), domain).toBe(domain);
        expect(isHostDomain(domain)).toBe(true);
        const gateway = evidenceOf(1, "reverse_dns", domain);
        expect(unitOf(identitiesOfRange([gateway], facts), 1), domain).toMatchObject({ organizationDomain: null, shared: true });
        const staff = evidenceOf(2, "form_email", domain, "staff");
        expect(unitOf(identitiesOfRange([gateway, staff], facts), 1)?.organizationDomain, domain).toBe(domain);
      }
    },
  );
});

describe("host words", () => {
  it.each([
    ["northside-coworking.co.uk", null],
    ["harbour-workspace.com", null],
    ["metro-business-centre.de", null],
    ["citypoint-serviced-offices.com", null],
    ["smith-lawoffices.com", "smith-lawoffices.com"],
    ["datahub-analytics.com", "datahub-analytics.com"],
  ])("when a gateway's PTR domain is %s, then its unit names %s", (domain, named) => {
    expect(unitOf(identitiesOfRange([evidenceOf(1, "reverse_dns", domain)], facts), 1)?.organizationDomain).toBe(named);
  });

  it("when a tenant's people, two of them over days, send forms from a workspace's gateway, then the unit is still no tenant's", () => {
    const rows = identitiesOfRange(
      [evidenceOf(1, "reverse_dns", "harbour-workspace.com"), evidenceOf(1, "form_email", "tenant.example", "a"), { ...evidenceOf(1, "form_email", "tenant.example", "b"), lastSeenAt: new Date(AT.getTime() + 3 * 86_400_000) }],
      facts,
    );
    expect(unitOf(rows, 1)).toMatchObject({ organizationDomain: null, shared: true });
  });
});
