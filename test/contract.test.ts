// Generic contract checks: every operation of the spec is routed to its handler, every response
// carries a request id, malformed JSON, unknown paths and unknown query parameters get their
// documented errors.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hotFirst, routesOf, type OperationId, type SpecRoute } from "../server/http/operations.ts";
import { createHandlers } from "../server/routes/index.ts";
import { loadSpec } from "../server/spec.ts";
import type { TestApi } from "./support/api.ts";
import { as, startWithTenants } from "./support/suite.ts";
import { createTenant, type Tenant, uniqueEmail } from "./support/tenants.ts";
import * as users from "../server/services/users.ts";
import * as accounts from "../server/services/accounts.ts";

type Node = Record<string, unknown>;

const spec = loadSpec() as unknown as Node;
const routes = routesOf(loadSpec());

let api: TestApi;
let tenant: Tenant;

beforeAll(async () => ({ api, tenant } = await startWithTenants()));
afterAll(() => api?.close());


/** Follows local `#/components/...` references to the node they name. */
function resolve(node: unknown): Node {
  let current = node as Node;
  for (let hops = 0; typeof current?.$ref === "string"; hops++) {
    const ref = current.$ref as string;
    if (!ref.startsWith("#/") || hops > 20) throw new Error(`cannot resolve $ref ${ref}`);
    current = ref
      .slice(2)
      .split("/")
      .map((part) => decodeURIComponent(part).replace(/~1/g, "/").replace(/~0/g, "~"))
      .reduce<Node>((at, key) => {
        const next = at[key] as Node | undefined;
        if (next === undefined) throw new Error(`dangling $ref ${ref}`);
        return next;
      }, spec);
  }
  return current;
}

function operationOf(route: SpecRoute): Node {
  return (spec.paths as Record<string, Record<string, Node>>)[route.path]![route.method]!;
}

interface Parameter {
  name: string;
  in: "path" | "query" | "header" | "cookie";
  required?: boolean;
  example?: unknown;
  schema?: unknown;
}

function parametersOf(route: SpecRoute): Parameter[] {
  const item = (spec.paths as Record<string, Node>)[route.path]!;
  const all = [...((item.parameters as unknown[]) ?? []), ...((operationOf(route).parameters as unknown[]) ?? [])];
  return all.map((p) => resolve(p) as unknown as Parameter);
}

/** The spec's example of a parameter: its own, else its schema's. */
function exampleOf(parameter: Parameter): unknown {
  const example = parameter.example ?? resolve(parameter.schema).example;
  if (example === undefined) throw new Error(`parameter ${parameter.name} has no example in the spec`);
  return example;
}

/** The tenant's real ids where a parameter or body field names them; undefined: keep the example. */
function substitute(name: string, t: Tenant, where: Parameter["in"] | "body"): unknown {
  switch (name) {
    case "datasetId":
      return t.datasets[0];
    case "datasetIds":
      return [t.datasets[0]];
    case "accountId":
      return t.accountId;
    case "userId":
    case "assigneeUserId":
      return t.member.id;
    case "userIds":
      return [t.member.id];
    case "email":
      // the query `email` names a user of the account; a body `email` is a new user or a contact
      return where === "query" ? t.admin.email : undefined;
    case "x-api-key":
      return t.key;
    default:
      return undefined;
  }
}

interface BuiltRequest {
  url: string;
  headers: Record<string, string>;
  body?: unknown;
}

