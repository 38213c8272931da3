// Issue 10: every bad input answered with a 400 naming the field, never a 500; query strings
// read as clients send them; every invalid field reported; numbers only in canonical form.
// Issue 23: JSON nested at most 32 levels, prototype names as parameters, portable patterns.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import YAML from "yaml";
import { loadContract } from "../server/contract.ts";
import type { TestApi } from "./support/api.ts";
import { as, startWithTenants } from "./support/suite.ts";
import type { Tenant } from "./support/tenants.ts";
import * as segments from "../server/services/segments.ts";

let api: TestApi;
let tenant: Tenant;
let segmentId: number;
let email: string;

beforeAll(async () => {
  ({ api, tenant } = await startWithTenants());
  email = encodeURIComponent(tenant.admin.email);
  segmentId = await segments.create(api.services, tenant.accountId, tenant.admin.email, {
    datasetId: tenant.datasets[0],
    name: "Robustness",
    filters: { match: "all", conditions: [{ field: "country", operator: "eq", value: "DE" }] },
  });
});
afterAll(() => api?.close());

const TEXT_RULE = /control characters|surrogate/;

/** A 400 whose details name `field` at `location`, and nothing logged as failed. */
function expectNamed(res: { status: number; body: { details?: { location: string; field: string; message: string }[] } }, location: string, field: string, message: RegExp = /./) {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body.details).toContainEqual({ location, field, message: expect.stringMatching(message) });
}

const json = (text: string) => (req: ReturnType<ReturnType<TestApi["request"]>["post"]>) => req.set("content-type", "application/json").send(text);

describe("the character rule of text fields", () => {
  const request = () => api.request();
  const cases: [string, () => Promise<any>, string, string][] = [
    ["a dataset name", () => request().post(`/v1/datasets?email=${email}`).set(as(tenant.key)).send({ name: "Main\u0000site" }), "body", "name"],
    ["a user's name", () => request().post(`/v1/users?email=${email}`).set(as(tenant.key)).send({ email: "nul@example.test", name: "N\u0000l", datasetIds: [] }), "body", "name"],
    ["humanName", () => request().put(`/v1/datasets/${tenant.datasets[0]}/name?email=${email}&humanName=a%00b`).set(as(tenant.key)), "query", "humanName"],
    ["segmentName", () => request().put(`/v1/segments/${segmentId}?email=${email}&segmentName=a%00b`).set(as(tenant.key)).send({}), "query", "segmentName"],
    [
      "formInputAttribute",
      () => request().put(`/v1/datasets/${tenant.datasets[0]}/form-tracking?email=${email}&formTracking=true&allowIpMasking=true&formInputAttribute=na%00me`).set(as(tenant.key)),
      "query",
      "formInputAttribute",
    ],
    [
      "a filter value",
      () =>
        request()
          .post(`/v1/segments?email=${email}`)
          .set(as(tenant.key))
          .send({ datasetId: tenant.datasets[0], name: "Nul", filters: { match: "all", conditions: [{ field: "country", operator: "eq", value: "D\u0000E" }] } }),
      "body",
      "filters.conditions[0].value",
    ],
    [
      "a lone surrogate in a filter value",
      () =>
        json(`{"datasetId":"${tenant.datasets[0]}","name":"Lone","filters":{"match":"all","conditions":[{"field":"country","operator":"eq","value":"B\\ud800"}]}}`)(
          request().post(`/v1/segments?email=${email}`).set(as(tenant.key)),
        ),
      "body",
      "filters.conditions[0].value",
    ],
    [
      "a filter of the leads list",
      () =>
        request()
          .get(`/v1/leads`)
          .query({ email: tenant.admin.email, datasetId: tenant.datasets[0], filter: JSON.stringify({ match: "all", conditions: [{ field: "country", operator: "eq", value: "\u0000" }] }) })
          .set(as(tenant.key)),
      "query",
      "filter.conditions[0].value",
    ],
    [
      "exclusion data",
      () => request().post("/v1/dataset-exclusion").set(as(tenant.key)).send({ datasetId: tenant.datasets[0], type: "organizationDomain", data: "evil\u0000.example" }),
      "body",
      "data",
    ],
    [
      "a tag",
      () => request().put("/v1/management/lead-tags").set(as(tenant.key)).send({ datasetId: tenant.datasets[0], leadId: "lead_1", add: ["h\u0000t"] }),
      "body",
      "add[0]",
    ],
    ["a leadId in the path", () => request().get(`/v1/leads/a%00b/visits?email=${email}&datasetId=${tenant.datasets[0]}`).set(as(tenant.key)), "path", "leadId"],
    ["a leadId in a body", () => request().put("/v1/management/lead-tags").set(as(tenant.key)).send({ datasetId: tenant.datasets[0], leadId: "l\u0007", add: ["hot"] }), "body", "leadId"],
    ["a DEL character in a name", () => request().post(`/v1/datasets?email=${email}`).set(as(tenant.key)).send({ name: "Main\u007fsite" }), "body", "name"],
    ["a C1 control character in a name", () => request().post(`/v1/datasets?email=${email}`).set(as(tenant.key)).send({ name: "Main\u0085site" }), "body", "name"],
  ];

  it.each(cases)("when text breaks the character rule (%s), then 400 naming the field", async (_what, send, location, field) => {
    const res = await send();
    expectNamed(res, location, field, TEXT_RULE);
    expect(api.logs.join("\n")).not.toMatch(/request failed|does not match the spec/);
  });

  it("when text holds letters of any script and emoji, then it is accepted", async () => {
    const res = await api.request().post(`/v1/datasets?email=${email}`).set(as(tenant.key)).send({ name: "Café 東京 😀 Ω" });
    expect(res.status).toBe(200);
  });
});

