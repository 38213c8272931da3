// The configuration of in-process test services: the service's own schema (server/config.ts) with
// hermetic settings, so that nothing here keeps defaults of its own either.
import { isIP } from "node:net";
import os from "node:os";
import path from "node:path";
import { type Config, loadConfig } from "../../server/config.ts";
import { newEncryptionKey } from "../../server/security/secret-box.ts";

/**
 * DNS that stays on this machine: no reverse DNS of visitors, and tracking-domain look-ups to a
 * closed loopback port (they fail at once instead of asking the network). Unset, both would
 * ask the system's resolver, which is not on loopback.
 */
export const HERMETIC_DNS_ENV: Readonly<Record<string, string>> = {
  TRACKING_DNS_SERVERS: "off",
  CTD_DNS_SERVERS: "127.0.0.1:9",
};

/**
 * The DNS above; add/update of a tracking domain wait one second; invitations may be resent at
 * once; mail files and a development key (none is needed: a key is given) beside a temporary DATA_DIR.
 */
export const HERMETIC_ENV: Readonly<Record<string, string>> = {
  ...HERMETIC_DNS_ENV,
  CTD_ADD_WAIT_SECONDS: "1",
  INVITE_RESEND_SECONDS: "0",
  DATA_DIR: path.join(os.tmpdir(), "lead-intel-test", "pglite"),
};

/** The configuration of `env` over the hermetic settings, with a fresh CTD_ENCRYPTION_KEY. */
export function testConfig(env: Record<string, string | undefined> = {}): Config {
  return loadConfig({ ...HERMETIC_ENV, CTD_ENCRYPTION_KEY: newEncryptionKey().toString("hex"), ...env });
}

/** A resolver entry (`ip`, `ip:port`, `[ipv6]:port`) on 127.0.0.0/8 or ::1. */
export function isLoopbackServer(server: string): boolean {
  const host = server.startsWith("[") ? server.slice(1, server.indexOf("]")) : server.split(":").length === 2 ? server.split(":")[0]! : server;
  if (isIP(host) === 4) return host.startsWith("127.");
  return isIP(host) === 6 && /^(::1|::ffff:127\.[\d.]+)$/i.test(host);
}

/** What of `config` would send DNS queries off this machine (none: an empty list). */
export function dnsOffMachine(config: Config): string[] {
  const resolvers = [
    { what: "reverse DNS (TRACKING_DNS_SERVERS)", enabled: config.tracking.reverseDns.enabled, servers: config.tracking.reverseDns.servers },
    { what: "tracking-domain DNS (CTD_DNS_SERVERS)", enabled: true, servers: config.trackingDomains.dns.servers },
  ];
  return resolvers.flatMap(({ what, enabled, servers }) => {
    if (!enabled) return [];
    if (!servers.length) return [`${what} would ask the system's resolver`];
    return servers.filter((server) => !isLoopbackServer(server)).map((server) => `${what} names ${server}, not on loopback`);
  });
}

/** Throws when `config` would send DNS queries off this machine. */
export function assertDnsOnMachine(config: Config, whose: string): void {
  const problems = dnsOffMachine(config);
  if (problems.length) throw new Error(`${whose}: tests and benchmarks send no traffic off this machine, but ${problems.join("; ")} (use TRACKING_DNS_SERVERS=off or a DNS server of the test's own on 127.0.0.1: test/support/dns-server.ts)`);
}

/**
 * The environment of a child process that runs the service, the writer or an operator command
 * (server/main.ts, scripts/*.ts): the hermetic DNS, then `env`; refused when `env` names a DNS
 * server off this machine or would leave one to the system.
 */
export function hermeticEnv(env: Record<string, string | undefined>): Record<string, string> {
  const merged = Object.fromEntries(Object.entries({ ...HERMETIC_DNS_ENV, ...env }).filter((entry): entry is [string, string] => entry[1] !== undefined));
  const dns = loadConfig({ TRACKING_DNS_SERVERS: merged.TRACKING_DNS_SERVERS, CTD_DNS_SERVERS: merged.CTD_DNS_SERVERS });
  assertDnsOnMachine(dns, "a child process");
  return merged;
}
