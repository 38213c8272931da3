// Leads: getDatasetExclusions, saveDatasetExclusion, removeDatasetExclusion, listLeads.
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPartnerClient } from "../client/index.ts";
import type { SegmentFilter } from "../server/services/lead-filter.ts";
import { addExclusion, insertLeads, type NewLead } from "../server/services/leads.ts";
import type { TestApi } from "./support/api.ts";
import { newLead, where } from "./support/leads.ts";
import type { Tenant } from "./support/tenants.ts";
import { as, startWithTenants } from "./support/suite.ts";
import * as segments from "../server/services/segments.ts";
import * as userDatasets from "../server/services/user-datasets.ts";
import * as datasets from "../server/services/datasets.ts";

let api: TestApi;
let tenant: Tenant;
let other: Tenant;

beforeAll(async () => ({ api, tenant, other } = await startWithTenants()));
afterAll(() => api?.close());

let counter = 0;
/** A dataset of its own, so that rules and leads of one test do not meet another's. */
const freshDataset = (t = tenant) => datasets.create(api.services, t.accountId, t.admin.email, { name: `Leads ${++counter} ${Math.random()}` });

const insert = (datasetId: string, leads: NewLead[], t = tenant) => insertLeads(api.services, t.accountId, datasetId, leads);

const rule = (datasetId: string, type: string, data: string) => ({ datasetId, type, data });
const save = (body: object, t = tenant) => api.request().post("/v1/dataset-exclusion").set(as(t.key)).send(body);
const unsave = (body: object, t = tenant) => api.request().delete("/v1/dataset-exclusion").set(as(t.key)).send(body);
/** The dataset's exclusion rules as getDatasetExclusions lists them. */
async function rules(datasetId: string, t = tenant): Promise<{ type: string; data: string[] }[]> {
  const res = await api.request().get("/v1/dataset-exclusion").query({ datasetId }).set(as(t.key));
  expect(res.status).toBe(200);
  return res.body.data;
}
const ruleCount = async (datasetId: string, t = tenant) => (await rules(datasetId, t)).reduce((n, group) => n + group.data.length, 0);

type Query = Record<string, string | number>;
const list = (query: Query, t = tenant) =>
  api.request().get("/v1/leads").query({ email: t.admin.email, ...query }).set(as(t.key));

/** The lead ids of the dataset's listing (one page of up to 500). */
async function listed(datasetId: string, query: Query = {}): Promise<string[]> {
  const res = await list({ datasetId, limit: 500, ...query });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body.nextCursor).toBeNull();
  return res.body.data.map((l: { leadId: string }) => l.leadId);
}

const json = (filter: SegmentFilter) => JSON.stringify(filter);

describe("saveDatasetExclusion", () => {
  it("when a rule is saved, then 204 and it is listed", async () => {
    const datasetId = await freshDataset();
    const res = await save(rule(datasetId, "organizationDomain", "Competitor.example"));
    expect(res.status).toBe(204);
    expect(res.text).toBe("");
    expect(await rules(datasetId)).toEqual([
      { type: "organizationDomain", data: ["Competitor.example"] },
    ]);
  });

  it.each([
    ["organizationDomain", "competitor.example", "COMPETITOR.example"],
    ["organizationName", "Competitor Inc", "competitor inc"],
    ["use_id", "lead_abc", "lead_abc"],
  ])("when a %s rule exists as %s and %s is saved, then 409 and there is still one rule", async (type, first, again) => {
    const datasetId = await freshDataset();
    expect((await save(rule(datasetId, type, first))).status).toBe(204);
    const res = await save(rule(datasetId, type, again));
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: "conflict", message: expect.any(String) });
    expect(await ruleCount(datasetId)).toBe(1);
  });

  it("when use_id values differ only in case, then both are rules (lead ids compare exactly)", async () => {
    const datasetId = await freshDataset();
    expect((await save(rule(datasetId, "use_id", "lead_ABC"))).status).toBe(204);
    expect((await save(rule(datasetId, "use_id", "lead_abc"))).status).toBe(204);
    expect(await ruleCount(datasetId)).toBe(2);
  });

  it("when the same value is saved under two types, then both are rules", async () => {
    const datasetId = await freshDataset();
    expect((await save(rule(datasetId, "organizationName", "acme"))).status).toBe(204);
    expect((await save(rule(datasetId, "organizationDomain", "acme"))).status).toBe(204);
    expect(await ruleCount(datasetId)).toBe(2);
  });

  it("when the dataset is another account's, then 404 and no rule is written", async () => {
    const res = await save(rule(other.datasets[0], "organizationName", "Sneaky"));
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "not_found", message: expect.any(String) });
    expect(await ruleCount(other.datasets[0], other)).toBe(0);
  });

  it.each([
    ["the type is unknown", { type: "ip_range", data: "10.0.0.0/8" }, "type"],
    ["data is empty", { type: "organizationName", data: "" }, "data"],
    ["data is missing", { type: "organizationName" }, "data"],
  ])("when %s, then 400 naming the field", async (_case, fields, field) => {
    const res = await save({ datasetId: tenant.datasets[0], ...fields });
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "body", field }));
  });
});

