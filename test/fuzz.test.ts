// Issue 10 item 10: property-based requests generated from the spec, for every operation, valid
// and invalid (the classes of issue 10: control characters and lone surrogates, dates that do not
// exist, malformed percent-encoding, `+` and raw reserved characters, non-canonical numbers,
// bodies that are not objects, missing and unknown fields, strings beyond maxLength). Every
// answer must be a status the operation documents, never a 5xx, with a body matching its schema
// and only the headers its response declares (RateLimit). A fixed seed and a fixed number of runs
// per operation (FUZZ_RUNS, default 8 valid + 8 invalid) keep it reproducible and bounded; it
// runs in the normal suite, on PGlite and on PostgreSQL (TEST_DATABASE_URL).
// Issue 23 added what outside fuzzers found: bodies nested far beyond 32 levels, `__proto__` and
// `constructor` as parameters, and the collector (spec/collector.yaml): any text in every string
// of a batch and of the pixel, any media type, and every method on its public paths.
import { readFileSync } from "node:fs";
import fc from "fast-check";
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import YAML from "yaml";
import { loadContract, type Operation, type SchemaObject } from "../server/contract.ts";
import { responseChecker } from "../server/http/response-check.ts";
import type { TestApi } from "./support/api.ts";
import { newLead } from "./support/leads.ts";
import { startWithTenants } from "./support/suite.ts";
import type { Tenant } from "./support/tenants.ts";
import { ADDRESSES, BROWSER_UA, testTrackingConfig } from "./support/tracking.ts";
import { insertLeads } from "../server/services/leads.ts";
import * as segments from "../server/services/segments.ts";

const SEED = 20261123;
const RUNS = Number(process.env.FUZZ_RUNS ?? 8);

type Node = Record<string, any>;
const contract = loadContract();
const check = responseChecker(contract);
const resolve = (schema: Node): Node => {
  if (!schema?.$ref) return schema;
  const { $ref, ...beside } = schema;
  const target = ($ref as string).slice(2).split("/").reduce((at: Node, key: string) => at[key], contract.document as Node);
  return { ...resolve(target), ...beside };
};

let api: TestApi;
let tenant: Tenant;
/** Real values by field name: the requests reach the rules, not only the validation. */
const pool: Record<string, unknown[]> = {};

beforeAll(async () => {
  ({ api, tenant } = await startWithTenants());
  const segment = await segments.create(api.services, tenant.accountId, tenant.admin.email, {
    datasetId: tenant.datasets[0],
    name: "Fuzzed",
    filters: { match: "all", conditions: [{ field: "country", operator: "eq", value: "DE" }] },
  });
  const lead = newLead({ organizationDomain: "fuzz.example", country: "DE" });
  await insertLeads(api.services, tenant.accountId, tenant.datasets[0], [lead]);
  Object.assign(pool, {
    email: [tenant.admin.email, tenant.admin.email, tenant.member.email],
    datasetId: tenant.datasets,
    datasetIds: [[tenant.datasets[0]], []],
    accountId: [tenant.accountId],
    segmentId: [segment],
    userId: [tenant.admin.id, tenant.member.id],
    userIds: [[tenant.member.id]],
    assigneeUserId: [tenant.member.id],
    leadId: [lead.leadId],
    from: ["2026-01-01"],
    to: ["2026-12-31"],
  });
});
afterAll(() => api?.close());

// ---- values from schemas ------------------------------------------------------------------

const TEXT_RULE = /^[^\p{Cc}\p{Cs}]*$/u;
const isoDate = (d: Date) => d.toISOString().slice(0, 10);
const dates = fc.date({ min: new Date("2000-01-01T00:00:00Z"), max: new Date("2099-12-31T00:00:00Z"), noInvalidDate: true });

