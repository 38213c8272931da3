// Type-level tests of the partner client: `npm run typecheck` (the first step of `npm test`)
// fails when paths, parameters, bodies, success bodies or error bodies stop being typed from
// the spec. The calls are built but never sent (the client points at a closed port).
import { describe, expectTypeOf, it } from "vitest";
import { type components, createPartnerClient } from "../client/index.ts";

type Schemas = components["schemas"];
const api = createPartnerClient({ baseUrl: "http://127.0.0.1:9", apiKey: "lik_types_only", retry: false });
/** Type-checks a call without running it. */
const never = (_call: () => unknown) => undefined;

describe("partner client types", () => {
  it("when a path is called, then its success and error bodies have the spec's types", () => {
    never(async () => {
      const { data, error } = await api.GET("/v1/users", { params: { query: { email: "admin@demo.example", limit: 10 } } });
      expectTypeOf(data).toEqualTypeOf<Schemas["GetAllResponseAccountUserDTO"] | undefined>();
      expectTypeOf(error).toMatchTypeOf<Schemas["V1BadRequestResponse"] | Schemas["RateLimitErrorResponse"] | Schemas["V1PermissionDenied"] | undefined>();
      if (data) expectTypeOf(data.data[0]!.invitationState).toEqualTypeOf<"invited" | "active">();
    });
  });

  it("when a body is sent, then it must be the operation's request schema", () => {
    never(async () => {
      const { data } = await api.POST("/v1/email-lookup", { body: { email: "jane.doe@acme.example", lastName: "Doe" } });
      expectTypeOf(data).toEqualTypeOf<Schemas["ContactProfile"] | undefined>();
      // @ts-expect-error: `mail` is not a field of ContactEnrichmentRequest
      await api.POST("/v1/email-lookup", { body: { mail: "jane.doe@acme.example" } });
      // @ts-expect-error: the body is required
      await api.POST("/v1/email-lookup", {});
    });
  });

  it("when parameters are given, then required ones are enforced and typed", () => {
    never(async () => {
      // @ts-expect-error: `accountId` is required
      await api.GET("/v1/user-datasets", { params: { query: { email: "admin@demo.example" } } });
      // @ts-expect-error: `userId` is an integer
      await api.PUT("/v1/users/{userId}/name", { params: { path: { userId: "one" } }, body: { name: "Dana" } });
      // @ts-expect-error: no such path
      await api.GET("/v1/no-such-path");
      // @ts-expect-error: the path has no DELETE
      await api.DELETE("/v1/users");
    });
  });

  it("when the credit reports answer an error, then the error is their own ErrorVM shape", () => {
    never(async () => {
      const { error } = await api.POST("/api/credits/usage/summary", { body: { from: "2026-11-01", to: "2026-11-30" } });
      expectTypeOf<Schemas["ErrorVM"]>().toMatchTypeOf<NonNullable<typeof error>>();
    });
  });
});
