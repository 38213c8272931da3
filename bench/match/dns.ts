// The world's reverse DNS on loopback (dns2): the world's PTR names for IPv4 (in-addr.arpa) and
// IPv6 (ip6.arpa) addresses, and each name's A or AAAA record back to its address (forward-
// confirmed, as real operators' names are). Every other name: NXDOMAIN. The service is pointed at
// it with TRACKING_DNS_SERVERS, so no question leaves this machine.
import dns2 from "dns2";
import { isV6, reverseName } from "./addresses.ts";

const { Packet } = dns2;
/** Response codes (present at run time, missing from dns2's type declarations). */
const NXDOMAIN = (Packet as unknown as { RCODE: { NXDOMAIN: number } }).RCODE.NXDOMAIN;

export interface WorldDns {
  /** `127.0.0.1:port`, for TRACKING_DNS_SERVERS. */
  address: string;
  /** Reverse name -> PTR host name. */
  ptr: Map<string, string>;
  /** Host name -> its addresses (A for IPv4, AAAA for IPv6). */
  forward: Map<string, string[]>;
  /** PTR questions asked so far. */
  ptrQuestions: number;
  close(): Promise<void>;
}

type Resource = dns2.Packet.Resource;

function answer(world: WorldDns, response: dns2.Packet, name: string, type: number): void {
  const record = { name, class: Packet.CLASS.IN, ttl: 60 };
  if (type === Packet.TYPE.PTR) {
    world.ptrQuestions += 1;
    const host = world.ptr.get(name);
    if (host) response.answers.push({ ...record, type, domain: host } as Resource);
  } else if (type === Packet.TYPE.A || type === Packet.TYPE.AAAA) {
    const family = (ip: string) => (isV6(ip) ? Packet.TYPE.AAAA : Packet.TYPE.A);
    for (const address of world.forward.get(name) ?? []) if (family(address) === type) response.answers.push({ ...record, type, address } as Resource);
  }
  if (!response.answers.length && !world.forward.has(name)) response.header.rcode = NXDOMAIN;
}

export async function startWorldDns(): Promise<WorldDns> {
  const world: WorldDns = { address: "", ptr: new Map(), forward: new Map(), ptrQuestions: 0, close: async () => {} };
  const server = dns2.createServer({
    udp: true,
    handle: async (request, send) => {
      const [q] = request.questions;
      if (!q) return;
      const response = Packet.createResponseFromRequest(request);
      answer(world, response, q.name.toLowerCase().replace(/\.$/, ""), q.type);
      await send(response);
    },
  });
  const addresses = await server.listen({ udp: { port: 0, address: "127.0.0.1" } });
  world.address = `127.0.0.1:${addresses.udp!.port}`;
  world.close = () => server.close();
  return world;
}

/** Publishes the world's PTR names (address -> host name), replacing those of an earlier world. */
export function publishPtrNames(dns: WorldDns, ptr: ReadonlyMap<string, string>): void {
  dns.ptr.clear();
  dns.forward.clear();
  dns.ptrQuestions = 0;
  for (const [ip, host] of ptr) {
    dns.ptr.set(reverseName(ip), host);
    dns.forward.set(host, [...(dns.forward.get(host) ?? []), ip]);
  }
}

export const ptrQuestions = (dns: WorldDns) => dns.ptrQuestions;