/** A minimal valid request: the required parameters and body, from the spec's examples. */
function buildRequest(route: SpecRoute, t: Tenant): BuiltRequest {
  const required = parametersOf(route).filter((p) => p.required);
  const value = (p: Parameter) => substitute(p.name, t, p.in) ?? exampleOf(p);
  let url = route.path;
  const query: string[] = [];
  const headers: Record<string, string> = as(t.key);
  for (const p of required) {
    const v = String(value(p));
    if (p.in === "path") url = url.replace(`{${p.name}}`, encodeURIComponent(v));
    else if (p.in === "query") query.push(`${encodeURIComponent(p.name)}=${encodeURIComponent(v)}`);
    else if (p.in === "header") headers[p.name] = v;
  }
  if (query.length) url += `?${query.join("&")}`;
  const requestBody = operationOf(route).requestBody ? resolve(operationOf(route).requestBody) : undefined;
  if (!requestBody) return { url, headers };
  const media = (requestBody.content as Record<string, Node>)["application/json"]!;
  const schema = resolve(media.schema);
  const example = (media.example ?? schema.example) as Node | undefined;
  if (!example) throw new Error(`request body of ${route.operationId} has no example in the spec`);
  const body: Node = structuredClone(example);
  for (const field of Object.keys(body)) body[field] = substitute(field, t, "body") ?? body[field];
  return { url, headers, body };
}

function send(route: SpecRoute, built: BuiltRequest) {
  const req = api.request()[route.method](built.url).set(built.headers);
  return built.body === undefined ? req : req.send(built.body as object);
}

/** What each operation answers to the spec's example input on a fresh tenant. */
const expectedOutcome: Record<string, { status: number; why: string }> = {
  updateUserName: { status: 204, why: "the member is renamed" },
  addUser: { status: 204, why: "the example e-mail is a new user" },
  resendInvite: { status: 204, why: "the member is still invited" },
  listUsers: { status: 200, why: "the admin lists the account's members" },
  getUserDatasets: { status: 200, why: "the admin is a member" },
  addUserDataset: { status: 409, why: "the member already reaches datasets[0]" },
  removeUserDataset: { status: 204, why: "the member's association with datasets[0] is removed" },
  createDataset: { status: 200, why: "the example name is free" },
  renameDataset: { status: 204, why: "the example name is free" },
  updateFormTracking: { status: 204, why: "the admin configures datasets[0]" },
  getPageWeights: { status: 200, why: "datasets[0] is the account's" },
  setPageWeights: { status: 204, why: "the admin sets datasets[0]'s page weights" },
  validateCustomTrackingDomain: { status: 200, why: "the checks are reported (DNS is not reachable here)" },
  addCustomTrackingDomain: { status: 200, why: "-1: no certificate worker runs here, so generation is pending at the wait limit" },
  updateCustomTrackingDomain: { status: 404, why: "datasets[0] has no custom tracking domain" },
  getCustomTrackingDomain: { status: 404, why: "datasets[0] has no custom tracking domain" },
  getSegments: { status: 200, why: "the admin reaches datasets[0]" },
  createSegment: { status: 200, why: "the example name is free" },
  updateSegment: { status: 404, why: "the example segment is not in the fresh account" },
  deleteSegment: { status: 404, why: "the example segment is not in the fresh account" },
  updateSegmentUser: { status: 404, why: "the example segment is not in the fresh account" },
  getSegmentPreference: { status: 404, why: "the example segment is not in datasets[0]" },
  setSegmentPreference: { status: 404, why: "the example segment is not in datasets[0]" },
  deleteSegmentPreference: { status: 404, why: "the admin has no default segment" },
  updateLeadTags: { status: 404, why: "datasets[0] has no leads" },
  assignLead: { status: 404, why: "datasets[0] has no leads" },
  getDatasetExclusions: { status: 200, why: "datasets[0] is the account's" },
  saveDatasetExclusion: { status: 204, why: "datasets[0] has no rules yet" },
  removeDatasetExclusion: { status: 404, why: "datasets[0] has no such rule" },
  listLeads: { status: 200, why: "the admin reaches datasets[0]" },
  lookupEmail: { status: 404, why: "this test's contact store holds no profiles" },
  lookupEmailByQuery: { status: 404, why: "this test's contact store holds no profiles" },
  bulkLookupEmail: { status: 200, why: "a result per item; this test's contact store holds no profiles, so none is charged" },
  getCreditUsageTimeSeries: { status: 200, why: "a report of the example period" },
  getCreditUsageSummary: { status: 200, why: "a report of the example period" },
  listLeadVisits: { status: 404, why: "datasets[0] has no leads" },
  lookupIp: { status: 200, why: "the example address is on Apple's network" },
  lookupDomain: { status: 200, why: "the example domain is a curated organisation" },
  listWebhookEndpoints: { status: 200, why: "the account's endpoints (none yet)" },
  createWebhookEndpoint: { status: 201, why: "the example URL is https and its name does not resolve to a private address" },
  getWebhookEndpoint: { status: 404, why: "the example endpoint is not in the fresh account" },
  updateWebhookEndpoint: { status: 404, why: "the example endpoint is not in the fresh account" },
  deleteWebhookEndpoint: { status: 404, why: "the example endpoint is not in the fresh account" },
  rotateWebhookSecret: { status: 404, why: "the example endpoint is not in the fresh account" },
  sendWebhookTestEvent: { status: 404, why: "the example endpoint is not in the fresh account" },
  listWebhookDeliveries: { status: 404, why: "the example endpoint is not in the fresh account" },
  replayWebhookDelivery: { status: 404, why: "the example endpoint is not in the fresh account" },
  replayWebhookDeliveries: { status: 404, why: "the example endpoint is not in the fresh account" },
  getPrivacySettings: { status: 200, why: "the admin reads datasets[0]'s settings" },
  updatePrivacySettings: { status: 200, why: "the admin changes datasets[0]'s settings" },
  eraseDataSubject: { status: 200, why: "nothing is held about the example address: a receipt of zeros" },
  exportDataSubject: { status: 200, why: "nothing is held about the example address: empty lists" },
  listErasures: { status: 200, why: "the account's erasure records (none yet)" },
  listDeclaredNetworks: { status: 200, why: "the account's declared networks (none yet)" },
  declareNetwork: { status: 201, why: "the example network is not yet declared in the fresh account" },
  removeDeclaredNetwork: { status: 404, why: "the example declaration is not in the fresh account" },
};


