// Declared Networks: declareNetwork, listDeclaredNetworks, removeDeclaredNetwork, and GET
// /v1/ip-lookup's identity of an address (evidence or a declaration, for its own account only).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import supertest from "supertest";
import { Invalid } from "../server/domain/errors.ts";
import { declarationOf, MAX_DECLARED_NETWORKS } from "../server/identity/declared-networks.ts";
import { memoryRateLimiter } from "../server/rate-limiter.ts";
import type { TestApi } from "./support/api.ts";
import { as, startWithTenants } from "./support/suite.ts";
import { createTenant, type Tenant } from "./support/tenants.ts";
import { ADDRESSES } from "./support/tracking.ts";

let api: TestApi;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => ({ api, tenant, other } = await startWithTenants()));
afterAll(() => api?.close());

/** A fresh IPv4 /24 per use (documentation and benchmark ranges are not routed: only the look-ups need routed ones). */
let next = 0;
const freshNetwork = (length = 24) => `198.18.${++next}.0/${length}`;

const declare = (body: object, t = tenant, email = t.admin.email) => api.request().post("/v1/declared-networks").query({ email }).set(as(t.key)).send(body);
const list = (query: Record<string, string | number> = {}, t = tenant, email = t.admin.email) =>
  api.request().get("/v1/declared-networks").query({ email, limit: 500, ...query }).set(as(t.key));
const remove = (id: string, t = tenant, email = t.admin.email) => api.request().delete(`/v1/declared-networks/${id}`).query({ email }).set(as(t.key));
const ipLookup = (ip: string, t = tenant) => api.request().get("/v1/ip-lookup").query({ ip }).set(as(t.key));

type Listed = { id: string; cidr: string; organizationName: string; organizationDomain: string | null; createdAt: string; conflicts: Record<string, number> };
async function declared(t = tenant): Promise<Listed[]> {
  const res = await list({}, t);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
}