describe("getDatasetExclusions", () => {
  let datasetId: string;
  beforeAll(async () => {
    datasetId = await freshDataset();
    for (const [type, data] of [
      ["organizationDomain", "zeta.example"],
      ["organizationDomain", "Alpha.example"],
      ["use_id", "lead_9"],
      ["organizationDomain", "beta.example"],
    ] as const) {
      await addExclusion(api.services, tenant.accountId, { datasetId, type, data });
    }
  });
  const get = (query: Query, t = tenant) => api.request().get("/v1/dataset-exclusion").query(query).set(as(t.key));

  it("when the dataset has rules, then 200 grouped by type in the spec's order, values ascending as saved", async () => {
    const res = await get({ datasetId });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: [
        { type: "use_id", data: ["lead_9"] },
        { type: "organizationDomain", data: ["Alpha.example", "beta.example", "zeta.example"] },
      ],
    });
  });

  it("when a type is given, then only its group", async () => {
    const res = await get({ datasetId, type: "use_id" });
    expect(res.body).toEqual({ data: [{ type: "use_id", data: ["lead_9"] }] });
  });

  it("when the type has no rules, then 200 with no groups", async () => {
    const res = await get({ datasetId, type: "organizationName" });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: [] });
  });

  it("when the dataset is another account's, then 404", async () => {
    const res = await get({ datasetId: other.datasets[0] });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe("not_found");
  });

  it("when the type is unknown, then 400 naming it", async () => {
    const res = await get({ datasetId, type: "everything" });
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "query", field: "type" }));
  });
});

describe("removeDatasetExclusion", () => {
  it("when the rule exists (named in another case), then 204 and it is gone", async () => {
    const datasetId = await freshDataset();
    await save(rule(datasetId, "organizationName", "Competitor Inc"));
    await save(rule(datasetId, "organizationName", "Keep Me"));
    const res = await unsave(rule(datasetId, "organizationName", "COMPETITOR INC"));
    expect(res.status).toBe(204);
    expect(await rules(datasetId)).toEqual([{ type: "organizationName", data: ["Keep Me"] }]);
  });

  it("when the dataset has no such rule, then 404", async () => {
    const datasetId = await freshDataset();
    await save(rule(datasetId, "use_id", "lead_ABC"));
    for (const absent of [rule(datasetId, "use_id", "lead_abc"), rule(datasetId, "organizationName", "lead_ABC")]) {
      const res = await unsave(absent);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ error: "not_found", message: expect.any(String) });
    }
    expect(await ruleCount(datasetId)).toBe(1);
  });

  it("when the rule is another account's, then 404 and it stays", async () => {
    const datasetId = await freshDataset(other);
    await save(rule(datasetId, "organizationDomain", "x.example"), other);
    const res = await unsave(rule(datasetId, "organizationDomain", "x.example"));
    expect(res.status).toBe(404);
    expect(await ruleCount(datasetId, other)).toBe(1);
  });

  it("when the body lacks the type, then 400 naming it", async () => {
    const res = await unsave({ datasetId: tenant.datasets[0], data: "x" });
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "body", field: "type" }));
  });
});