describe("dates that do not exist", () => {
  const summary = (body: object) => api.request().post("/api/credits/usage/summary").set(as(tenant.key)).send(body);

  it.each([
    ["from", { from: "2026-02-29", to: "2026-03-31" }],
    ["from", { from: "2026-04-31", to: "2026-05-31" }],
    ["to", { from: "2026-01-01", to: "2026-13-01" }],
    ["from", { from: "2026-02-30", to: "2026-03-01" }],
  ])("when %s is not a day of the calendar (%j), then 400 naming it, not an ordering error", async (field, body) => {
    const res = await summary(body);
    expect(res.status).toBe(400);
    expect(Object.keys(res.body.params)).toEqual([field]);
    expect(res.body.params[field]).not.toMatch(/after/);
  });

  it("when 2028-02-29 (a leap day) is asked, then it is a day", async () => {
    expect((await summary({ from: "2028-02-29", to: "2028-03-01" })).status).toBe(200);
  });
});

describe("query strings as clients send them", () => {
  const rename = (query: string) => api.request().put(`/v1/datasets/${tenant.datasets[1]}/name?email=${email}&${query}`).set(as(tenant.key));
  const nameOf = async () => (await api.db.prisma.dataset.findUnique({ where: { id: tenant.datasets[1] }, select: { name: true } }))!.name;

  it("when a value has `+` for a space (form encoding), then it is read as a space", async () => {
    expect((await rename("humanName=Main+web+site")).status).toBe(204);
    expect(await nameOf()).toBe("Main web site");
  });

  it("when a value has the characters encodeURIComponent leaves raw, then they are accepted as they are", async () => {
    expect((await rename("humanName=A!(b)*'c,d~e-f_g.h")).status).toBe(204);
    expect(await nameOf()).toBe("A!(b)*'c,d~e-f_g.h");
  });

  it("when URLSearchParams encodes the query, then it is read back exactly", async () => {
    const humanName = "Ünïcode & co + 50% (new)";
    const res = await api.request().put(`/v1/datasets/${tenant.datasets[1]}/name?${new URLSearchParams({ email: tenant.admin.email, humanName })}`).set(as(tenant.key));
    expect(res.status).toBe(204);
    expect(await nameOf()).toBe(humanName);
  });

  it("when an email has a raw `+`, then it is a space by the form rules, so 400 naming email", async () => {
    expectNamed(await api.request().get(`/v1/users?email=ada+admin@example.test`).set(as(tenant.key)), "query", "email");
  });

  it.each(["%zz", "%E0%A4%A", "%C0%AF", "%ED%A0%80", "%"])("when a query value is malformed (%s), then 400 naming the parameter and nothing stored", async (bad) => {
    const before = await nameOf();
    expectNamed(await rename(`humanName=a${bad}`), "query", "humanName", /percent-encoded UTF-8/);
    expect(await nameOf()).toBe(before);
  });

  it.each(["%zz", "%E0%A4%A", "%C0%AF"])("when a path parameter is malformed (%s), then 400 naming the parameter", async (bad) => {
    const res = await api.request().get(`/v1/leads/a${bad}/visits?email=${email}&datasetId=${tenant.datasets[0]}`).set(as(tenant.key));
    expectNamed(res, "path", "leadId", /percent-encoded UTF-8/);
    expect(api.logs.join("\n")).not.toMatch(/request failed|does not match the spec/);
  });
});

