// The organisation domains the service knows. The ASN data set has AS names only, no domains, and
// a domain is never guessed from a name: this small curated list is the whole of it (each entry
// checked against the data set's name for its ASNs by test/tracking-resolution.test.ts).
export interface KnownOrganization {
  name: string;
  domain: string;
  /** ISO 3166-1 alpha-2 of the headquarters. */
  country: string;
  asns: readonly number[];
}

export const KNOWN_ORGANIZATIONS: readonly KnownOrganization[] = [
  { name: "Apple Inc.", domain: "apple.com", country: "US", asns: [714] },
  { name: "Facebook, Inc.", domain: "facebook.com", country: "US", asns: [32934] },
  { name: "Netflix Streaming Services Inc.", domain: "netflix.com", country: "US", asns: [2906] },
  { name: "GitHub, Inc.", domain: "github.com", country: "US", asns: [36459] },
  { name: "Massachusetts Institute of Technology", domain: "mit.edu", country: "US", asns: [3] },
  { name: "Stanford University", domain: "stanford.edu", country: "US", asns: [32] },
  { name: "University of California at Berkeley", domain: "berkeley.edu", country: "US", asns: [25] },
  { name: "University of Texas at Austin", domain: "utexas.edu", country: "US", asns: [18] },
];

const byAsn = new Map(KNOWN_ORGANIZATIONS.flatMap((org) => org.asns.map((asn) => [asn, org] as const)));
const byDomain = new Map(KNOWN_ORGANIZATIONS.map((org) => [org.domain, org] as const));

export const knownOrganizationOfAsn = (asn: number) => byAsn.get(asn);
export const knownOrganizationOfDomain = (domain: string) => byDomain.get(domain.toLowerCase().replace(/\.$/, ""));
