// The network operators' own domains: a curated, sourced list (operator-domains.json) of the large
// access, mobile and hosting operators of the countries the ASN data covers, each with its brands,
// the registrable domains it names its customers' lines and servers under (and its own mail and web
// domains), its AS numbers with their names in @ip-location-db/asn (test/operator-domains.test.ts
// checks each against the shipped data), a PeeringDB reference and how it names its lines. A PTR
// name under one of these domains names the operator, never the visitor behind the line; an
// e-mail address under one is a subscriber's mailbox or an operator employee's, never an office's.
// The identity store adds the operators it learns from PTR statistics (identities.ts).
import { readFileSync } from "node:fs";
import { fromRoot } from "../paths.ts";

export type OperatorKind = "access" | "mobile" | "hosting";

export interface OperatorEntry {
  operator: string;
  kind: OperatorKind;
  /** ISO 3166-1 alpha-2 of the market the entry covers. */
  country: string;
  brands: readonly string[];
  /** Registrable domains (Public Suffix List), lower case. */
  domains: readonly string[];
  /** The operator's AS numbers, each with its name in @ip-location-db/asn. */
  asns: readonly { asn: number; name: string }[];
  /** Where the AS's operator is recorded (PeeringDB). */
  source: string;
  /** How the operator names its lines (the reason its domains name nobody). */
  naming: string;
}

// read from the project root, so that the built service (dist/) finds it too (server/paths.ts)
export const OPERATORS = JSON.parse(readFileSync(fromRoot("server/identity/operator-domains.json"), "utf8")) as readonly OperatorEntry[];

const byDomain = new Map(OPERATORS.flatMap((entry) => entry.domains.map((domain) => [domain, entry] as const)));
const byAsn = new Map(OPERATORS.flatMap((entry) => entry.asns.map(({ asn }) => [asn, entry] as const)));

/** The curated operator whose domain this registrable domain is (lower case, no trailing dot), if any. */
export const operatorOfDomain = (domain: string): OperatorEntry | undefined => byDomain.get(domain.toLowerCase().replace(/\.$/, ""));

/** The curated operator of an AS number, if any. */
export const operatorOfAsn = (asn: number | null | undefined): OperatorEntry | undefined => (asn == null ? undefined : byAsn.get(asn));

/** Whether a registrable domain is a curated operator's own. */
export const isOperatorDomain = (domain: string): boolean => operatorOfDomain(domain) !== undefined;