function stringOf(s: Node): fc.Arbitrary<string> {
  const max = Math.min(s.maxLength ?? 40, 40);
  const min = s.minLength ?? 0;
  if (s.format === "email") return fc.emailAddress().filter((e) => e.length <= (s.maxLength ?? 254));
  if (s.format === "date") return dates.map(isoDate);
  if (s.format === "date-time") return dates.map((d) => d.toISOString());
  if (s.format === "hostname") return fc.domain().filter((d) => d.length <= (s.maxLength ?? 253));
  if (s.format === "uri") return fc.webUrl();
  if (s.format === "ipv4") return fc.ipV4();
  if (s.format === "ipv6") return fc.ipV6().filter((ip) => ip.length <= (s.maxLength ?? 45));
  const validate = contract.ajv.compile({ ...s, $ref: undefined });
  const base = s.pattern && !String(s.pattern).includes("\\p{")
    ? fc.stringMatching(new RegExp(s.pattern)).map((x) => x.slice(0, max))
    : fc.string({ minLength: min, maxLength: max, unit: "grapheme" });
  return base.filter((x) => validate(x) && TEXT_RULE.test(x));
}

/** Values valid against a schema (as far as the schema says), with real ids where names match. */
function valueOf(schema0: Node | undefined, name?: string, depth = 0): fc.Arbitrary<unknown> {
  const schema = resolve(schema0 ?? {});
  const real = name && pool[name] ? [fc.constantFrom(...pool[name]!)] : [];
  const own = ownValueOf(schema, depth);
  return real.length ? fc.oneof({ arbitrary: real[0]!, weight: 4 }, { arbitrary: own, weight: 1 }) : own;
}

function ownValueOf(schema: Node, depth: number): fc.Arbitrary<unknown> {
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...(schema.enum as unknown[]));
  for (const key of ["oneOf", "anyOf"]) if (schema[key]) return fc.oneof(...(schema[key] as Node[]).map((s) => valueOf(s, undefined, depth + 1)));
  if (schema.allOf) return valueOf(Object.assign({}, ...(schema.allOf as Node[]).map(resolve)), undefined, depth);
  const types = [schema.type ?? "object"].flat().filter((t) => t !== "null");
  return fc.oneof(...types.map((type) => typed(schema, type as string, depth)));
}

function typed(schema: Node, type: string, depth: number): fc.Arbitrary<unknown> {
  switch (type) {
    case "string":
      return stringOf(schema);
    case "integer":
      return fc.integer({ min: schema.minimum ?? -1000, max: Math.min(schema.maximum ?? 100_000, 2 ** 31 - 1) });
    case "number":
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true, noDefaultInfinity: true });
    case "boolean":
      return fc.boolean();
    case "array": {
      const items = depth > 4 ? fc.constant("x") : valueOf(schema.items, undefined, depth + 1);
      return fc.array(items, { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 3, 3) });
    }
    default: {
      if (depth > 4) return fc.constant({});
      const properties = (schema.properties ?? {}) as Record<string, Node>;
      const record = Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, valueOf(v, k, depth + 1)]));
      return fc.record(record, { requiredKeys: (schema.required ?? []) as string[] });
    }
  }
}

/** Arrays or objects nested 33 to 100,000 levels deep (a recursive walk overflows at a few thousand). */
const deepJson = fc.tuple(fc.constantFrom(33, 3_000, 10_000, 100_000), fc.boolean()).map(([depth, arrays]) =>
  arrays ? `${"[".repeat(depth)}${"]".repeat(depth)}` : `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`,
);

// ---- requests -----------------------------------------------------------------------------

interface FuzzRequest {
  path: Record<string, string>;
  /** Raw `name=value` pairs, already encoded (invalid requests put raw text here). */
  query: [string, string][];
  headers: Record<string, string>;
  /** The body as sent, or undefined for none. */
  body?: string;
  contentType?: string;
}

/** encodeURIComponent, except that a lone surrogate is sent as the (invalid) UTF-8 bytes of its code unit. */
function encode(text: string): string {
  return text.replace(/[\s\S]/gu, (ch) => {
    const unit = ch.length === 1 ? ch.charCodeAt(0) : 0;
    if (unit >= 0xd800 && unit <= 0xdfff) return [0xe0 | (unit >> 12), 0x80 | ((unit >> 6) & 0x3f), 0x80 | (unit & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join("");
    return encodeURIComponent(ch);
  });
}

const asText = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));

