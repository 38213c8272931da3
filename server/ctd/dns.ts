// The DNS check of a custom tracking domain: its CNAME record must point at our tracking host.
// Only CNAME look-ups are made here; nothing connects to what they return.
import { promises as dns } from "node:dns";

export interface DnsSettings {
  /** Resolver servers (`ip` or `ip:port`); empty means the system's resolvers. */
  servers: readonly string[];
  /** Per-try timeout of one look-up. */
  timeoutMs: number;
  tries: number;
}

export type CnameOutcome =
  /** The CNAME points at the target. */
  | { kind: "ok"; message: string }
  /** The customer has to create or change a record: `message` says which. */
  | { kind: "needs_record"; message: string }
  /** The look-up itself failed (timeout, server failure): try again later. */
  | { kind: "lookup_failed"; message: string };

/** The record the customer creates, in words. */
export function recordInstruction(host: string, target: string): string {
  return `Create a CNAME record for ${host} pointing to ${target}`;
}

const normalise = (name: string) => name.toLowerCase().replace(/\.$/, "");

/** Node's resolver error codes that mean "there is no such record" rather than "could not ask". */
const absent = new Set(["ENOTFOUND", "ENODATA"]);

export function cnameChecker(settings: DnsSettings) {
  const resolver = new dns.Resolver({ timeout: settings.timeoutMs, tries: settings.tries });
  if (settings.servers.length) resolver.setServers([...settings.servers]);

  return async function checkCname(host: string, target: string): Promise<CnameOutcome> {
    const instruction = recordInstruction(host, target);
    let names: string[];
    try {
      names = await resolver.resolveCname(host);
    } catch (error) {
      const code = (error as { code?: string }).code ?? "unknown";
      if (code === "ENODATA") {
        return { kind: "needs_record", message: `${host} exists but has no CNAME record. ${instruction} (remove its other records first: a CNAME cannot coexist with them).` };
      }
      if (absent.has(code)) return { kind: "needs_record", message: `No DNS record exists for ${host}. ${instruction}.` };
      return {
        kind: "lookup_failed",
        message: `The DNS look-up of ${host} failed (${code}); this is usually temporary: try again in a few minutes, and check your DNS provider if it persists.`,
      };
    }
    const found = names.map(normalise);
    if (found.includes(normalise(target))) return { kind: "ok", message: `${host} is a CNAME to ${target}.` };
    return {
      kind: "needs_record",
      message: `${host} is a CNAME to ${found.join(", ")}, not to ${target}. Change the record to point to ${target}.`,
    };
  };
}

export type CnameCheck = ReturnType<typeof cnameChecker>;