describe("declareNetwork", () => {
  it("when an admin declares a network, then 201 with its id, and the listing shows it with every field", async () => {
    const cidr = freshNetwork(28);
    const res = await declare({ cidr, organizationName: "Example GmbH", organizationDomain: "example.de" });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toEqual({ id: expect.stringMatching(/^dnet_[0-9a-z]{16}$/) });
    const listed = (await declared()).find((n) => n.id === res.body.id);
    expect(listed).toEqual({ id: res.body.id, cidr, organizationName: "Example GmbH", organizationDomain: "example.de", createdAt: expect.any(String), conflicts: { dynamicLineNames: 0, otherOrganizations: 0, freeMailPeople: 0 } });
    expect(Date.now() - Date.parse(listed!.createdAt)).toBeLessThan(60_000);
  });

  it("when the network and domain are written loosely, then they are stored in canonical form: IPv6 compressed, domain lower case without www. and trailing dot", async () => {
    const res = await declare({ cidr: "2001:0DB8:00AA:0000:0000:0000:0000:0000/48", organizationName: " Example AG ", organizationDomain: "WWW.Example-AG.CH." });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect((await declared()).find((n) => n.id === res.body.id)).toMatchObject({ cidr: "2001:db8:aa::/48", organizationName: "Example AG", organizationDomain: "example-ag.ch" });
  });

  it("when no domain is given, then the declaration has none", async () => {
    const res = await declare({ cidr: freshNetwork(), organizationName: "Nameless Office" });
    expect(res.status).toBe(201);
    expect((await declared()).find((n) => n.id === res.body.id)?.organizationDomain).toBeNull();
  });

  it("when an IPv4-mapped IPv6 network is declared, then it is its IPv4 network, and declaring that again is a conflict", async () => {
    const v4 = freshNetwork(28);
    const mapped = `::ffff:${v4.split("/")[0]}/124`;
    const res = await declare({ cidr: mapped, organizationName: "Mapped" });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect((await declared()).find((n) => n.id === res.body.id)?.cidr).toBe(v4);
    expect((await declare({ cidr: v4, organizationName: "Mapped again" })).status).toBe(409);
  });

  it("when the same network is declared again in the account, then 409 and it stays declared once", async () => {
    const cidr = freshNetwork();
    expect((await declare({ cidr, organizationName: "First" })).status).toBe(201);
    const again = await declare({ cidr, organizationName: "Second" });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ error: "conflict", message: expect.stringContaining(cidr) });
    expect((await declared()).filter((n) => n.cidr === cidr).map((n) => n.organizationName)).toEqual(["First"]);
  });

  it("when another account declares the same network, then it is declared for each account on its own", async () => {
    const cidr = freshNetwork();
    expect((await declare({ cidr, organizationName: "Ours" })).status).toBe(201);
    expect((await declare({ cidr, organizationName: "Theirs" }, other)).status).toBe(201);
    expect((await declared(other)).filter((n) => n.cidr === cidr).map((n) => n.organizationName)).toEqual(["Theirs"]);
  });

  const OFF_PATTERN = "does not match the field's pattern in the contract (its description says what it accepts)";
  it.each([
    ["bits are set after the prefix", "198.18.200.5/28", "must not have bits set after the prefix (its network is 198.18.200.0/28)"],
    ["an IPv4-mapped network in hexadecimal has a prefix length below 112", "::ffff:c612:c800/100", "must have a prefix length of 16 to 32 for IPv4"],
    ["an IPv4 prefix is wider than /16", "10.0.0.0/15", OFF_PATTERN],
    ["an IPv6 prefix is wider than /32", "2001:db8::/31", OFF_PATTERN],
    ["an IPv4 prefix is longer than /32", "198.18.200.5/33", OFF_PATTERN],
    ["the address is not one", "198.18.300.0/24", OFF_PATTERN],
  ])("when %s, then 400 naming cidr and nothing is declared", async (_case, cidr, message) => {
    const before = (await declared()).length;
    const res = await declare({ cidr, organizationName: "Refused" });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: "validation_failed", message: expect.any(String), details: [{ location: "body", field: "cidr", message }] });
    expect(await declared()).toHaveLength(before);
  });

  it.each([
    ["cidr has no prefix length", { cidr: "198.18.200.0", organizationName: "X" }, "cidr"],
    ["organizationName is missing", { cidr: "198.18.201.0/24" }, "organizationName"],
    ["organizationName is blank", { cidr: "198.18.201.0/24", organizationName: "   " }, "organizationName"],
    ["organizationDomain is not a host name", { cidr: "198.18.201.0/24", organizationName: "X", organizationDomain: "not a domain" }, "organizationDomain"],
    ["organizationDomain is no domain under a public suffix", { cidr: "198.18.201.0/24", organizationName: "X", organizationDomain: "localhost" }, "organizationDomain"],
    ["organizationDomain ends in no known public suffix", { cidr: "198.18.201.0/24", organizationName: "X", organizationDomain: "foo.invalidtldxyz" }, "organizationDomain"],
    ["the prefix length has a leading zero", { cidr: "198.18.201.0/024", organizationName: "X" }, "cidr"],
    ["a number of the address has a leading zero", { cidr: "198.018.201.0/24", organizationName: "X" }, "cidr"],
    ["the body has an unknown field", { cidr: "198.18.201.0/24", organizationName: "X", asn: 3320 }, "asn"],
  ])("when %s, then 400 naming the field", async (_case, body, field) => {
    const res = await declare(body);
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "body", field: expect.stringContaining(field) }));
  });

  it("when the service itself reads a cidr or domain the contract's pattern lets through only in the spelling it refuses, then it refuses it too: leading zeros in the prefix length, an unknown ending", () => {
    expect(() => declarationOf({ cidr: "198.18.201.0/024", organizationName: "X" })).toThrow(Invalid);
    expect(() => declarationOf({ cidr: "198.18.201.0/24", organizationName: "X", organizationDomain: "foo.invalidtldxyz" })).toThrow(Invalid);
    expect(declarationOf({ cidr: "198.18.201.0/24", organizationName: "X", organizationDomain: "Example.co.uk" })).toEqual({ cidr: "198.18.201.0/24", organizationName: "X", organizationDomain: "example.co.uk" });
  });

  it("when a member declares, then 403 and nothing is declared", async () => {
    const cidr = freshNetwork();
    const res = await declare({ cidr, organizationName: "By a member" }, tenant, tenant.member.email);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: "forbidden", message: expect.any(String) });
    expect((await declared()).some((n) => n.cidr === cidr)).toBe(false);
  });

  it("when the acting user is not a member of the account, then 403", async () => {
    expect((await declare({ cidr: freshNetwork(), organizationName: "X" }, tenant, other.admin.email)).status).toBe(403);
  });

  it("when the acting user's address is sent with %40 instead of @, then it is the same admin", async () => {
    const [name, host] = tenant.admin.email.split("@");
    const res = await api.request().post(`/v1/declared-networks?email=${name}%40${host}`).set(as(tenant.key)).send({ cidr: freshNetwork(), organizationName: "Encoded" });
    expect(res.status).toBe(201);
  });

  it("when the request has no API key, then 401 and nothing is declared", async () => {
    const cidr = freshNetwork();
    const res = await api.request().post("/v1/declared-networks").query({ email: tenant.admin.email }).send({ cidr, organizationName: "X" });
    expect(res.status).toBe(401);
    expect(res.body.error).toBe("missing_api_key");
    expect((await declared()).some((n) => n.cidr === cidr)).toBe(false);
  });

  it("when the key's rate limit is used up, then 429 with Retry-After and nothing is declared", async () => {
    const limited = supertest.agent(api.appWith({ rateLimiter: memoryRateLimiter({ requests: 1, windowSeconds: 60 }) }));
    const [first, second] = [freshNetwork(), freshNetwork()];
    expect((await limited.post("/v1/declared-networks").query({ email: tenant.admin.email }).set(as(tenant.key)).send({ cidr: first, organizationName: "X" })).status).toBe(201);
    const res = await limited.post("/v1/declared-networks").query({ email: tenant.admin.email }).set(as(tenant.key)).send({ cidr: second, organizationName: "Y" });
    expect(res.status).toBe(429);
    expect(res.headers["retry-after"]).toMatch(/^\d+$/);
    expect((await declared()).some((n) => n.cidr === second)).toBe(false);
  });

  /** A new account holding `count` declarations (100.x.y.0/24), written in one statement. */
  async function accountHolding(name: string, count: number): Promise<Tenant> {
    const t = await createTenant(api.services, name);
    await api.db.prisma.$executeRaw`
      INSERT INTO "DeclaredNetwork" (id, "accountId", network, "organizationName")
      SELECT 'dnet_bulk' || ${t.accountId} || '_' || n, ${t.accountId}, ('100.' || (n / 256) || '.' || (n % 256) || '.0/24')::inet, 'Bulk' FROM generate_series(0, ${count - 1}) AS n`;
    return t;
  }
  const heldBy = (t: Tenant) => api.db.prisma.declaredNetwork.count({ where: { accountId: t.accountId } });

  it(`when the account holds ${MAX_DECLARED_NETWORKS} networks, then 409 and no more is declared`, async () => {
    const t = await accountHolding("Crowded", MAX_DECLARED_NETWORKS);
    const res = await declare({ cidr: "198.19.0.0/24", organizationName: "One too many" }, t);
    expect(res.status).toBe(409);
    expect(res.body.message).toContain(String(MAX_DECLARED_NETWORKS));
    expect(await heldBy(t)).toBe(MAX_DECLARED_NETWORKS);
  });

  it(`when 20 declarations arrive at once while the account holds ${MAX_DECLARED_NETWORKS - 1}, then one is declared, 19 are 409 and the account holds ${MAX_DECLARED_NETWORKS}`, async () => {
    const t = await accountHolding("Crowded at once", MAX_DECLARED_NETWORKS - 1);
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => declare({ cidr: `198.19.${i + 1}.0/24`, organizationName: `At once ${i}` }, t)));
    expect(answers.map((res) => res.status).sort()).toEqual([201, ...Array<number>(19).fill(409)]);
    expect(await heldBy(t)).toBe(MAX_DECLARED_NETWORKS);
  });
});