describe("listLeads", () => {
  // Five leads whose fields the filter cases below select from; listed newest visit first.
  let datasetId: string;
  const at = (iso: string) => new Date(iso);
  let fixture: NewLead[];
  beforeAll(async () => {
    datasetId = await freshDataset();
    await userDatasets.grant(api.services, tenant.accountId, tenant.member.id, datasetId);
    fixture = [
      newLead({ leadId: "l1", organizationName: "Acme GmbH", organizationDomain: "Acme.example", industry: "Software", employeeCount: 1200, country: "de", city: "Berlin",
        firstVisitAt: at("2025-01-10T00:00:00Z"), lastVisitAt: at("2025-06-10T12:00:00Z"), visitCount: 7, tags: ["Hot", "vip"], assigneeUserId: tenant.member.id }),
      newLead({ leadId: "l2", organizationName: "Globex AG", organizationDomain: "globex.example", industry: "Manufacturing", employeeCount: 300, country: "DE", city: "Munich",
        firstVisitAt: at("2025-02-01T00:00:00Z"), lastVisitAt: at("2025-06-09T12:00:00Z"), visitCount: 2, tags: ["cold"], identitySource: "declared" }),
      newLead({ leadId: "l3", organizationName: "Initech", organizationDomain: "initech.example", industry: "Software", employeeCount: 50, country: "US", city: "Austin",
        firstVisitAt: at("2025-03-01T00:00:00Z"), lastVisitAt: at("2025-06-08T12:00:00Z"), visitCount: 1, identitySource: "form_email", identityConfidence: 0.6 }),
      newLead({ leadId: "l4", organizationName: "Umbrella Corp", organizationDomain: "umbrella.example", industry: "Pharma", employeeCount: 5000, country: "GB", city: "London",
        firstVisitAt: at("2025-04-01T00:00:00Z"), lastVisitAt: at("2025-06-07T12:00:00Z"), visitCount: 12, tags: ["hot"], assigneeUserId: tenant.admin.id,
        identitySource: "reverse_dns", identityConfidence: 0.85 }),
      newLead({ leadId: "l5", organizationName: "Stark Industries",
        firstVisitAt: at("2025-05-01T00:00:00Z"), lastVisitAt: at("2025-06-06T12:00:00Z"), visitCount: 3, tags: ["warm lead"] }),
    ];
    // inserted oldest first: the listing's order must come from lastVisitAt, not insertion
    await insert(datasetId, [...fixture].reverse());
    await insert(tenant.datasets[1], [newLead({ leadId: "l1", organizationName: "Same id, other dataset" })]);
  });

  it("when the dataset has leads, then 200 with exactly its leads, newest visit first, every field", async () => {
    const res = await list({ datasetId });
    expect(res.status).toBe(200);
    expect(res.body.nextCursor).toBeNull();
    expect(res.body.data.map((l: { leadId: string }) => l.leadId)).toEqual(["l1", "l2", "l3", "l4", "l5"]);
    expect(res.body.data[0]).toEqual({
      leadId: "l1",
      organizationName: "Acme GmbH",
      organizationDomain: "acme.example",
      domainSource: "curated",
      industry: "Software",
      employeeCount: 1200,
      country: "DE",
      city: "Berlin",
      firstVisitAt: "2025-01-10T00:00:00.000Z",
      lastVisitAt: "2025-06-10T12:00:00.000Z",
      visitCount: 7,
      tags: ["hot", "vip"],
      assigneeUserId: tenant.member.id,
      // a visit months ago adds nothing for recency; 7 page views are 20 * 7 / 20
      score: 7,
      // recognised by its own network, as every lead before identities
      identitySource: "network",
      identityConfidence: 1,
    });
    expect(res.body.data[2]).toMatchObject({ leadId: "l3", identitySource: "form_email", identityConfidence: 0.6 });
    expect(res.body.data[4]).toMatchObject({ leadId: "l5", organizationDomain: null, domainSource: null, industry: null, employeeCount: null, country: null, city: null, assigneeUserId: null });
  });

  const cases: [string, SegmentFilter, string[]][] = [
    ["text eq, in another case", where("country", "eq", "de"), ["l1", "l2"]],
    ["text neq (a missing value matches)", where("country", "neq", "DE"), ["l3", "l4", "l5"]],
    ["text contains", where("organizationName", "contains", "CORP"), ["l4"]],
    ["text in", where("industry", "in", ["software", "PHARMA"]), ["l1", "l3", "l4"]],
    ["text exists false", where("city", "exists", false), ["l5"]],
    ["text exists true", where("organizationDomain", "exists", true), ["l1", "l2", "l3", "l4"]],
    ["number gte", where("employeeCount", "gte", 300), ["l1", "l2", "l4"]],
    ["number lte", where("employeeCount", "lte", 300), ["l2", "l3"]],
    ["number eq", where("employeeCount", "eq", 50), ["l3"]],
    ["number neq (a missing value matches)", where("employeeCount", "neq", 50), ["l1", "l2", "l4", "l5"]],
    ["number in", where("employeeCount", "in", [300, 5000]), ["l2", "l4"]],
    ["number exists false", where("employeeCount", "exists", false), ["l5"]],
    ["visit count gte", where("visitCount", "gte", 7), ["l1", "l4"]],
    ["date gte a day (midnight UTC)", where("lastVisitAt", "gte", "2025-06-08"), ["l1", "l2", "l3"]],
    ["date lte a date-time with an offset", where("lastVisitAt", "lte", "2025-06-07T23:59:59+02:00"), ["l4", "l5"]],
    ["date lte a day, inclusive of midnight", where("firstVisitAt", "lte", "2025-02-01"), ["l1", "l2"]],
    ["tags contains (normalised)", where("tags", "contains", " HOT "), ["l1", "l4"]],
    ["tags in", where("tags", "in", ["vip", "Warm  Lead"]), ["l1", "l5"]],
    ["tags exists false", where("tags", "exists", false), ["l3"]],
    ["assignee eq", where("assigneeUserId", "eq", 0), ["l1"]], // 0 is replaced by the member's id below
    ["assignee exists", where("assigneeUserId", "exists", true), ["l1", "l4"]],
    ["identity source eq", where("identitySource", "eq", "form_email"), ["l3"]],
    ["identity source neq", where("identitySource", "neq", "network"), ["l2", "l3", "l4"]],
    ["identity source in", where("identitySource", "in", ["declared", "reverse_dns"]), ["l2", "l4"]],
    [
      "match any",
      { match: "any", conditions: [{ field: "country", operator: "eq", value: "US" }, { field: "tags", operator: "contains", value: "cold" }] },
      ["l2", "l3"],
    ],
    [
      "match all",
      { match: "all", conditions: [{ field: "country", operator: "eq", value: "DE" }, { field: "employeeCount", operator: "gte", value: 1000 }] },
      ["l1"],
    ],
  ];

  it.each(cases)("when filtered by %s, then exactly the matching leads", async (_case, filter, expected) => {
    const condition = filter.conditions[0]!;
    if (condition.field === "assigneeUserId" && condition.value === 0) condition.value = tenant.member.id;
    expect(await listed(datasetId, { filter: json(filter) })).toEqual(expected);
  });

  it("when a segment is named, then exactly the leads its filters select; with an ad-hoc filter, those matching both", async () => {
    const segmentId = await segments.create(api.services, tenant.accountId, tenant.admin.email, {
      datasetId,
      name: "Software",
      filters: where("industry", "eq", "software"),
    });
    expect(await listed(datasetId, { segmentId })).toEqual(["l1", "l3"]);
    expect(await listed(datasetId, { segmentId, filter: json(where("country", "eq", "US")) })).toEqual(["l3"]);
  });

  it("when identitySource is given, then only the leads recognised that way; with a filter, those matching both", async () => {
    expect(await listed(datasetId, { identitySource: "network" })).toEqual(["l1", "l5"]);
    expect(await listed(datasetId, { identitySource: "network", filter: json(where("country", "eq", "DE")) })).toEqual(["l1"]);
  });

  it("when identitySource is not one of the four, then 400 naming it", async () => {
    const res = await list({ datasetId, identitySource: "guessed" });
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "query", field: "identitySource" }));
  });

  it("when an identitySource condition names no source or takes another operator, then 400 naming it", async () => {
    const value = await list({ datasetId, filter: json(where("identitySource", "eq", "NETWORK")) });
    expect(value.status).toBe(400);
    expect(value.body.details).toEqual([{ location: "query", field: "filter.conditions[0].value", message: expect.stringContaining("form_email") }]);
    const operator = await list({ datasetId, filter: json(where("identitySource", "contains", "net")) });
    expect(operator.status).toBe(400);
    expect(operator.body.details).toEqual([{ location: "query", field: "filter.conditions[0].operator", message: expect.any(String) }]);
  });

  it("when the segment belongs to another dataset, then 404", async () => {
    const segmentId = await segments.create(api.services, tenant.accountId, tenant.admin.email, {
      datasetId: tenant.datasets[0],
      name: `Elsewhere ${++counter}`,
      filters: where("city", "exists", true),
    });
    const res = await list({ datasetId, segmentId });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "not_found", message: expect.any(String) });
  });

  it("when a filter condition does not fit its field, then 400 naming it in the query", async () => {
    const res = await list({ datasetId, filter: json(where("employeeCount", "contains", "12")) });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ location: "query", field: "filter.conditions[0].operator", message: expect.any(String) }]);
  });

  it.each([
    ["not JSON", "{country: DE"],
    ["JSON that is not a filter", JSON.stringify({ country: "DE" })],
  ])("when filter is %s, then 400 naming it", async (_case, filter) => {
    const res = await list({ datasetId, filter });
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "query", field: expect.stringMatching(/^filter/) }));
  });

  it("when the cursor was not returned by this API, then 400 naming it", async () => {
    const res = await list({ datasetId, cursor: Buffer.from(JSON.stringify({ t: "yesterday", id: "l1" })).toString("base64url") });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ location: "query", field: "cursor", message: expect.any(String) }]);
  });

  it("when a member who reaches the dataset lists it, then 200", async () => {
    const res = await list({ datasetId, email: tenant.member.email });
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(5);
  });

  it("when a member who cannot reach the dataset lists it, then 403", async () => {
    const res = await list({ datasetId: tenant.datasets[1], email: tenant.member.email });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: "forbidden", message: expect.any(String) });
  });

  it("when the acting e-mail is not a member of the account, then 403", async () => {
    const res = await list({ datasetId, email: other.admin.email });
    expect(res.status).toBe(403);
  });

  it("when the dataset is another account's, then 404 and none of its leads are shown", async () => {
    await insert(other.datasets[0], [newLead({ leadId: "secret" })], other);
    const res = await list({ datasetId: other.datasets[0] });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "not_found", message: expect.any(String) });
  });

  it("when datasetId is missing, then 400 naming it", async () => {
    const res = await api.request().get("/v1/leads").query({ email: tenant.admin.email }).set(as(tenant.key));
    expect(res.status).toBe(400);
    expect(res.body.details).toContainEqual(expect.objectContaining({ location: "query", field: "datasetId" }));
  });
});