describe("the spec's operations", () => {
  it("when the handlers are built, then there is exactly one per operation of the spec", () => {
    const specIds = routes.map((r) => r.operationId).sort();
    expect(new Set(specIds).size).toBe(specIds.length);
    expect(Object.keys(createHandlers(api.services)).sort()).toEqual(specIds);
  });

  it("when the expected outcomes are listed, then there is one for each operation of the spec", () => {
    expect(routes.map((r) => r.operationId).sort()).toEqual(Object.keys(expectedOutcome).sort());
  });
});

describe("routing order", () => {
  it("when the look-up's paths are routed first, then the others keep the spec's order", () => {
    const paths = [...new Set(routes.map((r) => r.path))];
    const ordered = hotFirst(paths, ["/v1/email-lookup", "/v1/email-lookup/bulk"]);
    expect(ordered.slice(0, 2)).toEqual(["/v1/email-lookup", "/v1/email-lookup/bulk"]);
    expect(ordered.slice(2)).toEqual(paths.filter((p) => !p.startsWith("/v1/email-lookup")));
  });

  it("when a path another path's template also matches would be routed first, then registering refuses", () => {
    expect(() => hotFirst(["/v1/users/{userId}", "/v1/users/me"], ["/v1/users/me"])).toThrow(/\/v1\/users\/\{userId\} also matches/);
    expect(() => hotFirst(["/v1/users/{userId}"], ["/v1/users/{userId}"])).toThrow(/template/);
  });
});

for (const route of routes) {
  const operationId: OperationId = route.operationId;
  describe(operationId, () => {
    const expected = expectedOutcome[operationId];
    it(`when ${route.method.toUpperCase()} ${route.path} is called with a valid key and the spec's example input, then it reaches its handler (${expected?.status}: ${expected?.why})`, async () => {
      const t = await createTenant(api.services, `Routed ${operationId}`);
      const res = await send(route, buildRequest(route, t));
      // not the validator's "no such path", nor Express's own fall-through 404 page
      expect(res.status === 404 && res.body?.message === "No such path").toBe(false);
      if (res.status !== 204) expect(res.type).toBe("application/json");
      expect(res.status, JSON.stringify(res.body)).toBe(expected?.status);
    });
  });
}

