// Issue 38 item 5: the contract is as strict as the service, so that a request the spec calls valid
// is never a 400. Sent here: the spec's own examples to every operation (parameters and bodies as a
// generator such as Prism or Dredd would take them), and values generated with a fixed seed
// (fast-check's IPv4 and IPv6 addresses in every spelling, networks, host names) that the spec's
// schemas accept, to the operations whose inputs are addresses and domains. Also: the operator's
// paths and the collector's answer other methods 405 with Allow (the collector's with CORS).
import fc from "fast-check";
import ipaddr from "ipaddr.js";
import { parse as parseHost } from "tldts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadContract, type Operation } from "../server/contract.ts";
import { startTestApi, type TestApi } from "./support/api.ts";
import { testConfig } from "./support/config.ts";
import { as } from "./support/suite.ts";
import { createTenant, type Tenant } from "./support/tenants.ts";

const SEED = 20261128;
const RUNS = 60;

type Node = Record<string, any>;
const contract = loadContract();
const resolve = (node: Node | undefined): Node | undefined =>
  node?.$ref ? resolve(node.$ref.slice(2).split("/").reduce((at: Node, key: string) => at[key], contract.document as Node)) : node;

let api: TestApi;
let tenant: Tenant;
beforeAll(async () => {
  // an endpoint URL of the examples is not resolved (no DNS off this machine); nothing is delivered here
  api = await startTestApi({ config: testConfig({ WEBHOOK_ALLOW_PRIVATE_ADDRESSES: "1" }) });
  tenant = await createTenant(api.services, "Examples");
});
afterAll(() => api?.close());

/** The example of a parameter: its own, else its schema's. */
const exampleOf = (parameter: Node): unknown => parameter.example ?? resolve(parameter.schema)?.example;

/** The example of a JSON request body: the media type's own (or its first named one), else its schema's. */
function bodyExample(op: Operation): unknown {
  const media = (resolve(op.requestBody as Node)?.content as Node | undefined)?.["application/json"];
  if (!media) return undefined;
  const named = Object.values((media.examples ?? {}) as Record<string, Node>)[0]?.value;
  return media.example ?? named ?? resolve(media.schema)?.example;
}

const asText = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));

/**
 * The operation's request made of the spec's examples alone, with the tenant's key. Not the
 * cursor's: an opaque cursor is only ever one the API returned (its description: any other is a
 * 400), so no example can be one.
 */
function exampleRequest(op: Operation) {
  const path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(asText(exampleOf(op.parameters.find((p) => p.in === "path" && p.name === name)!))));
  const query = Object.fromEntries(op.parameters.filter((p) => p.in === "query" && p.name !== "cursor" && exampleOf(p) !== undefined).map((p) => [p.name, asText(exampleOf(p))]));
  const headers = Object.fromEntries(op.parameters.filter((p) => p.in === "header" && exampleOf(p) !== undefined).map((p) => [p.name, asText(exampleOf(p))]));
  const request = api.request()[op.method](path).query(query).set(headers).set(as(tenant.key));
  const body = bodyExample(op);
  return body === undefined ? request : request.send(body as object);
}

describe("the spec's examples", () => {
  it.each(contract.operations.map((op) => [op.operationId, op] as const))("%s: when its examples are sent, then no 400 and no 5xx", async (_id, op) => {
    const res = await exampleRequest(op);
    expect(res.status, JSON.stringify(res.body)).not.toBe(400);
    expect(res.status, JSON.stringify(res.body)).toBeLessThan(500);
  });
});

/** One parameter's schema, or a property of a request body's schema. */
const parameterSchema = (operationId: string, name: string): Node => contract.operation(operationId)!.parameters.find((p) => p.name === name)!.schema as Node;
const propertySchema = (schemaName: string, property: string): Node => (contract.document.components!.schemas![schemaName] as Node).properties[property];

/**
 * Values `schema` accepts, from `likely` (values of the kind the field is for) and from the
 * schema's own pattern (what a spec-driven fuzzer sends); the property is asserted for each, and
 * at least a quarter of the runs must be accepted values.
 */
async function forSpecValid(schema: Node, likely: fc.Arbitrary<string>, property: (value: string) => Promise<void>): Promise<void> {
  const accepts = contract.compile(schema);
  const values = fc.oneof(likely, fc.stringMatching(new RegExp(schema.pattern as string)).map((text) => text.slice(0, schema.maxLength as number)));
  let accepted = 0;
  await fc.assert(
    fc.asyncProperty(values, async (value) => {
      if (!accepts(value)) return;
      accepted++;
      await property(value);
    }),
    { seed: SEED, numRuns: RUNS, endOnFailure: true },
  );
  expect(accepted).toBeGreaterThan(RUNS / 4);
}

/** Addresses in the spellings RFC 4291 allows: compressed, full, with leading zeros, upper case, IPv4-mapped and embedded. */
const ipv6Spelling = fc.tuple(fc.ipV6(), fc.constantFrom("as-is", "full", "fixed", "upper")).map(([text, spelling]) => {
  const address = ipaddr.IPv6.parse(text);
  if (spelling === "full") return address.toNormalizedString();
  if (spelling === "fixed") return address.toNormalizedString().split(":").map((group) => group.padStart(4, "0")).join(":");
  return spelling === "upper" ? text.toUpperCase() : text;
});
const anyAddress = fc.oneof(fc.ipV4(), fc.ipV6(), ipv6Spelling);