describe("listDeclaredNetworks", () => {
  it("when the account has more networks than the limit, then pages oldest first, each once, until nextCursor is null", async () => {
    const t = await createTenant(api.services, "Pager");
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await declare({ cidr: freshNetwork(), organizationName: `Office ${i}` }, t)).body.id);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const res = await list({ limit: 2, ...(cursor ? { cursor } : {}) }, t);
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.data.map((n: Listed) => n.id));
      cursor = res.body.nextCursor ?? undefined;
    } while (cursor);
    expect(seen).toEqual(ids);
  });

  it("when the account's evidence from a declared network disagrees with it, then the listing counts it (dynamic-line names, other organisations, free-mail people), and evidence outside it or another account's is not counted", async () => {
    const cidr = freshNetwork(28);
    const base = cidr.slice(0, cidr.lastIndexOf(".") + 1);
    const range = `${base}0/24`;
    const { body } = await declare({ cidr, organizationName: "Declared Co", organizationDomain: "shop.declared-co.de" });
    const at = new Date();
    const evidence = (scope: string, unit: string, kind: "dynamic_line" | "form_email" | "free_mail", domain = "", contributor = "") => ({
      scope, accountId: scope === "*" ? null : scope, range, unit: `${base}${unit}/32`, kind, domain, contributor, firstSeenAt: at, lastSeenAt: at,
    });
    await api.db.prisma.identityEvidence.createMany({
      data: [
        evidence("*", "1", "dynamic_line"),
        evidence(tenant.accountId, "2", "dynamic_line"),
        evidence(tenant.accountId, "3", "form_email", "declared-co.de", "p1"), // its own organisation: no conflict
        evidence(tenant.accountId, "3", "form_email", "other-one.com", "p2"),
        evidence(tenant.accountId, "4", "form_email", "other-two.fr", "p3"),
        evidence(tenant.accountId, "4", "form_email", "other-two.fr", "p4"),
        evidence(tenant.accountId, "5", "free_mail", "", "p5"),
        evidence(tenant.accountId, "20", "free_mail", "", "p6"), // outside the /28
        evidence(other.accountId, "6", "form_email", "another-account.de", "p7"), // another account's
      ],
    });
    const listed = (await declared()).find((n) => n.id === body.id);
    expect(listed?.conflicts).toEqual({ dynamicLineNames: 2, otherOrganizations: 2, freeMailPeople: 1 });
  });

  it("when a declaration spans several ranges (an IPv4 /22) or more than the range index serves (an IPv6 /32), then the evidence of every range inside it counts, and none outside it", async () => {
    const at = new Date();
    const row = (range: string, unit: string, domain: string, contributor: string) => ({
      scope: tenant.accountId, accountId: tenant.accountId, range, unit, kind: "form_email" as const, domain, contributor, firstSeenAt: at, lastSeenAt: at,
    });
    const v4 = await declare({ cidr: "198.19.64.0/22", organizationName: "Wide Co", organizationDomain: "wide-co.de" });
    const v6 = await declare({ cidr: "3fff:100::/32", organizationName: "Wide Six Co", organizationDomain: "wide-six.de" });
    expect([v4.status, v6.status]).toEqual([201, 201]);
    await api.db.prisma.identityEvidence.createMany({
      data: [
        row("198.19.64.0/24", "198.19.64.9/32", "first-range.com", "w1"),
        row("198.19.67.0/24", "198.19.67.9/32", "last-range.com", "w2"),
        row("198.19.68.0/24", "198.19.68.9/32", "outside.com", "w3"), // the next /22
        row("3fff:100:7::/48", "3fff:100:7:1::/64", "six-inside.com", "w4"),
        row("3fff:101::/48", "3fff:101::/64", "six-outside.com", "w5"),
      ],
    });
    const listed = await declared();
    expect(listed.find((n) => n.id === v4.body.id)?.conflicts).toEqual({ dynamicLineNames: 0, otherOrganizations: 2, freeMailPeople: 0 });
    expect(listed.find((n) => n.id === v6.body.id)?.conflicts).toEqual({ dynamicLineNames: 0, otherOrganizations: 1, freeMailPeople: 0 });
  });

  it("when nothing disagrees with a declaration, then its conflicts are all 0", async () => {
    const { body } = await declare({ cidr: freshNetwork(), organizationName: "Quiet Co" });
    expect((await declared()).find((n) => n.id === body.id)?.conflicts).toEqual({ dynamicLineNames: 0, otherOrganizations: 0, freeMailPeople: 0 });
  });

  it("when another account has declared networks, then none of them is listed", async () => {
    const cidr = freshNetwork();
    const res = await declare({ cidr, organizationName: "Only theirs" }, other);
    expect(res.status).toBe(201);
    expect((await declared()).some((n) => n.id === res.body.id || n.cidr === cidr)).toBe(false);
  });

  it("when a member lists, then 403", async () => {
    const res = await list({}, tenant, tenant.member.email);
    expect(res.status).toBe(403);
  });

  it("when the cursor was not returned by this API, then 400 naming it", async () => {
    const res = await list({ cursor: Buffer.from(JSON.stringify({ t: "soon", id: 1 })).toString("base64url") });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ location: "query", field: "cursor", message: expect.any(String) }]);
  });
});