describe("authentication on every operation", () => {
  let lapsed: Tenant;
  beforeAll(async () => {
    lapsed = await createTenant(api.services, "Lapsed everywhere");
    await accounts.setLicence(api.services, lapsed.accountId, new Date(Date.now() - 86_400_000));
  });

  for (const route of routes) {
    it(`when ${route.operationId} is called without a key, then 401 missing_api_key`, async () => {
      const built = buildRequest(route, tenant);
      const { "x-api-key": _key, ...headers } = built.headers;
      const res = await send(route, { ...built, headers });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: "missing_api_key", message: expect.any(String) });
    });
  }

  // Only the /v1 operations: the credit-reporting operations answer 403 with an ErrorVM body
  // ({message, description}), tested in test/credit-reports.test.ts.
  for (const route of routes.filter((r) => r.path.startsWith("/v1/"))) {
    it(`when ${route.operationId} is called with the key of an account without a valid licence, then 403 no_valid_licence`, async () => {
      const res = await send(route, buildRequest(route, lapsed));
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ error: "no_valid_licence", message: expect.any(String) });
    });
  }
});

describe("X-Request-Id", () => {
  const idPattern = /^[A-Za-z0-9._-]{1,128}$/;
  const admin = () => encodeURIComponent(tenant.admin.email);

  it("when responses of every kind are sent, then each carries its own X-Request-Id", async () => {
    const responses = [
      await api.request().get(`/v1/user-datasets?accountId=${tenant.accountId}&email=${admin()}`).set(as(tenant.key)), // 200
      await api.request().put(`/v1/users/${tenant.member.id}/name`).set(as(tenant.key)).send({ name: "Max" }), // 204
      await api.request().put(`/v1/users/${tenant.member.id}/name`).set(as(tenant.key)).send({ name: "" }), // 400
      await api.request().get(`/v1/user-datasets?accountId=${tenant.accountId}&email=${admin()}`), // 401
      await api.request().post(`/v1/datasets?email=${encodeURIComponent(tenant.member.email)}`).set(as(tenant.key)).send({ name: "No" }), // 403
      await api.request().get("/v1/no-such-thing").set(as(tenant.key)), // 404
      await api.request().post(`/v1/datasets?email=${admin()}`).set(as(tenant.key)).send({ name: "ACME WEBSITE" }), // 409
    ];
    expect(responses.map((r) => r.status)).toEqual([200, 204, 400, 401, 403, 404, 409]);
    const ids = responses.map((r) => r.headers["x-request-id"]);
    for (const id of ids) expect(id).toMatch(idPattern);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("when the request carries a valid X-Request-Id, then the response echoes it", async () => {
    const ok = await api
      .request()
      .get(`/v1/user-datasets?accountId=${tenant.accountId}&email=${admin()}`)
      .set(as(tenant.key))
      .set("X-Request-Id", "partner-req-0001.a_b");
    expect(ok.status).toBe(200);
    expect(ok.headers["x-request-id"]).toBe("partner-req-0001.a_b");
    const denied = await api.request().get("/v1/no-such-thing").set("X-Request-Id", "partner-req-0002");
    expect(denied.status).toBe(401);
    expect(denied.headers["x-request-id"]).toBe("partner-req-0002");
  });

  it("when the incoming X-Request-Id is not acceptable, then a fresh id is sent instead", async () => {
    for (const bad of ["short", "has spaces in it", "x".repeat(129), "semi;colon;id"]) {
      const res = await api
        .request()
        .get(`/v1/user-datasets?accountId=${tenant.accountId}&email=${admin()}`)
        .set(as(tenant.key))
        .set("X-Request-Id", bad);
      expect(res.status).toBe(200);
      expect(res.headers["x-request-id"]).toMatch(idPattern);
      expect(res.headers["x-request-id"]).not.toBe(bad);
    }
  });
});

describe("malformed JSON", () => {
  const malformed = '{"name": "Broken", ';
  const cases = [
    ["addUser", "post", () => `/v1/users?email=${encodeURIComponent(tenant.admin.email)}`],
    ["updateUserName", "put", () => `/v1/users/${tenant.member.id}/name`],
    ["removeUserDataset", "delete", () => "/v1/user-datasets"],
    ["createSegment", "post", () => `/v1/segments?email=${encodeURIComponent(tenant.admin.email)}`],
  ] as const;

  for (const [operationId, method, url] of cases) {
    it(`when ${operationId} gets a body that is not JSON, then 400 malformed_json (never 500)`, async () => {
      const res = await api.request()[method](url()).set(as(tenant.key)).set("Content-Type", "application/json").send(malformed);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        error: "malformed_json",
        message: expect.any(String),
        details: [expect.objectContaining({ location: "body" })],
      });
    });
  }

  it("when the body is JSON but not an object, then 400 (never 500)", async () => {
    const res = await api
      .request()
      .put(`/v1/users/${tenant.member.id}/name`)
      .set(as(tenant.key))
      .set("Content-Type", "application/json")
      .send("[1, 2]");
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "body" }));
  });

  it("when the body is malformed and the key is missing, then 401 wins", async () => {
    const res = await api
      .request()
      .post(`/v1/users?email=${encodeURIComponent(tenant.admin.email)}`)
      .set("Content-Type", "application/json")
      .send(malformed);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: "missing_api_key", message: expect.any(String) });
  });

  it("when the body is malformed and the licence has expired, then the licence's 403 wins", async () => {
    const lapsed = await createTenant(api.services, "Lapsed");
    await accounts.setLicence(api.services, lapsed.accountId, new Date(Date.now() - 86_400_000));
    const res = await api
      .request()
      .post(`/v1/users?email=${encodeURIComponent(lapsed.admin.email)}`)
      .set(as(lapsed.key))
      .set("Content-Type", "application/json")
      .send(malformed);
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: "no_valid_licence", message: expect.any(String) });
  });
});

