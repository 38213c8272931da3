// The real networks the world lives in: ASNs of the labelled set (bench/classify-set.json) with
// their IPv4 ranges from the IP-to-ASN data the service reads (@ip-location-db/asn), and the
// addresses and /24 blocks the world takes from them. Which of them the service types as the
// label says is checked over HTTP (GET /v1/ip-lookup) before the world is built: see match.ts.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { getDomain } from "tldts";
import { loadAsnTable } from "../../server/tracking/ipdata/asn-table.ts";
import { ipOf, v6Value } from "./addresses.ts";
import type { Random } from "./random.ts";

export { ipOf, numberOf } from "./addresses.ts";

export type Role = "business" | "isp" | "mobile" | "hosting";

export interface Network {
  asn: number;
  /** The name in the labelled set. */
  name: string;
  role: Role;
  /** The registrable domain of the organisation's site (the labelled set's source). */
  domain: string;
  /** IPv4 ranges, start and end included, as numbers. */
  ranges: [number, number][];
  addresses: number;
  /** IPv6 ranges of at least a /48, start and end included (empty: the AS announces no IPv6 the world can use). */
  ranges6: [bigint, bigint][];
}

interface Labelled {
  asn: number;
  name: string;
  class: string;
  source: string;
}


/** The site's registrable domain named by a source like "organisation's site aws.amazon.com (…)". */
function siteDomain(source: string): string | undefined {
  const site = /site ([a-z0-9.-]+\.[a-z]{2,})/i.exec(source)?.[1];
  return (site && getDomain(site.toLowerCase(), { allowPrivateDomains: false })) || undefined;
}

/** The labelled ASNs with a site domain and IPv4 ranges, by role. */
export function loadNetworks(): Network[] {
  const set = JSON.parse(readFileSync(new URL("../classify-set.json", import.meta.url), "utf8")) as Labelled[];
  const wanted = new Map<number, Network>();
  for (const entry of set) {
    const domain = siteDomain(entry.source);
    if (!domain || !["business", "isp", "mobile", "hosting"].includes(entry.class)) continue;
    wanted.set(entry.asn, { asn: entry.asn, name: entry.name, role: entry.class as Role, domain, ranges: [], addresses: 0, ranges6: [] });
  }
  eachIpv6Range((asn, start, end) => {
    const network = wanted.get(asn);
    if (network && end - start >= SLASH48 - 1n) network.ranges6.push([start, end]);
  });
  loadAsnTable().eachIpv4Range((asn, start, end) => {
    const network = wanted.get(asn);
    if (!network) return;
    network.ranges.push([start, end]);
    network.addresses += end - start + 1;
  });
  return [...wanted.values()].filter((n) => n.addresses > 0);
}

const SLASH48 = 1n << 80n;

/** The data package's IPv6 ranges (its CSV: `start,end,asn,name`); the ASN table keeps only their sizes. */
function eachIpv6Range(range: (asn: number, start: bigint, end: bigint) => void): void {
  const file = createRequire(import.meta.url).resolve("@ip-location-db/asn/asn-ipv6.csv");
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const [start, end, asn] = line.split(",", 3);
    if (start && end && asn) range(Number(asn), v6Value(start), v6Value(end));
  }
}

/** Candidates for one role in the order the world tries them (the service's type decides which it keeps). */
export function candidates(networks: readonly Network[], role: Role, random: Random): Network[] {
  const ofRole = networks.filter((n) => n.role === role);
  const largest = (list: Network[], count: number) => [...list].sort((a, b) => b.addresses - a.addresses || a.asn - b.asn).slice(0, count);
  switch (role) {
    case "business": {
      // one AS per organisation: the same name or site twice would be one lead
      const seen = new Set<string>();
      return random.shuffled(ofRole).filter((n) => {
        const keys = [n.domain, n.name.toLowerCase()];
        if (keys.some((k) => seen.has(k))) return false;
        keys.forEach((k) => seen.add(k));
        return n.ranges.some(([s, e]) => e - s >= 2);
      });
    }
    case "isp":
      // large national operators: where small companies' static lines and households are
      return random.shuffled(largest(ofRole, 12));
    case "mobile":
      return random.shuffled(largest(ofRole, 8));
    case "hosting": {
      // the large clouds: the largest AS of each of Amazon, Google and Microsoft
      const clouds = ["amazon", "google", "microsoft"].flatMap((provider) => largest(ofRole.filter((n) => n.name.toLowerCase().includes(provider)), 1));
      return random.shuffled(clouds);
    }
  }
}

/** An address of the network that is not a /24's first or last (.0, .255). */
export function addressIn(network: Network, random: Random): string {
  const usable = network.ranges.filter(([s, e]) => e - s >= 2);
  for (let tries = 0; tries < 100; tries++) {
    const [start, end] = random.pick(usable);
    const n = random.int(start, end);
    if ((n & 255) !== 0 && (n & 255) !== 255) return ipOf(n);
  }
  throw new Error(`AS${network.asn}: no usable address found`);
}

/** `count` distinct /24 blocks (their first address as a number) wholly inside the network's ranges. */
export function blocksIn(network: Network, count: number, random: Random, taken: Set<number>): number[] {
  const spans = network.ranges
    .map(([s, e]) => [Math.ceil(s / 256), Math.floor((e + 1) / 256) - 1] as const)
    .filter(([first, last]) => last >= first);
  if (!spans.length) throw new Error(`AS${network.asn}: no whole /24 in its ranges`);
  const blocks: number[] = [];
  for (let tries = 0; blocks.length < count && tries < count * 50; tries++) {
    const [first, last] = random.pick(spans);
    const block = random.int(first, last) * 256;
    if (!taken.has(block)) {
      taken.add(block);
      blocks.push(block);
    }
  }
  if (blocks.length < count) throw new Error(`AS${network.asn}: found ${blocks.length} of ${count} free /24 blocks`);
  return blocks;
}

/** How many /48s the network's IPv6 ranges hold. */
export function slash48Count(network: Network): number {
  return network.ranges6.reduce((n, [start, end]) => n + Number((end + 1n) / SLASH48 - (start + SLASH48 - 1n) / SLASH48), 0);
}

/** A free /48 prefix (its first address) wholly inside the network's IPv6 ranges; undefined when none is found. */
export function freeSlash48(network: Network, random: Random, taken: Set<bigint>): bigint | undefined {
  for (let tries = 0; network.ranges6.length && tries < 50; tries++) {
    const [start, end] = random.pick(network.ranges6);
    const first = (start + SLASH48 - 1n) / SLASH48;
    const span = Number((end + 1n) / SLASH48 - first);
    if (span < 1) continue;
    const prefix = (first + BigInt(Math.floor(random.next() * span))) * SLASH48;
    if (!taken.has(prefix)) {
      taken.add(prefix);
      return prefix;
    }
  }
  return undefined;
}
