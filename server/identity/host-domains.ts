// Hosts' own domains: a curated list (host-domains.json) of the large coworking and serviced-office
// operators, hotel chains and guest Wi-Fi providers, each with its brands, the registrable domains
// its networks are named under, its website (the source) and why its name is no visitor's: their
// networks carry members, tenants or guests of many organisations. A PTR name under one of these
// domains names nobody (rules.ts), unless a form of the range names the domain itself (its staff).
// The identity store adds the hosts it learns from forms (HOST_TENANTS) and the rules the host
// words (HOST_WORD, HOSPITALITY_WORD). From knowledge, not checked online: each entry's test
// (test/host-domains.test.ts) checks its shape and that the rule applies to it.
import { readFileSync } from "node:fs";
import { fromRoot } from "../paths.ts";

export type HostKind = "coworking" | "serviced" | "hotel" | "guest-wifi";

export interface HostEntry {
  host: string;
  kind: HostKind;
  brands: readonly string[];
  /** Registrable domains (Public Suffix List), lower case. */
  domains: readonly string[];
  /** The host's website. */
  source: string;
  /** What its network carries (the reason its domains name nobody). */
  naming: string;
}

// read from the project root, so that the built service (dist/) finds it too (server/paths.ts)
export const HOSTS = JSON.parse(readFileSync(fromRoot("server/identity/host-domains.json"), "utf8")) as readonly HostEntry[];

const byDomain = new Map(HOSTS.flatMap((entry) => entry.domains.map((domain) => [domain, entry] as const)));

/** Whether a registrable domain is a curated host's own. */
export const isHostDomain = (domain: string): boolean => byDomain.has(domain.toLowerCase().replace(/\.$/, ""));