describe("removeDeclaredNetwork", () => {
  it("when an admin removes a declaration, then 204, it is no longer listed, and removing it again is 404", async () => {
    const { body } = await declare({ cidr: freshNetwork(), organizationName: "Short-lived" });
    const res = await remove(body.id);
    expect(res.status).toBe(204);
    expect((await declared()).some((n) => n.id === body.id)).toBe(false);
    const again = await remove(body.id);
    expect(again.status).toBe(404);
    expect(again.body).toEqual({ error: "not_found", message: expect.any(String) });
  });

  it("when the id is another account's, then 404 and it stays declared there", async () => {
    const { body } = await declare({ cidr: freshNetwork(), organizationName: "Theirs to keep" }, other);
    expect((await remove(body.id)).status).toBe(404);
    expect((await declared(other)).some((n) => n.id === body.id)).toBe(true);
  });

  it("when a member removes, then 403 and it stays declared", async () => {
    const { body } = await declare({ cidr: freshNetwork(), organizationName: "Kept" });
    expect((await remove(body.id, tenant, tenant.member.email)).status).toBe(403);
    expect((await declared()).some((n) => n.id === body.id)).toBe(true);
  });

  it("when the id is unknown, then 404", async () => {
    expect((await remove("dnet_0000000000000000")).status).toBe(404);
  });
});

