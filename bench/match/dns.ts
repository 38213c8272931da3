// The world's reverse DNS on loopback: the tests' DNS server (test/support/dns-server.ts, dns2)
// answering the world's PTR names, and each name's A record back to its address (forward-confirmed,
// as real operators' names are). Every other name: NXDOMAIN. The service is pointed at it with
// TRACKING_DNS_SERVERS, so no question leaves this machine.
import { reverseName, startDnsServer, type TestDnsServer } from "../../test/support/dns-server.ts";

export type WorldDns = TestDnsServer;

export const startWorldDns = (): Promise<WorldDns> => startDnsServer();

/** Publishes the world's PTR names (address -> host name). */
export function publishPtrNames(dns: WorldDns, ptr: ReadonlyMap<string, string>): void {
  for (const [ip, host] of ptr) {
    dns.zone.ptr.set(reverseName(ip), host);
    dns.zone.a.set(host, ip);
  }
}

/** PTR questions the server was asked so far. */
export const ptrQuestions = (dns: WorldDns) => dns.asked.filter((q) => q.type === "PTR").length;