function validRequest(op: Operation): fc.Arbitrary<FuzzRequest> {
  const parameters = op.parameters.filter((p) => p.in !== "cookie" && p.name.toLowerCase() !== "x-api-key");
  const values = fc.record(
    Object.fromEntries(parameters.map((p) => [`${p.in}:${p.name}`, valueOf(p.schema ?? p.content?.["application/json"]?.schema, p.name)])),
    { requiredKeys: parameters.filter((p) => p.required).map((p) => `${p.in}:${p.name}`) },
  );
  const bodySchema = op.requestBody?.content?.["application/json"]?.schema;
  const body = bodySchema ? valueOf(bodySchema as Node) : fc.constant(undefined);
  return fc.tuple(values, body).map(([vals, b]) => {
    const request: FuzzRequest = { path: {}, query: [], headers: {} };
    for (const [key, value] of Object.entries(vals)) {
      const [where, name] = [key.slice(0, key.indexOf(":")), key.slice(key.indexOf(":") + 1)];
      if (value === undefined) continue;
      if (where === "path") request.path[name] = encode(asText(value));
      else if (where === "query") request.query.push([encode(name), encode(asText(value))]);
      else if (where === "header") request.headers[name] = asText(value);
    }
    if (b !== undefined) {
      request.body = JSON.stringify(b);
      request.contentType = "application/json";
    }
    return request;
  });
}

const badText = fc.constantFrom("a\u0000b", "B\ud800", "\udc00", "tab\there", "line\nbreak", "\u007f", "\u0085", "x".repeat(300), "", " ");
const badEncoding = fc.constantFrom("%zz", "%E0%A4%A", "%C0%AF", "%ED%A0%80", "%", "%00", "+", "!()*',~", "a+b%2Bc", "%F0%9F%98%80");
const badNumber = fc.constantFrom("0x1", "1e0", "1.0", "+1", "01", "%201", "1%20", "-1", "0", "99999999999999999999", "NaN", "");
const badDate = fc.constantFrom("2026-02-29", "2026-02-30", "2026-04-31", "2026-13-01", "2026-00-10", "26-01-01", "2026-1-1");
const badBody = fc.constantFrom("null", "42", '"x"', "[]", "true", "{", "", '{"a":1}', '{"__proto__":{"x":1}}', '{"name":"\\u0000"}', '{"name":"\\ud800"}');

type Slot = { at: "body"; path: (string | number)[] } | { at: "query"; index: number } | { at: "path"; name: string };

/** Where a text lives in a request: every string leaf of the body, every query and path parameter. */
function textSlots(request: FuzzRequest, body: unknown): Slot[] {
  const slots: Slot[] = [];
  const walk = (value: unknown, path: (string | number)[]) => {
    if (typeof value === "string") slots.push({ at: "body", path });
    else if (Array.isArray(value)) value.forEach((v, i) => walk(v, [...path, i]));
    else if (value && typeof value === "object") for (const [k, v] of Object.entries(value)) walk(v, [...path, k]);
  };
  walk(body, []);
  request.query.forEach((_, index) => slots.push({ at: "query", index }));
  for (const name of Object.keys(request.path)) slots.push({ at: "path", name });
  return slots;
}

function setAt(target: unknown, path: (string | number)[], value: unknown): unknown {
  if (!path.length) return value;
  const copy: any = Array.isArray(target) ? [...(target as unknown[])] : { ...(target as object) };
  copy[path[0]!] = setAt(copy[path[0]!], path.slice(1), value);
  return copy;
}