describe("listLeads with exclusion rules", () => {
  it("when rules of each type are saved, then the leads they match disappear (names and domains in any case), and come back when the rules go", async () => {
    const datasetId = await freshDataset();
    await insert(datasetId, [
      newLead({ leadId: "rival", organizationName: "Rival Metrics", organizationDomain: "rivalmetrics.example" }),
      newLead({ leadId: "partner", organizationName: "Partner Co", organizationDomain: "partner.example" }),
      newLead({ leadId: "bot", organizationName: "Crawler", organizationDomain: null }),
      newLead({ leadId: "customer", organizationName: "Good Customer", organizationDomain: "customer.example" }),
    ]);
    const all = ["customer", "bot", "partner", "rival"];
    expect(await listed(datasetId)).toEqual(all);

    const rules = [rule(datasetId, "organizationDomain", "RivalMetrics.EXAMPLE"), rule(datasetId, "organizationName", "partner co"), rule(datasetId, "use_id", "bot")];
    for (const r of rules) expect((await save(r)).status).toBe(204);
    expect(await listed(datasetId)).toEqual(["customer"]);
    // a filter that selects a hidden lead still does not show it
    expect(await listed(datasetId, { filter: json(where("organizationDomain", "eq", "rivalmetrics.example")) })).toEqual([]);

    expect((await unsave(rule(datasetId, "organizationDomain", "rivalmetrics.example"))).status).toBe(204);
    expect(await listed(datasetId)).toEqual(["customer", "rival"]);
    for (const r of rules.slice(1)) expect((await unsave(r)).status).toBe(204);
    expect(await listed(datasetId)).toEqual(all);
  });

  it("when a rule hides leads, then pages count only visible leads and leads arriving later are hidden too", async () => {
    const datasetId = await freshDataset();
    await save(rule(datasetId, "organizationDomain", "hidden.example"));
    const leads = Array.from({ length: 6 }, (_, i) =>
      newLead({ leadId: `p${i}`, organizationDomain: i % 2 ? "hidden.example" : `visible${i}.example` }),
    );
    await insert(datasetId, leads);
    const first = await list({ datasetId, limit: 2 });
    expect(first.body.data.map((l: { leadId: string }) => l.leadId)).toEqual(["p4", "p2"]);
    const second = await list({ datasetId, limit: 2, cursor: first.body.nextCursor });
    expect(second.body.data.map((l: { leadId: string }) => l.leadId)).toEqual(["p0"]);
    expect(second.body.nextCursor).toBeNull();
    await insert(datasetId, [newLead({ leadId: "late", organizationDomain: "HIDDEN.example" })]);
    expect(await listed(datasetId)).toEqual(["p4", "p2", "p0"]);
  });

  it("when another dataset has a rule, then it hides nothing here", async () => {
    const [here, there] = [await freshDataset(), await freshDataset()];
    await insert(here, [newLead({ leadId: "x", organizationName: "Shared Name" })]);
    await save(rule(there, "organizationName", "Shared Name"));
    expect(await listed(here)).toEqual(["x"]);
  });
});