describe("lookupIp: the identity of an address", () => {
  it("when the account's visitors' evidence names an organisation at an ISP address, then ip-lookup shows it with counts only, and another account sees none", async () => {
    const ip = "73.1.3.3";
    await api.services.identities.recordFormEvidence([
      { accountId: tenant.accountId, ip, networkType: "isp", email: "ann@smallco-gmbh.de" },
      { accountId: tenant.accountId, ip, networkType: "isp", email: "ben@smallco-gmbh.de" },
    ]);
    const res = await ipLookup(ip);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ networkType: "isp", organizationDomain: null });
    expect(res.body.identity).toEqual({
      organizationName: "smallco-gmbh.de",
      organizationDomain: "smallco-gmbh.de",
      source: "form_email",
      confidence: 0.75,
      attributed: true,
      guard: null,
      prefix: "73.1.3.3/32",
      shared: false,
      firstSeenAt: expect.any(String),
      lastSeenAt: expect.any(String),
      expiresAt: expect.any(String),
      evidence: { declared: 0, reverseDns: 0, formEmail: 2, organizations: 1 },
    });
    expect(JSON.stringify(res.body)).not.toMatch(/ann@|ben@/);
    expect((await ipLookup(ip, other)).body.identity).toBeNull();
  });
});

describe("a declaration and the identity of an address", () => {
  it("when an account declares the network of an ISP address, then its ip-lookup names the organisation (declared, confidence 1) and another account's does not; removing it takes it back", async () => {
    const before = await ipLookup(ADDRESSES.isp);
    expect(before.status).toBe(200);
    expect(before.body.identity).toBeNull();
    const { body } = await declare({ cidr: "73.1.2.0/24", organizationName: "Branch Office", organizationDomain: "branch-office.de" });
    const ours = await ipLookup(ADDRESSES.isp);
    expect(ours.body).toMatchObject({ networkType: "isp" });
    expect(ours.body.identity).toEqual({
      organizationName: "Branch Office",
      organizationDomain: "branch-office.de",
      source: "declared",
      confidence: 1,
      attributed: true,
      guard: null,
      prefix: "73.1.2.0/24",
      shared: false,
      firstSeenAt: expect.any(String),
      lastSeenAt: expect.any(String),
      expiresAt: null,
      evidence: { declared: 1, reverseDns: 0, formEmail: 0, organizations: 0 },
    });
    expect((await ipLookup(ADDRESSES.isp, other)).body.identity).toBeNull();
    expect((await remove(body.id)).status).toBe(204);
    expect((await ipLookup(ADDRESSES.isp)).body.identity).toBeNull();
  });

  it("when declarations overlap, then the most specific holding the address wins, and both are counted", async () => {
    const wide = await declare({ cidr: "73.1.0.0/16", organizationName: "Region" });
    const narrow = await declare({ cidr: "73.1.2.0/28", organizationName: "Floor 3" });
    const res = await ipLookup(ADDRESSES.isp);
    expect(res.body.identity).toMatchObject({ organizationName: "Floor 3", prefix: "73.1.2.0/28", evidence: { declared: 2 } });
    await remove(narrow.body.id);
    expect((await ipLookup(ADDRESSES.isp)).body.identity).toMatchObject({ organizationName: "Region", prefix: "73.1.0.0/16" });
    await remove(wide.body.id);
  });

  it("when a mobile carrier's address is declared, then it holds the declared identity", async () => {
    const { body } = await declare({ cidr: "172.56.0.0/24", organizationName: "Field Team" });
    expect((await ipLookup(ADDRESSES.mobile)).body).toMatchObject({ networkType: "mobile", identity: { source: "declared", attributed: true } });
    await remove(body.id);
  });
});