describe("every invalid field reported", () => {
  it("when several fields are invalid, then one detail per field", async () => {
    const res = await api.request().post(`/v1/users?email=not-an-email`).set(as(tenant.key)).send({ email: 3, name: "", role: "boss", extra: 1 });
    expect(res.status).toBe(400);
    const fields = res.body.details.map((d: { location: string; field: string }) => `${d.location} ${d.field}`);
    expect(fields.sort()).toEqual(["body email", "body extra", "body name", "body role", "query email"]);
  });

  it("when the body is missing, then 400 naming the body", async () => {
    expectNamed(await api.request().post(`/v1/users?email=${email}`).set(as(tenant.key)), "body", "(root)", /required/);
  });

  it("when the content type is not JSON, then 400 naming the body", async () => {
    const res = await api.request().post(`/v1/users?email=${email}`).set(as(tenant.key)).set("content-type", "text/plain").send("name=x");
    expectNamed(res, "body", "(root)", /application\/json/);
  });

  it.each(["null", "42", '"x"', "[]", "true"])("when the body is %s, then 400: it must be an object (it is JSON)", async (text) => {
    const res = await json(text)(api.request().post(`/v1/users?email=${email}`).set(as(tenant.key)));
    expectNamed(res, "body", "(root)", /must be object/);
    expect(res.body.error).toBe("validation_failed");
  });

  it("when PUT /v1/segments/{segmentId} comes without a body, then 400 body required and the segment unchanged", async () => {
    const before = await api.db.prisma.segment.findUnique({ where: { id: segmentId } });
    for (const req of [
      api.request().put(`/v1/segments/${segmentId}?segmentName=Renamed`).set(as(tenant.key)),
      api.request().put(`/v1/segments/${segmentId}?segmentName=Renamed`).set(as(tenant.key)).set("content-type", "application/json"),
    ]) {
      expectNamed(await req, "body", "(root)", /required/);
    }
    expect(await api.db.prisma.segment.findUnique({ where: { id: segmentId } })).toEqual(before);
  });
});

describe("strict numbers", () => {
  it.each(["0x1", "1e0", "1.0", "+1", "01", "%201", "1%20", "-0", "9007199254740993"])("when userId is %s, then 400 naming userId", async (text) => {
    expectNamed(await api.request().put(`/v1/users/${text}/name`).set(as(tenant.key)).send({ name: "X" }), "path", "userId");
  });

  it.each(["0xa", "1e1", "10.0", "+10", "010", "%2010"])("when limit is %s, then 400 naming limit", async (text) => {
    expectNamed(await api.request().get(`/v1/users?email=${email}&limit=${text}`).set(as(tenant.key)), "query", "limit");
  });

  it("when the numbers are canonical, then they are accepted", async () => {
    expect((await api.request().put(`/v1/users/${tenant.member.id}/name`).set(as(tenant.key)).send({ name: "Max" })).status).toBe(204);
    expect((await api.request().get(`/v1/users?email=${email}&limit=10`).set(as(tenant.key))).status).toBe(200);
  });
});

describe("precedence on a path that does not decode", () => {
  it("when the request has no key, then 401 before the 400 of the path", async () => {
    const res = await api.request().get(`/v1/leads/a%zz/visits?email=${email}&datasetId=${tenant.datasets[0]}`);
    expect(res.status).toBe(401);
  });

  it("when the request has a key, then it is counted by the rate limit (the RateLimit headers) and answered 400", async () => {
    const res = await api.request().get(`/v1/leads/a%zz/visits`).set(as(tenant.key));
    expect(res.status).toBe(400);
    expect(res.headers.ratelimit).toBeDefined();
  });
});

