// A small authoritative DNS server on loopback for the tests: the service's CNAME checks and
// pebble's look-ups (its -dnsserver flag) both ask it, so a test decides what DNS says.
import dns2 from "dns2";

const { Packet } = dns2;
/** Response codes (present at run time, missing from dns2's type declarations). */
const RCODE = (Packet as unknown as { RCODE: { SERVFAIL: number; NXDOMAIN: number } }).RCODE;

export interface Zone {
  /** name -> CNAME target */
  cname: Map<string, string>;
  /** name -> IPv4 address */
  a: Map<string, string>;
  /** reverse name (`4.3.2.1.in-addr.arpa`) -> PTR host name; `setPtr` fills it from an address. */
  ptr: Map<string, string>;
  /** Names answered SERVFAIL. */
  servfail: Set<string>;
  /** Names never answered (the client times out). */
  silent: Set<string>;
}

export interface Question {
  name: string;
  /** "A", "AAAA", "CNAME" or the numeric type. */
  type: string;
}

export type Verdict = "answer" | "servfail" | "drop";

export interface TestDnsServer {
  /** `127.0.0.1:port`, for Resolver#setServers and pebble's -dnsserver. */
  address: string;
  zone: Zone;
  /**
   * Consulted before every answer: resolve to "answer", "servfail" or "drop". The restart test
   * uses it to hold pebble's look-ups while it kills the service.
   */
  gate?: (question: Question) => Verdict | Promise<Verdict>;
  /** Every question asked, in order. */
  asked: Question[];
  close(): Promise<void>;
}

const typeNames: Record<number, string> = { [Packet.TYPE.A]: "A", [Packet.TYPE.AAAA]: "AAAA", [Packet.TYPE.CNAME]: "CNAME", [Packet.TYPE.PTR]: "PTR" };

/** The reverse name of an IPv4 address (`1.2.3.4` -> `4.3.2.1.in-addr.arpa`). */
export const reverseName = (ipv4: string) => `${ipv4.split(".").reverse().join(".")}.in-addr.arpa`;

export async function startDnsServer(): Promise<TestDnsServer> {
  const zone: Zone = { cname: new Map(), a: new Map(), ptr: new Map(), servfail: new Set(), silent: new Set() };
  const server: TestDnsServer = { address: "", zone, asked: [], close: async () => {} };

  /** Fills `response` the way a recursive resolver would: the CNAME chain, then the address. */
  function answer(response: dns2.Packet, name: string, type: number): void {
    const ptr = zone.ptr.get(name);
    if (type === Packet.TYPE.PTR && ptr) {
      response.answers.push({ name, type: Packet.TYPE.PTR, class: Packet.CLASS.IN, ttl: 1, domain: ptr } as dns2.Packet.Resource);
      return;
    }
    let current = name;
    for (let hops = 0; zone.cname.has(current) && hops < 8; hops++) {
      const target = zone.cname.get(current)!;
      response.answers.push({ name: current, type: Packet.TYPE.CNAME, class: Packet.CLASS.IN, ttl: 1, domain: target } as dns2.Packet.Resource);
      if (type === Packet.TYPE.CNAME) return;
      current = target;
    }
    const address = zone.a.get(current);
    if (type === Packet.TYPE.A && address) {
      response.answers.push({ name: current, type: Packet.TYPE.A, class: Packet.CLASS.IN, ttl: 1, address } as dns2.Packet.Resource);
    }
    if (!response.answers.length && !address) response.header.rcode = RCODE.NXDOMAIN;
  }

  const dns = dns2.createServer({
    udp: true,
    handle: async (request, send) => {
      const [q] = request.questions;
      if (!q) return;
      const name = q.name.toLowerCase().replace(/\.$/, "");
      const question = { name, type: typeNames[q.type] ?? String(q.type) };
      server.asked.push(question);
      const verdict = server.gate ? await server.gate(question) : "answer";
      if (verdict === "drop" || zone.silent.has(name)) return;
      const response = Packet.createResponseFromRequest(request);
      if (verdict === "servfail" || zone.servfail.has(name)) response.header.rcode = RCODE.SERVFAIL;
      else answer(response, name, q.type);
      await send(response);
    },
  });
  const addresses = await dns.listen({ udp: { port: 0, address: "127.0.0.1" } });
  server.address = `127.0.0.1:${addresses.udp!.port}`;
  server.close = () => dns.close();
  return server;
}

export interface HeldLookups {
  /** Resolves at the first address look-up of the name: the CA is validating (its order exists, the challenge is published). */
  caIsValidating: Promise<void>;
  /** Answers the held look-ups and every later one. */
  release(): void;
}

/** Holds every address (not CNAME) look-up of `name` until released: a way to stop time mid-validation. */
export function holdAddressLookups(dns: TestDnsServer, name: string): HeldLookups {
  let release!: () => void;
  const released = new Promise<Verdict>((resolve) => (release = () => resolve("answer")));
  let validating!: () => void;
  const caIsValidating = new Promise<void>((resolve) => (validating = resolve));
  dns.gate = (question) => {
    if (question.name !== name || question.type === "CNAME") return "answer";
    validating();
    return released;
  };
  return { caIsValidating, release };
}
