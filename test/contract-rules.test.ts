// Issue 10 item 9: the contract says what the service does. Every response declares the headers
// the service sends (X-Request-Id, and the RateLimit fields, since every operation needs a key);
// every string a request carries has a maximum length and a character rule (the OWASP API
// ruleset's string-limit and string-restricted); a path no operation has is attributed to none.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadContract } from "../server/contract.ts";
import type { TestApi } from "./support/api.ts";
import { as, startWithTenants } from "./support/suite.ts";
import type { Tenant } from "./support/tenants.ts";

type Node = Record<string, any>;
const contract = loadContract();
const spec = contract.document as Node;
const resolve = (node: Node | undefined): Node | undefined =>
  node?.$ref ? resolve(node.$ref.slice(2).split("/").reduce((at: Node, key: string) => at[key], spec)) : node;

/** Each string schema reachable from `schema`, with where it is. */
function strings(schema: Node | undefined, where: string, seen = new Set<string>()): [string, Node][] {
  if (!schema) return [];
  if (schema.$ref) {
    if (seen.has(schema.$ref)) return [];
    // OpenAPI 3.1: keywords beside a $ref apply too (`$ref: Text` with its own maxLength)
    const { $ref, ...beside } = schema;
    return strings({ ...resolve(schema), ...beside }, where, new Set([...seen, $ref]));
  }
  const found: [string, Node][] = [];
  const types = [schema.type].flat();
  if (types.includes("string")) found.push([where, schema]);
  for (const [name, child] of Object.entries(schema.properties ?? {})) found.push(...strings(child as Node, `${where}.${name}`, seen));
  if (schema.items) found.push(...strings(schema.items, `${where}[]`, seen));
  for (const key of ["oneOf", "anyOf", "allOf"]) (schema[key] ?? []).forEach((c: Node, i: number) => found.push(...strings(c, `${where}|${i}`, seen)));
  return found;
}

describe("the contract", () => {
  it("when any operation answers, then the response declares X-Request-Id, RateLimit and RateLimit-Policy", () => {
    const missing = contract.operations.flatMap((op) =>
      Object.entries(op.responses).flatMap(([status, response]) => {
        const headers = Object.keys(resolve(response as Node)?.headers ?? {});
        return ["X-Request-Id", "RateLimit", "RateLimit-Policy"].filter((h) => !headers.includes(h)).map((h) => `${op.operationId} ${status} ${h}`);
      }),
    );
    expect(missing).toEqual([]);
  });

  it("when a request carries a string, then its schema has a maxLength and a character rule (pattern, format or enum)", () => {
    const loose = contract.operations.flatMap((op) => {
      const inputs: [string, Node][] = [
        ...op.parameters.flatMap((p) => strings(p.schema ?? p.content?.["application/json"]?.schema, `${op.operationId} ${p.in} ${p.name}`)),
        ...strings(op.requestBody?.content?.["application/json"]?.schema, `${op.operationId} body`),
      ];
      return inputs.flatMap(([where, s]) => {
        const closed = s.enum !== undefined || s.const !== undefined;
        const problems = [
          ...(s.maxLength === undefined && !closed && s.format !== "date" ? ["maxLength"] : []),
          ...(s.pattern === undefined && s.format === undefined && !closed ? ["pattern"] : []),
        ];
        return problems.length ? [`${where}: ${problems.join(", ")}`] : [];
      });
    });
    expect(loose).toEqual([]);
  });

  it("when the character rule is stated as a pattern, then it refuses control characters and accepts any script (lone surrogates: the service's own check)", () => {
    const rule = resolve(spec.components.schemas.Text)!;
    const validate = contract.ajv.compile({ ...rule });
    expect(["Café 東京 😀", "a!(b)*'c,", ""].map((s) => validate(s))).toEqual([true, true, true]);
    expect(["a\u0000", "tab\there", "\u007f", "\u0085"].map((s) => validate(s))).toEqual([false, false, false, false]);
  });
});

describe("paths no operation has", () => {
  let api: TestApi;
  let tenant: Tenant;
  beforeAll(async () => ({ api, tenant } = await startWithTenants()));
  afterAll(() => api?.close());

  it("when DELETE /v1/segments/user is sent, then 405 with Allow: PUT, attributed to no operation and not logged as a violation", async () => {
    const res = await api.request().delete("/v1/segments/user").set(as(tenant.key));
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe("PUT");
    expect(res.body).toEqual({ error: "method_not_allowed", message: expect.any(String) });
    const logs = api.logs.join("\n");
    expect(logs).not.toMatch(/does not match the spec|deleteSegment/);
  });
});