describe("listLeads paging", () => {
  it("when pages are read while leads arrive, then no lead appears twice and every lead that existed is listed, in order", async () => {
    const datasetId = await freshDataset();
    const base = Date.UTC(2025, 6, 1);
    const minute = 60_000;
    // two leads share a last visit: the leadId orders them
    const times = [10, 9, 8, 8, 7, 6, 5, 4, 3];
    const original = times.map((m, i) => newLead({ leadId: `o${i}`, lastVisitAt: new Date(base + m * minute) }));
    await insert(datasetId, original);

    const seen: { leadId: string; lastVisitAt: string }[] = [];
    let cursor: string | null = null;
    let page = 0;
    do {
      const res = await list({ datasetId, limit: 2, ...(cursor ? { cursor } : {}) });
      expect(res.status).toBe(200);
      seen.push(...res.body.data);
      cursor = res.body.nextCursor;
      page += 1;
      if (page === 2) {
        // newer leads (before the cursor) and one at the cursor's own time with a higher id
        await insert(datasetId, [
          newLead({ leadId: "n-newest", lastVisitAt: new Date(base + 20 * minute) }),
          newLead({ leadId: "o9", lastVisitAt: new Date(base + 8 * minute) }),
        ]);
      }
    } while (cursor);

    const ids = seen.map((l) => l.leadId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const lead of original) expect(ids).toContain(lead.leadId);
    expect(ids).not.toContain("n-newest");
    const keys = seen.map((l) => [Date.parse(l.lastVisitAt), l.leadId] as const);
    for (let i = 1; i < keys.length; i++) {
      const [t0, id0] = keys[i - 1]!;
      const [t1, id1] = keys[i]!;
      expect(t0 > t1 || (t0 === t1 && id0 > id1)).toBe(true);
    }
  });

  it("when the limit is larger than the dataset, then one page without a cursor", async () => {
    const datasetId = await freshDataset();
    await insert(datasetId, [newLead(), newLead()]);
    const res = await list({ datasetId, limit: 3 });
    expect(res.body.data).toHaveLength(2);
    expect(res.body.nextCursor).toBeNull();
  });
});