describe("lookupIp", () => {
  it("when any address the spec accepts is asked (IPv4, IPv6 in any spelling), then 200 or 404 network_not_found, never 400", async () => {
    await forSpecValid(parameterSchema("lookupIp", "ip"), anyAddress, async (ip) => {
      const res = await api.request().get("/v1/ip-lookup").query({ ip }).set(as(tenant.key));
      expect([200, 404], `${ip}: ${JSON.stringify(res.body)}`).toContain(res.status);
    });
  });

  it("when the address is written as the spec refuses it (leading zeros, a zone, spaces), then 400 from the contract", async () => {
    for (const ip of ["01.2.3.4", "fe80::1%eth0", " 1.2.3.4", "1.2.3"]) {
      const res = await api.request().get("/v1/ip-lookup").query({ ip }).set(as(tenant.key));
      expect(res.status, ip).toBe(400);
    }
  });
});

describe("lookupDomain", () => {
  it("when any host name the spec accepts is asked, then 200 or 404 domain_not_found, never 400", async () => {
    const hosts = fc.oneof(fc.domain(), fc.domain().map((d) => `${d.toUpperCase()}.`));
    await forSpecValid(parameterSchema("lookupDomain", "domain"), hosts, async (domain) => {
      const res = await api.request().get("/v1/domain-lookup").query({ domain }).set(as(tenant.key));
      expect([200, 404], `${domain}: ${JSON.stringify(res.body)}`).toContain(res.status);
    });
  });
});

/**
 * A network of the address with a declarable prefix length and no bits after it, written
 * compressed or in full: 16-32 for IPv4, 32-128 for IPv6, 112-128 for an IPv4-mapped or
 * dotted one (the contract's description: the pattern says the dotted case, not the hexadecimal).
 */
const declarableNetwork = fc.tuple(anyAddress, fc.integer({ min: 0, max: 1000 })).map(([ip, pick]) => {
  const address = ipaddr.parse(ip);
  const mapped = address.kind() === "ipv6" && ((address as ipaddr.IPv6).isIPv4MappedAddress() || ip.includes("."));
  const [min, max] = address.kind() === "ipv4" ? [16, 32] : mapped ? [112, 128] : [32, 128];
  const length = min + (pick % (max - min + 1));
  if (address.kind() === "ipv4") return `${ipaddr.IPv4.networkAddressFromCIDR(`${ip}/${length}`).toString()}/${length}`;
  const network = ipaddr.IPv6.networkAddressFromCIDR(`${ip}/${length}`);
  return `${pick % 2 ? network.toNormalizedString() : network.toString()}/${length}`;
});

/** Whether a network the pattern accepts has bits set after its prefix (false for text that is no network at all: the spec's to refuse). */
function bitsAfterPrefix(cidr: string): boolean {
  try {
    const [address] = ipaddr.parseCIDR(cidr);
    const network = address.kind() === "ipv4" ? ipaddr.IPv4.networkAddressFromCIDR(cidr) : ipaddr.IPv6.networkAddressFromCIDR(cidr);
    return network.toByteArray().some((byte, i) => byte !== address.toByteArray()[i]);
  } catch {
    return false;
  }
}

describe("declareNetwork", () => {
  it("when any network the spec's cidr pattern accepts is declared with no bits after the prefix, then 201 or 409, never 400", async () => {
    await forSpecValid(propertySchema("DeclareNetwork", "cidr"), declarableNetwork, async (cidr) => {
      if (bitsAfterPrefix(cidr)) return; // the rule the pattern cannot say (documented)
      const res = await api.request().post("/v1/declared-networks").query({ email: tenant.admin.email }).set(as(tenant.key)).send({ cidr, organizationName: "Generated" });
      expect([201, 409], `${cidr}: ${JSON.stringify(res.body)}`).toContain(res.status);
    });
  });

  it("when an organisation domain the spec accepts ends in a public suffix, then 201", async () => {
    const domains = fc.tuple(fc.domain(), fc.constantFrom("de", "co.uk", "com", "com.br", "fr", "co.jp")).map(([d, suffix]) => `${d.split(".")[0]}.${suffix}`);
    let n = 0;
    await forSpecValid(propertySchema("DeclareNetwork", "organizationDomain"), domains, async (organizationDomain) => {
      // the rule the pattern cannot say (documented): an ending of the Public Suffix List's ICANN section, and more than the suffix itself
      if (!parseHost(organizationDomain.replace(/\.$/, "").replace(/^www\./i, "")).domain || !parseHost(organizationDomain).isIcann) return;
      const cidr = `198.18.${++n}.0/24`;
      const res = await api.request().post("/v1/declared-networks").query({ email: tenant.admin.email }).set(as(tenant.key)).send({ cidr, organizationName: "Generated", organizationDomain });
      expect(res.status, `${organizationDomain}: ${JSON.stringify(res.body)}`).toBe(201);
    });
  });
});

describe("getHealth, getReadiness, getMetrics", () => {
  it.each(["/healthz", "/readyz", "/metrics"])("when %s is called with POST, PUT, DELETE or PATCH, then 405 with Allow: GET, HEAD, never 401", async (path) => {
    for (const method of ["post", "put", "delete", "patch"] as const) {
      const res = await api.request()[method](path);
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers.allow).toBe("GET, HEAD");
      expect(res.body.error).toBe("method_not_allowed");
    }
  });
});

describe("the collector's paths", () => {
  it.each(["/collect", "/t.js"])("when %s is called with a method it does not have, then the 405 carries Access-Control-Allow-Origin, so that a page can read it", async (path) => {
    for (const method of ["put", "delete", "patch"] as const) {
      const res = await api.request()[method](`${path}?dataset=${tenant.datasets[0]}`);
      expect(res.status, `${method} ${path}`).toBe(405);
      expect(res.headers["access-control-allow-origin"], `${method} ${path}`).toBe("*");
    }
  });
});
