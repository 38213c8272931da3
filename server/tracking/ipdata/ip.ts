// IP addresses as numbers: IPv4 as a 32-bit unsigned integer, IPv6 as four of them (most
// significant first), so that the range tables compare plain numbers (no strings, no BigInt).
// Also the masking rule.
import { isIPv4, isIPv6 } from "node:net";

export type ParsedIp = { version: 4; value: number } | { version: 6; words: [number, number, number, number] };

export function parseIpv4(text: string): number | undefined {
  if (!isIPv4(text)) return undefined;
  const [a, b, c, d] = text.split(".").map(Number) as [number, number, number, number];
  return ((a << 24) >>> 0) + (b << 16) + (c << 8) + d;
}

/** Eight 16-bit groups of an IPv6 address (`::` expanded, a trailing dotted IPv4 part converted). */
function ipv6Groups(text: string): number[] {
  let address = text.split("%")[0]!;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(address);
  if (dotted) {
    const v4 = parseIpv4(dotted[1]!)!;
    address = address.slice(0, -dotted[1]!.length) + `${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const [head, tail] = address.split("::") as [string, string | undefined];
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const missing = tail === undefined ? 0 : 8 - left.length - right.length;
  return [...left, ...Array<string>(missing).fill("0"), ...right].map((g) => parseInt(g, 16));
}

/**
 * An address as proxies write it in X-Forwarded-For, without its port: "17.253.144.34:443" and
 * "[2620:149:a44::33]:443" are the addresses before the port; anything else is returned as it is.
 */
export function withoutPort(text: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(text);
  if (bracketed) return bracketed[1]!;
  const v4WithPort = /^(\d+\.\d+\.\d+\.\d+):\d+$/.exec(text);
  return v4WithPort ? v4WithPort[1]! : text;
}

/** An IPv4-mapped IPv6 address (`::ffff:1.2.3.4`) is the IPv4 address it maps. */
export function parseIp(text: string): ParsedIp | undefined {
  const v4 = parseIpv4(text);
  if (v4 !== undefined) return { version: 4, value: v4 };
  if (!isIPv6(text)) return undefined;
  const g = ipv6Groups(text);
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return { version: 4, value: g[6]! * 65536 + g[7]! };
  const word = (i: number) => g[i]! * 65536 + g[i + 1]!;
  return { version: 6, words: [word(0), word(2), word(4), word(6)] };
}

/**
 * The address as stored when a dataset allows masking: IPv4 without its last octet (a.b.c.0),
 * IPv6 reduced to its /48 prefix (a:b:c::). Undefined for something that is not an address.
 */
export function maskIp(text: string): string | undefined {
  const ip = parseIp(text);
  if (!ip) return undefined;
  if (ip.version === 4) return `${ip.value >>> 24}.${(ip.value >>> 16) & 255}.${(ip.value >>> 8) & 255}.0`;
  const [w0, w1] = ip.words;
  return `${[w0 >>> 16, w0 & 0xffff, w1 >>> 16].map((g) => g.toString(16)).join(":")}::`;
}
