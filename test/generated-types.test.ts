// Generated types as the one source (server/domain/types.ts): the validator fills in the spec's
// defaults, so code reads them without restating them. These checks fail when that stops being
// true: a query parameter gains or loses a default without server/domain/types.ts following, or a
// body default is no longer applied where the generated type says the field is always present.
import { describe, expect, it } from "vitest";
import { loadContract, type SchemaObject } from "../server/contract.ts";
import { defaultedQueryParameters } from "../server/domain/types.ts";

const contract = loadContract();

describe("spec defaults", () => {
  it("when the spec gives a query parameter a default, then server/domain/types.ts lists it (and nothing else)", () => {
    const withDefault = contract.operations.flatMap((op) =>
      op.parameters.filter((p) => p.in === "query" && p.schema?.default !== undefined).map((p) => p.name),
    );
    expect([...new Set(withDefault)].sort()).toEqual([...defaultedQueryParameters].sort());
  });

  it("when a body omits a field the spec gives a default, then validation fills the default in", () => {
    const schemas = contract.document.components!.schemas!;
    const withDefaults = Object.entries(schemas).flatMap(([name, schema]) => {
      const properties = Object.entries((schema.properties ?? {}) as Record<string, SchemaObject>).filter(([, p]) => p.default !== undefined);
      return properties.length ? [{ name, example: schema.example as Record<string, unknown>, properties }] : [];
    });
    expect(withDefaults.map((s) => s.name).sort()).toEqual(["AddUser", "CreditUsageTimeSeriesRequest", "LeadTagsUpdateRequest", "WebhookEndpointCreate"]);
    for (const { name, example, properties } of withDefaults) {
      const body = structuredClone(example);
      for (const [field] of properties) delete body[field];
      expect(contract.component(name)(body), name).toBe(true);
      expect(body, name).toEqual({ ...body, ...Object.fromEntries(properties.map(([field, p]) => [field, p.default])) });
    }
  });
});