describe("the typed client with segments and exclusions", () => {
  it("when a partner creates a segment, lists its leads, and hides one organisation, then the listing follows", async () => {
    const datasetId = await freshDataset();
    await insert(datasetId, [
      newLead({ leadId: "de-1", organizationName: "Berlin Soft", organizationDomain: "berlinsoft.example", country: "DE", employeeCount: 800 }),
      newLead({ leadId: "de-2", organizationName: "Rival GmbH", organizationDomain: "rival.example", country: "DE", employeeCount: 900 }),
      newLead({ leadId: "us-1", organizationName: "Austin Labs", organizationDomain: "austinlabs.example", country: "US", employeeCount: 700 }),
    ]);
    const server = api.app.listen(0, "127.0.0.1");
    await new Promise((resolve) => server.once("listening", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const client = createPartnerClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: tenant.key });
      const email = tenant.admin.email;

      const created = await client.POST("/v1/segments", {
        params: { query: { email } },
        body: { datasetId, name: "German mid-size", filters: { match: "all", conditions: [{ field: "country", operator: "eq", value: "DE" }] } },
      });
      const segmentId = created.data!.id;
      const bySegment = await client.GET("/v1/leads", { params: { query: { email, datasetId, segmentId } } });
      expect(bySegment.data?.data.map((l) => l.leadId)).toEqual(["de-2", "de-1"]);

      const hidden = await client.POST("/v1/dataset-exclusion", { body: { datasetId, type: "organizationDomain", data: "rival.example" } });
      expect(hidden.response.status).toBe(204);
      const filter = JSON.stringify({ match: "all", conditions: [{ field: "employeeCount", operator: "gte", value: 750 }] });
      const afterRule = await client.GET("/v1/leads", { params: { query: { email, datasetId, segmentId, filter } } });
      expect(afterRule.data?.data.map((l) => l.leadId)).toEqual(["de-1"]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
