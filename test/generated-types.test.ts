// Generated types as the one source (server/domain/types.ts): the validator fills in the spec's
// defaults, so code reads them without restating them. These checks fail when that stops being
// true: a query parameter gains or loses a default without server/domain/types.ts following, or a
// body default is no longer applied where the generated type says the field is always present.
import { describe, expect, expectTypeOf, it } from "vitest";
import { loadContract, type SchemaObject } from "../server/contract.ts";
import { defaultedBodyFields, defaultedQueryParameters } from "../server/domain/types.ts";
import type { BodyOf } from "../server/http/operations.ts";

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
    // server/domain/types.ts makes these fields required in what handlers receive
    expect(Object.fromEntries(withDefaults.map((s) => [s.name, s.properties.map(([field]) => field).sort()]))).toEqual(defaultedBodyFields);
    for (const { name, example, properties } of withDefaults) {
      const body = structuredClone(example);
      for (const [field] of properties) delete body[field];
      expect(contract.component(name)(body), name).toBe(true);
      expect(body, name).toEqual({ ...body, ...Object.fromEntries(properties.map(([field, p]) => [field, p.default])) });
    }
  });

  it("when a handler's body type is read (checked by tsc), then a defaulted field is required and an optional one without default stays optional", () => {
    expectTypeOf<BodyOf<"addUser">["role"]>().toEqualTypeOf<"admin" | "member">();
    expectTypeOf<BodyOf<"getCreditUsageTimeSeries">["granularity"]>().toEqualTypeOf<"day" | "week" | "month">();
    // an update's absent `enabled` means unchanged: no default, and the type keeps it optional
    expectTypeOf<BodyOf<"updateWebhookEndpoint">["enabled"]>().toEqualTypeOf<boolean | undefined>();
  });
});