/** The request with `value` put in one text slot (chosen by `pick`; a date-looking one first for dates). */
function plantText(request: FuzzRequest, value: string, pick: number, datesFirst: boolean): FuzzRequest {
  const body = request.body === undefined ? undefined : JSON.parse(request.body);
  // an empty path segment makes the URL another path's (DELETE /v1/x/{id} becomes /v1/x/: 405), which
  // "paths no operation has" covers: empty text goes to the other slots
  let slots = textSlots(request, body).filter((slot) => value !== "" || slot.at !== "path");
  const looksLikeDate = (slot: Slot) => slot.at === "body" && /^\d{4}-\d{2}-\d{2}/.test(String(slot.path.reduce((v: any, k) => v[k], body)));
  if (datesFirst && slots.some(looksLikeDate)) slots = slots.filter(looksLikeDate);
  const mutated: FuzzRequest = { ...request, path: { ...request.path }, query: request.query.map(([k, v]) => [k, v] as [string, string]) };
  const slot = slots[pick % Math.max(slots.length, 1)];
  if (!slot) mutated.query.push(["unknownParameter", encode(value)]);
  else if (slot.at === "body") mutated.body = JSON.stringify(setAt(body, slot.path, value));
  else if (slot.at === "query") mutated.query[slot.index]![1] = encode(value);
  else mutated.path[slot.name] = encode(value);
  return mutated;
}

function invalidRequest(op: Operation): fc.Arbitrary<FuzzRequest> {
  const mutation = fc.oneof(
    { arbitrary: fc.record({ kind: fc.constant("text" as const), value: badText, pick: fc.nat() }), weight: 4 },
    fc.record({ kind: fc.constant("encoding" as const), value: badEncoding, pick: fc.nat() }),
    fc.record({ kind: fc.constant("number" as const), value: badNumber, pick: fc.nat() }),
    fc.record({ kind: fc.constant("date" as const), value: badDate, pick: fc.nat() }),
    fc.record({ kind: fc.constant("body" as const), value: badBody, pick: fc.nat() }),
    fc.record({ kind: fc.constant("drop" as const), value: fc.constant(""), pick: fc.nat() }),
    fc.record({ kind: fc.constant("contentType" as const), value: fc.constantFrom("text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1"), pick: fc.nat() }),
    fc.record({ kind: fc.constant("nesting" as const), value: deepJson, pick: fc.nat() }),
    fc.record({ kind: fc.constant("prototype" as const), value: fc.constantFrom("__proto__", "constructor", "__proto__%5Bx%5D", "prototype"), pick: fc.nat() }),
  );
  return fc.tuple(validRequest(op), mutation).map(([request, { kind, value, pick }]) => {
    const pathNames = Object.keys(request.path);
    const mutated: FuzzRequest = { ...request, path: { ...request.path }, query: [...request.query] };
    switch (kind) {
      case "text":
      case "date":
        return plantText(request, value, pick, kind === "date");
      case "encoding":
      case "number": {
        if (pathNames.length && pick % 2 === 0) mutated.path[pathNames[pick % pathNames.length]!] = value;
        else if (mutated.query.length) mutated.query[pick % mutated.query.length]![1] = value;
        else mutated.query.push(["limit", value]);
        break;
      }
      case "body":
        mutated.body = value;
        mutated.contentType = "application/json";
        break;
      case "drop":
        if (mutated.body !== undefined && pick % 2 === 0) mutated.body = undefined;
        else if (mutated.query.length) mutated.query.splice(pick % mutated.query.length, 1);
        else mutated.query.push(["unknownParameter", "1"]);
        break;
      case "contentType":
        mutated.contentType = value;
        mutated.body ??= "{}";
        break;
      case "nesting":
        // the whole body, or a field of it: nested far beyond the 32 levels allowed
        mutated.body = pick % 2 === 0 ? value : `{"name":${value}}`;
        mutated.contentType = "application/json";
        break;
      case "prototype":
        mutated.query.push([value, "1"]);
        break;
    }
    return mutated;
  });
}

// ---- sending and judging ------------------------------------------------------------------

async function send(op: Operation, request: FuzzRequest) {
  const path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => request.path[name] ?? "1");
  const query = request.query.map(([k, v]) => `${k}=${v}`).join("&");
  let req = api.request()[op.method](query ? `${path}?${query}` : path).set("x-api-key", tenant.key);
  for (const [name, value] of Object.entries(request.headers)) req = req.set(name, value);
  if (request.body !== undefined) req = req.set("content-type", request.contentType ?? "application/json").send(request.body);
  return req;
}