describe("unknown paths", () => {
  const notFoundSchema = resolve({ $ref: "#/components/schemas/V1NotFoundResponse" });

  for (const [method, path] of [
    ["get", "/v1/no-such-thing"],
    ["post", "/v1/users/1/no-such-thing"],
    ["get", "/v2/users"],
  ] as const) {
    it(`when ${method.toUpperCase()} ${path} is sent with a valid key, then 404 with a V1NotFoundResponse body`, async () => {
      const res = await api.request()[method](path).set(as(tenant.key));
      expect(res.status).toBe(404);
      expect(res.type).toBe("application/json");
      expect(res.body).toEqual({ error: "not_found", message: expect.any(String) });
      expect(Object.keys(res.body).sort()).toEqual([...(notFoundSchema.required as string[])].sort());
      expect(Object.keys(notFoundSchema.properties as object).sort()).toEqual(["error", "message"]);
      expect(notFoundSchema.additionalProperties).toBe(false);
    });
  }
});

describe("undeclared query parameters", () => {
  it("when getUserDatasets gets a query parameter the spec does not declare, then 400 naming it in query", async () => {
    const res = await api
      .request()
      .get(`/v1/user-datasets?accountId=${tenant.accountId}&email=${encodeURIComponent(tenant.admin.email)}&bogus=1`)
      .set(as(tenant.key));
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("validation_failed");
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "query", field: "bogus" }));
  });

  it("when updateUserName, which declares no query parameters, gets one, then 400 naming it and the name stays", async () => {
    const email = uniqueEmail("named");
    const userId = await users.addMember(api.services, tenant.accountId, tenant.admin.email, { email, name: "Kept Name", role: "member" });
    const res = await api
      .request()
      .put(`/v1/users/${userId}/name?dryRun=true`)
      .set(as(tenant.key))
      .send({ name: "Changed" });
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "query", field: "dryRun" }));
    const m = await api.db.prisma.membership.findFirst({ where: { accountId: tenant.accountId, userId: BigInt(userId) } });
    expect(m?.name).toBe("Kept Name");
  });
});