describe("deeply nested JSON (at most 32 levels)", () => {
  const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
  const rename = (body: string) => json(body)(api.request().put(`/v1/users/${tenant.member.id}/name`).set(as(tenant.key)) as never);
  const nameOf = async () => {
    const res = await api.request().get(`/v1/users?email=${email}&limit=500`).set(as(tenant.key));
    return (res.body.data as { userId: number; name: string }[]).find((m) => m.userId === tenant.member.id)?.name;
  };

  it.each([33, 5_000, 100_000])("when a body nests %i levels deep, then 400 naming the body and nothing changed", async (depth) => {
    const before = await nameOf();
    const res = await rename(`{"name":${nested(depth - 1)}}`);
    expectNamed(res, "body", "(root)", /32 levels/);
    expect(await nameOf()).toBe(before);
    expect(api.logs.join("\n")).not.toMatch(/request failed|does not match the spec/);
  });

  it("when a JSON parameter nests 300 levels deep, then 400 naming the parameter", async () => {
    const res = await api
      .request()
      .get(`/v1/leads`)
      .query({ email: tenant.admin.email, datasetId: tenant.datasets[0], filter: `{"match":"all","conditions":${nested(300)}}` })
      .set(as(tenant.key));
    expectNamed(res, "query", "filter", /32 levels/);
  });

  it("when a body nests exactly 32 levels, then the depth is not what is refused", async () => {
    const res = await rename(`{"name":${nested(31)}}`);
    expectNamed(res, "body", "name", /string/);
  });
});

describe("prototype names as query parameters", () => {
  it.each(["__proto__", "constructor", "toString", "hasOwnProperty"])("when the query names %s, then 400 naming it as an unknown parameter", async (name) => {
    const res = await api.request().get(`/v1/users?email=${email}&${name}=1`).set(as(tenant.key));
    expectNamed(res, "query", name, /not a parameter/);
  });
});

describe("the contract's character patterns", () => {
  const specs = ["openapi", "collector", "operator"].map((name) => YAML.parse(readFileSync(new URL(`../spec/${name}.yaml`, import.meta.url), "utf8")));
  const patterns = new Set<string>();
  const collect = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(collect);
    else if (node && typeof node === "object") {
      for (const [key, value] of Object.entries(node)) {
        if (key === "pattern" && typeof value === "string") patterns.add(value);
        else collect(value);
      }
    }
  };
  specs.forEach(collect);

  it("when another toolchain reads the spec, then every pattern compiles in Python's re and JavaScript without the u flag", () => {
    expect(patterns.size).toBeGreaterThan(3);
    for (const pattern of patterns) expect(() => new RegExp(pattern), pattern).not.toThrow();
    const script = "import json,re,sys\nfor p in json.load(sys.stdin): re.compile(p)\nprint('ok')";
    expect(execFileSync("python3", ["-c", script], { input: JSON.stringify([...patterns]), encoding: "utf8" }).trim()).toBe("ok");
  });

  const contract = loadContract();
  const schemaOf = (path: string) => path.split("/").reduce((at: any, key) => at[key], contract.document as any);
  const requestNames: [string, object][] = [
    ["updateUserName.name", schemaOf("components/schemas/UpdateUserName/properties/name")],
    ["addUser.name", schemaOf("components/schemas/AddUser/properties/name")],
    ["createDataset.name", schemaOf("components/schemas/AddDataset/properties/name")],
    ["renameDataset humanName", schemaOf("components/parameters/HumanName/schema")],
    ["createSegment.name", schemaOf("components/schemas/CreateSegmentRequest/properties/name")],
    ["updateSegment segmentName", schemaOf("components/parameters/SegmentName/schema")],
    ["updateLeadTags add[]/remove[]", schemaOf("components/schemas/Tag")],
  ];

  it.each(requestNames)("when %s holds a control character or only blanks, then its schema refuses it; a name of any script passes", (_field, schema) => {
    const validate = contract.compile(schema);
    for (const bad of ["a\u0001b", "tab\there", "\u0085", "   ", ""]) expect(validate(bad), JSON.stringify(bad)).toBe(false);
    for (const good of ["Café 東京", " padded name ", "x"]) expect(validate(good), good).toBe(true);
  });

  it("when the pixel's u is empty, then its schema refuses it (as the service does)", () => {
    const collector = specs[1];
    const u = collector.paths["/collect"].get.parameters.find((p: { name?: string }) => p.name === "u");
    expect(u.schema.minLength).toBe(1);
  });
});