/** What is wrong with an answer: a 5xx, an undocumented status, a body or header the contract does not declare. */
function judge(op: Operation, res: { status: number; headers: Record<string, string>; text: string; body: unknown }): string | undefined {
  if (res.status >= 500) return `${res.status}: ${res.text}`;
  const declared = contract.response(op.operationId, res.status);
  if (!declared) return `status ${res.status} is not documented: ${res.text}`;
  const mediaType = String(res.headers["content-type"] ?? "").split(";")[0]!;
  const body = res.text ? JSON.parse(res.text) : undefined;
  const problem = check(op.operationId, res.status, mediaType || "application/json", body);
  if (problem) return `${res.status} body: ${problem}: ${res.text}`;
  const headers = Object.keys((resolve(declared as Node).headers ?? {}) as object).map((h) => h.toLowerCase());
  for (const sent of ["ratelimit", "ratelimit-policy", "retry-after", "x-request-id"]) {
    if (res.headers[sent] !== undefined && !headers.includes(sent)) return `${res.status} sends ${sent}, not declared`;
  }
  return undefined;
}

const documentedOutcome = (op: Operation) => async (request: FuzzRequest) => {
  const res = await send(op, request);
  if (process.env.FUZZ_DEBUG) console.log(op.operationId, res.status, JSON.stringify(request).slice(0, 200));
  const problem = judge(op, res);
  if (problem) throw new Error(`${op.method.toUpperCase()} ${op.path} ${JSON.stringify(request)}\n -> ${problem}`);
};

/**
 * The classes that were 500s, in every place of one request the service accepts: a valid request
 * is sampled until one is answered 2xx (or the samples run out), then each of its texts in turn
 * gets U+0000, a lone surrogate and a C1 control character.
 */
async function everyTextSlot(op: Operation): Promise<void> {
  const samples = fc.sample(validRequest(op), { seed: SEED + 2, numRuns: 8 });
  let baseline = samples[0]!;
  for (const sample of samples) {
    const res = await send(op, sample);
    const problem = judge(op, res);
    if (problem) throw new Error(`${op.operationId} ${JSON.stringify(sample)} -> ${problem}`);
    baseline = sample;
    if (res.status < 300) break;
  }
  const body = baseline.body === undefined ? undefined : JSON.parse(baseline.body);
  const slots = textSlots(baseline, body).length;
  for (let pick = 0; pick < slots; pick++) {
    for (const bad of ["a\u0000b", "B\ud800", "\u0085"]) {
      await documentedOutcome(op)(plantText(baseline, bad, pick, false));
    }
  }
}

describe("fuzzing every operation from the spec", () => {
  for (const op of contract.operations) {
    it(`${op.operationId}: when valid and invalid requests are generated, then every answer is documented, never a 5xx`, async () => {
      const logged = api.logs.length;
      await fc.assert(fc.asyncProperty(validRequest(op), documentedOutcome(op)), { seed: SEED, numRuns: RUNS, endOnFailure: true });
      await fc.assert(fc.asyncProperty(invalidRequest(op), documentedOutcome(op)), { seed: SEED + 1, numRuns: RUNS, endOnFailure: true });
      await everyTextSlot(op);
      expect(api.logs.slice(logged).filter((line) => /does not match the spec|request failed/.test(line))).toEqual([]);
    });
  }
});

// ---- the collector (spec/collector.yaml): public paths, keyed by dataset -------------------

const collectorSpec = YAML.parse(readFileSync(new URL("../spec/collector.yaml", import.meta.url), "utf8")) as Node;
const collectorStatuses = (path: string, method: string) => Object.keys(collectorSpec.paths[path][method].responses).map(Number);
const BATCH_TYPES = ["text/plain", "application/json"];
const breaksTextRule = (text: string) => /[\p{Cc}\p{Cs}]/u.test(text);
/** Every string of a JSON value, keys included, walked without recursion (the deep bodies are deep). */
function stringsIn(value: unknown): string[] {
  const found: string[] = [];
  const pending = [value];
  while (pending.length) {
    const item = pending.pop();
    if (typeof item === "string") found.push(item);
    else if (item && typeof item === "object") for (const [key, child] of Object.entries(item)) pending.push(key, child);
  }
  return found;
}
const anyText = fc.oneof(fc.string({ maxLength: 30 }), fc.string({ unit: "binary", maxLength: 30 }), badText, fc.constant("https://www.customer.example/pricing"));

