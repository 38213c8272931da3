// Outbound connections of the certificate machinery go only to public addresses. The ACME
// directory names the URLs we call next, and DNS says where a name points: neither may steer
// the service into our own network (SSRF). Tests, whose ACME server runs on loopback, switch
// the guard off with an explicit configuration flag that production refuses.
import { lookup as dnsLookup, promises as dnsPromises } from "node:dns";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import type { Duplex } from "node:stream";
import { rootCertificates } from "node:tls";

const nonPublic = new net.BlockList();
for (const [prefix, bits] of [
  ["0.0.0.0", 8], // "this" network
  ["10.0.0.0", 8], // private
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8], // loopback
  ["169.254.0.0", 16], // link-local (cloud metadata lives here)
  ["172.16.0.0", 12], // private
  ["192.0.0.0", 24], // IETF protocol assignments
  ["192.168.0.0", 16], // private
  ["198.18.0.0", 15], // benchmarking
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved and broadcast
] as const) {
  nonPublic.addSubnet(prefix, bits, "ipv4");
}
for (const [prefix, bits] of [
  ["::", 128], // unspecified
  ["::1", 128], // loopback
  ["fc00::", 7], // unique local
  ["fe80::", 10], // link-local
  ["ff00::", 8], // multicast
  ["64:ff9b::", 96], // NAT64: embeds an IPv4 address
  ["64:ff9b:1::", 48], // NAT64 for local use (RFC 8215)
  ["2002::", 16], // 6to4: embeds an IPv4 address
] as const) {
  nonPublic.addSubnet(prefix, bits, "ipv6");
}

/** The 8 groups (16 bits each) of an IPv6 address, a trailing dotted IPv4 part included. */
function ipv6Groups(address: string): number[] {
  let text = address.split("%")[0]!;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const groups = (part: string | undefined) => (part ? part.split(":").map((group) => parseInt(group, 16)) : []);
  const [head, tail] = text.split("::");
  const before = groups(head);
  const after = groups(tail);
  return [...before, ...new Array<number>(8 - before.length - after.length).fill(0), ...after];
}

const ipv4Of = (high: number, low: number) => [high >> 8, high & 0xff, low >> 8, low & 0xff].join(".");

/**
 * The IPv4 addresses an IPv6 address embeds, by the forms that carry one: IPv4-compatible
 * (`::a.b.c.d`), IPv4-mapped (`::ffff:a.b.c.d`), IPv4-translated (`::ffff:0:a.b.c.d`), NAT64
 * (`64:ff9b::a.b.c.d`), 6to4 (`2002:AABB:CCDD::`) and Teredo (`2001:0:server:...:~client`).
 */
export function embeddedIpv4(address: string): string[] {
  const g = ipv6Groups(address);
  const zeros = (from: number, to: number) => g.slice(from, to).every((group) => group === 0);
  if (zeros(0, 6) || (zeros(0, 5) && g[5] === 0xffff) || (zeros(0, 4) && g[4] === 0xffff && g[5] === 0)) return [ipv4Of(g[6]!, g[7]!)];
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return [ipv4Of(g[6]!, g[7]!)];
  if (g[0] === 0x2002) return [ipv4Of(g[1]!, g[2]!)];
  if (g[0] === 0x2001 && g[1] === 0) return [ipv4Of(g[2]!, g[3]!), ipv4Of(g[6]! ^ 0xffff, g[7]! ^ 0xffff)];
  return [];
}

/**
 * False for private, loopback, link-local and other non-routable addresses, and for an IPv6
 * address that embeds one of them (every IPv4-embedding form, however it is spelt).
 */
export function isPublicAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 0) return false;
  if (family === 6 && embeddedIpv4(address).some((ipv4) => !isPublicAddress(ipv4))) return false;
  return !nonPublic.check(address, family === 4 ? "ipv4" : "ipv6");
}

/** The one spelling of a host the guard judges: no brackets, lower case, no trailing dot (`LocalHost.` is `localhost`). */
export function normalHost(host: string): string {
  return host.replace(/^\[|\]$/g, "").toLowerCase().replace(/\.$/, "");
}

