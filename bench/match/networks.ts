// The real networks the world lives in: ASNs of the labelled set (bench/classify-set.json) with
// their IPv4 ranges from the IP-to-ASN data the service reads (@ip-location-db/asn), and the
// addresses and /24 blocks the world takes from them. Which of them the service types as the
// label says is checked over HTTP (GET /v1/ip-lookup) before the world is built: see match.ts.
import { readFileSync } from "node:fs";
import { getDomain } from "tldts";
import { loadAsnTable } from "../../server/tracking/ipdata/asn-table.ts";
import type { Random } from "./random.ts";

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
}

interface Labelled {
  asn: number;
  name: string;
  class: string;
  source: string;
}

export const ipOf = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
export const numberOf = (ip: string) => ip.split(".").reduce((n, octet) => n * 256 + Number(octet), 0);

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
    wanted.set(entry.asn, { asn: entry.asn, name: entry.name, role: entry.class as Role, domain, ranges: [], addresses: 0 });
  }
  loadAsnTable().eachIpv4Range((asn, start, end) => {
    const network = wanted.get(asn);
    if (!network) return;
    network.ranges.push([start, end]);
    network.addresses += end - start + 1;
  });
  return [...wanted.values()].filter((n) => n.addresses > 0);
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
