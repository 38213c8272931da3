// Issue 10: every bad input answered with a 400 naming the field, never a 500; query strings
// read as clients send them; every invalid field reported; numbers only in canonical form.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestApi } from "./support/api.ts";
import { as, startWithTenants } from "./support/suite.ts";
import type { Tenant } from "./support/tenants.ts";

let api: TestApi;
let tenant: Tenant;
let segmentId: number;
let email: string;

beforeAll(async () => {
  ({ api, tenant } = await startWithTenants());
  email = encodeURIComponent(tenant.admin.email);
  segmentId = await api.services.segments.create(tenant.accountId, tenant.admin.email, {
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