/** `localhost` and its subdomains are loopback by definition (RFC 6761), whatever DNS says. */
export function isLoopbackName(host: string): boolean {
  const name = normalHost(host);
  return name === "localhost" || name.endsWith(".localhost");
}

export class NonPublicAddressError extends Error {
  // The code of an aborted connection: acme-client retries every other network error (for over a
  // minute), and retrying a refusal is pointless.
  readonly code = "ECONNABORTED";
  constructor(host: string, address: string) {
    super(`refusing to connect to ${host}: it is or resolves to the non-public address ${address}`);
  }
}

type LookupAll = (error: NodeJS.ErrnoException | null, addresses: { address: string; family: number }[]) => void;
type LookupOne = (error: NodeJS.ErrnoException | null, address: string, family: number) => void;

/** A `lookup` for sockets that fails when any address of the name is not public. */
function guardedLookup(
  hostname: string,
  options: { all?: boolean; family?: number | string; hints?: number },
  callback: LookupAll | LookupOne,
): void {
  const name = normalHost(hostname);
  if (isLoopbackName(name)) {
    const refused = new NonPublicAddressError(hostname, "127.0.0.1");
    if (options.all) return (callback as LookupAll)(refused, []);
    return (callback as LookupOne)(refused, "", 0);
  }
  dnsLookup(name, { family: options.family as number | undefined, hints: options.hints, all: true }, (error, addresses) => {
    const refused = error ? undefined : addresses.find((a) => !isPublicAddress(a.address));
    const failure = error ?? (refused ? new NonPublicAddressError(hostname, refused.address) : null);
    if (options.all) return (callback as LookupAll)(failure, failure ? [] : addresses);
    const first = addresses?.[0];
    (callback as LookupOne)(failure, failure || !first ? "" : first.address, first?.family ?? 0);
  });
}

/**
 * Fails unless every address of `host` (a name or a literal IP) is public. Checked before a
 * request is sent, where the error reaches the caller as it is; the agents check again at
 * connection time, against a name that resolves differently the second time.
 */
export async function assertPublicHost(host: string): Promise<void> {
  const bare = normalHost(host);
  if (isLoopbackName(bare)) throw new NonPublicAddressError(host, "127.0.0.1");
  const addresses = net.isIP(bare) ? [{ address: bare }] : await dnsPromises.lookup(bare, { all: true });
  const refused = addresses.find((a) => !isPublicAddress(a.address));
  if (refused) throw new NonPublicAddressError(bare, refused.address);
}

/** Literal IP hosts never reach `lookup`: check them before connecting. */
function checkLiteral(host: string | null | undefined): void {
  const bare = normalHost(host ?? "");
  if (net.isIP(bare) && !isPublicAddress(bare)) throw new NonPublicAddressError(bare, bare);
}

class GuardedHttpAgent extends http.Agent {
  override createConnection(options: http.ClientRequestArgs, callback?: (err: Error | null, stream: Duplex) => void) {
    checkLiteral(options.host ?? options.hostname);
    return super.createConnection({ ...options, lookup: guardedLookup as net.LookupFunction }, callback);
  }
}

class GuardedHttpsAgent extends https.Agent {
  override createConnection(options: https.RequestOptions, callback?: (err: Error | null, stream: Duplex) => void) {
    checkLiteral(options.host ?? options.hostname);
    return super.createConnection({ ...options, lookup: guardedLookup as net.LookupFunction }, callback);
  }
}

export interface AgentOptions {
  /** Extra certificate authorities to trust (PEM), e.g. a test ACME server's. */
  ca?: string;
  /** Test-only: connect to non-public addresses too. */
  allowPrivateAddresses: boolean;
}

/** The http and https agents every ACME request goes through. */
export function outboundAgents({ ca, allowPrivateAddresses }: AgentOptions): { httpAgent: http.Agent; httpsAgent: https.Agent } {
  // Added to the default roots, not instead of them.
  const tls = ca ? { ca: [...rootCertificates, ca] } : {};
  if (allowPrivateAddresses) return { httpAgent: new http.Agent(), httpsAgent: new https.Agent(tls) };
  return { httpAgent: new GuardedHttpAgent(), httpsAgent: new GuardedHttpsAgent(tls) };
}
