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
  ["2002::", 16], // 6to4: embeds an IPv4 address
] as const) {
  nonPublic.addSubnet(prefix, bits, "ipv6");
}

/** False for private, loopback, link-local and other non-routable addresses (IPv4-mapped IPv6 included). */
export function isPublicAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 0) return false;
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped) return isPublicAddress(mapped[1]!);
  }
  return !nonPublic.check(address, family === 4 ? "ipv4" : "ipv6");
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
  dnsLookup(hostname, { family: options.family as number | undefined, hints: options.hints, all: true }, (error, addresses) => {
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
  const bare = host.replace(/^\[|\]$/g, "");
  const addresses = net.isIP(bare) ? [{ address: bare }] : await dnsPromises.lookup(bare, { all: true });
  const refused = addresses.find((a) => !isPublicAddress(a.address));
  if (refused) throw new NonPublicAddressError(bare, refused.address);
}

/** Literal IP hosts never reach `lookup`: check them before connecting. */
function checkLiteral(host: string | null | undefined): void {
  const bare = (host ?? "").replace(/^\[|\]$/g, "");
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