describe("fuzzing the collector", () => {
  // the visitor's address is a business network's, so that accepted events are written to the queue
  const collector = () => supertest(api.appWith({ trustProxy: "loopback", tracking: { config: testTrackingConfig() } }));
  const visitorId = fc.stringMatching(/^[A-Za-z0-9_-]{8,20}$/);

  /** Documented, JSON with an `error` unless accepted, and a batch with any refused text never accepted. */
  function judgeCollector(path: string, method: string, res: supertest.Response, refusedText: boolean, acceptable: boolean): void {
    const context = `${method.toUpperCase()} ${path} -> ${res.status} ${String(res.text ?? "").slice(0, 300)}`;
    expect(res.status, context).toBeLessThan(500);
    expect(collectorStatuses(path, method), context).toContain(res.status);
    if (res.status >= 400) expect(res.body.error, context).toEqual(expect.any(String));
    if (refusedText || !acceptable) expect(res.status, context).toBeGreaterThanOrEqual(400);
  }

  it("collectEvents: when batches carry any text in every string, in any media type, then every answer is documented and no control character is accepted", async () => {
    const request = collector();
    const utm = fc.record({ source: anyText, medium: anyText, campaign: anyText }, { requiredKeys: [] });
    const pageView = fc.record({ type: fc.constant("pageview"), visitorId, url: anyText, title: anyText, referrer: anyText, utm }, { requiredKeys: ["type", "visitorId", "url"] });
    const form = fc.record({ type: fc.constant("form"), visitorId, url: anyText, fields: fc.dictionary(anyText, anyText, { maxKeys: 3 }) });
    const batch = fc.oneof({ arbitrary: fc.array(fc.oneof(pageView, form), { minLength: 1, maxLength: 3 }).map((events) => JSON.stringify({ events })), weight: 4 }, deepJson);
    const contentType = fc.constantFrom("text/plain", "text/plain;charset=UTF-8", "application/json", "application/xml", "image/png", "application/x-www-form-urlencoded");
    await fc.assert(
      fc.asyncProperty(batch, contentType, async (body, type) => {
        const res = await request.post(`/collect?dataset=${tenant.datasets[0]}`).set("x-forwarded-for", ADDRESSES.business).set("user-agent", BROWSER_UA).set("content-type", type).send(body);
        judgeCollector("/collect", "post", res, stringsIn(JSON.parse(body)).some(breaksTextRule), BATCH_TYPES.includes(type.split(";")[0]!));
      }),
      { seed: SEED + 3, numRuns: RUNS * 6, endOnFailure: true },
    );
  });

  it("collectPixel: when v, u, r and t carry any text, then every answer is documented and no control character is accepted", async () => {
    const request = collector();
    await fc.assert(
      fc.asyncProperty(fc.record({ v: fc.oneof(visitorId, anyText), u: anyText, r: anyText, t: anyText }, { requiredKeys: ["v"] }), async (query) => {
        const res = await request.get("/collect").query({ dataset: tenant.datasets[0], ...query }).set("x-forwarded-for", ADDRESSES.business).set("user-agent", BROWSER_UA);
        // a lone surrogate cannot be percent-encoded as UTF-8: only control characters reach the pixel as such
        judgeCollector("/collect", "get", res, Object.values(query).some((text) => /\p{Cc}/u.test(text)), true);
      }),
      { seed: SEED + 4, numRuns: RUNS * 4, endOnFailure: true },
    );
  });

  it("public paths: when a method the path does not have is used, then 405 with Allow, never 401 or 5xx", async () => {
    const request = collector();
    for (const path of ["/collect", "/t.js"]) {
      for (const method of ["put", "delete", "patch", "trace"] as const) {
        const res = await request[method](`${path}?dataset=${tenant.datasets[0]}`).set("content-type", "application/json").send("{}");
        expect(res.status, `${method} ${path}`).toBe(405);
        expect(res.headers.allow, `${method} ${path}`).toMatch(/GET/);
      }
    }
  });
});
