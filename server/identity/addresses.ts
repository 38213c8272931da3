// The address arithmetic of identities (ipaddr.js): the unit evidence is kept for (an IPv4
// address, an IPv6 /64: a site's LAN, whose hosts change their own 64 bits), the range identities
// are computed in (IPv4 /24, IPv6 /48), the prefixes between them that an identity may span, and
// the networks partners declare. Every prefix is CIDR text made here, one canonical form (IPv6 as
// RFC 5952), so that stored keys compare as plain text.
import { isIP } from "node:net";
import ipaddr from "ipaddr.js";

export type IpVersion = 4 | 6;

/** Prefix lengths of a unit and of a range, per IP version. */
export const UNIT_LENGTH: Record<IpVersion, number> = { 4: 32, 6: 64 };
export const RANGE_LENGTH: Record<IpVersion, number> = { 4: 24, 6: 48 };

/** Declarable prefix lengths, per IP version (the contract of declareNetwork). */
const DECLARABLE: Record<IpVersion, { min: number; max: number }> = { 4: { min: 16, max: 32 }, 6: { min: 32, max: 128 } };

export interface AddressKeys {
  version: IpVersion;
  /** The unit: `198.51.100.7/32`, `2001:db8:1:2::/64`. */
  unit: string;
  /** Its range: `198.51.100.0/24`, `2001:db8:1::/48`. */
  range: string;
}

/** An address (IPv4-mapped IPv6 as its IPv4), or undefined for anything else. */
function parse(ip: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const text = ip.trim();
  return isIP(text) ? ipaddr.process(text) : undefined;
}

const versionOf = (address: ipaddr.IPv4 | ipaddr.IPv6): IpVersion => (address.kind() === "ipv4" ? 4 : 6);

/** The bytes with every bit after `length` cleared. */
function masked(bytes: readonly number[], length: number): number[] {
  return bytes.map((byte, i) => {
    const kept = Math.min(8, Math.max(0, length - i * 8));
    return kept === 8 ? byte : byte & ((0xff << (8 - kept)) & 0xff);
  });
}

function cidrOf(bytes: readonly number[], length: number): string {
  const address = ipaddr.fromByteArray(masked(bytes, length));
  return `${address.kind() === "ipv6" ? (address as ipaddr.IPv6).toRFC5952String() : address.toString()}/${length}`;
}

/** The unit and range of an address; undefined when it is not one. */
export function addressKeys(ip: string): AddressKeys | undefined {
  const address = parse(ip);
  if (!address) return undefined;
  const version = versionOf(address);
  const bytes = address.toByteArray();
  return { version, unit: cidrOf(bytes, UNIT_LENGTH[version]), range: cidrOf(bytes, RANGE_LENGTH[version]) };
}

/** The prefix length of CIDR text. */
export const prefixLength = (cidr: string): number => Number(cidr.slice(cidr.lastIndexOf("/") + 1));

/** Whether `cidr` holds `unit` (both CIDR text of one IP version). */
export function holds(cidr: string, unit: string): boolean {
  const [network, length] = ipaddr.parseCIDR(cidr);
  const [address] = ipaddr.parseCIDR(unit);
  return network.kind() === address.kind() && address.match(network, length);
}

/** The smallest prefix holding every unit (CIDR text of one range), e.g. .17 and .22 -> .16/29. */
export function smallestPrefixHolding(units: readonly string[]): string {
  const byteLists = units.map((unit) => ipaddr.parseCIDR(unit)[0].toByteArray());
  const first = byteLists[0]!;
  let length = Math.min(...units.map(prefixLength));
  while (length > 0 && !byteLists.every((bytes) => cidrOf(bytes, length) === cidrOf(first, length))) length--;
  return cidrOf(first, length);
}

/** A declared network in canonical form, or what is wrong with it. */
export function declaredNetwork(text: string): { cidr: string } | { problem: string } {
  const slash = text.lastIndexOf("/");
  const written = text.slice(0, slash);
  const address = slash > 0 ? parse(written) : undefined;
  // the prefix length as the address's decimal numbers: no leading zeros (`/024` is refused as `01.2.3.0` is)
  if (!address || !/^(0|[1-9]\d{0,2})$/.test(text.slice(slash + 1))) return { problem: "must be a network in CIDR notation, such as 203.0.113.0/28" };
  const version = versionOf(address);
  // an IPv4-mapped IPv6 network is its IPv4 network: ::ffff:203.0.113.0/124 is 203.0.113.0/28
  const length = Number(text.slice(slash + 1)) - (version === 4 && isIP(written) === 6 ? 96 : 0);
  const { min, max } = DECLARABLE[version];
  if (length < min || length > max) return { problem: `must have a prefix length of ${min} to ${max} for IPv${version}` };
  const bytes = address.toByteArray();
  const cidr = cidrOf(bytes, length);
  if (masked(bytes, length).some((byte, i) => byte !== bytes[i])) return { problem: `must not have bits set after the prefix (its network is ${cidr})` };
  return { cidr };
}

/**
 * The most ranges a network is looked up by through a range index (evidence, pending events):
 * every declarable IPv4 network (a /16 covers 256 /24s) and IPv6 ones of a /40 or narrower; a
 * wider one is compared with the account's rows one by one.
 */
const INDEXED_RANGES = 256;

/**
 * The ranges (IPv4 /24, IPv6 /48) a network lies in or covers, as stored in evidence and pending
 * events' `range`: one for a network within a range, each one for a wider network, or undefined
 * when it covers more than INDEXED_RANGES (a wide IPv6 declaration: a /32 covers 65,536 /48s).
 */
export function rangesOf(cidr: string): string[] | undefined {
  const [network, length] = ipaddr.parseCIDR(cidr);
  const rangeLength = RANGE_LENGTH[versionOf(network)];
  const bytes = network.toByteArray();
  if (length >= rangeLength) return [cidrOf(bytes, rangeLength)];
  const count = 2 ** (rangeLength - length);
  if (count > INDEXED_RANGES) return undefined;
  // the range's number is the address's first rangeLength bits (at most 48: exact in a double)
  const rangeBytes = rangeLength / 8;
  const first = bytes.slice(0, rangeBytes).reduce((n, byte) => n * 256 + byte, 0);
  return Array.from({ length: count }, (_, i) => {
    const number = first + i;
    const prefix = Array.from({ length: rangeBytes }, (_, j) => Math.floor(number / 256 ** (rangeBytes - 1 - j)) % 256);
    return cidrOf([...prefix, ...bytes.slice(rangeBytes)], rangeLength);
  });
}

/** The first host of a prefix (its network address + 1: `2001:db8:1:2::/64` -> `2001:db8:1:2::1`), where a site's gateway usually is. */
export function gatewayOf(cidr: string): string {
  const [network] = ipaddr.parseCIDR(cidr);
  const bytes = network.toByteArray();
  bytes[bytes.length - 1]! |= 1;
  const address = ipaddr.fromByteArray(bytes);
  return address.kind() === "ipv6" ? (address as ipaddr.IPv6).toRFC5952String() : address.toString();
}
