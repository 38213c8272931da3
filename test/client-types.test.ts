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
      // exactly the bodies of the documented error statuses (400 401 402 403 404 409 429 500), not `any`
      expectTypeOf(error).toEqualTypeOf<
        | Schemas["V1BadRequestResponse"]
        | Schemas["UnauthorizedResponse"]
        | Schemas["V1InternalServerError"]
        | Schemas["V1PermissionDenied"]
        | Schemas["V1NotFoundResponse"]
        | Schemas["V1ConflictResponse"]
        | Schemas["RateLimitErrorResponse"]
        | undefined
      >();
      if (error && "details" in error) expectTypeOf(error.details).toEqualTypeOf<Schemas["ValidationErrorDetail"][]>();
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
      // @ts-expect-error: `email` is required in ContactEnrichmentRequest
      await api.POST("/v1/email-lookup", { body: { lastName: "Doe" } });
      // @ts-expect-error: a hint is a string
      await api.POST("/v1/email-lookup", { body: { email: "jane.doe@acme.example", firstName: 7 } });
    });
  });

  it("when a body field has a spec default, then a partner may omit it but not give a wrong value", () => {
    never(async () => {
      // role defaults to member, add/remove to [], granularity to day: optional for the partner
      const added = await api.POST("/v1/users", { params: { query: { email: "admin@demo.example" } }, body: { email: "new@demo.example", name: "New" } });
      expectTypeOf(added.data).toEqualTypeOf<undefined>();
      await api.PUT("/v1/management/lead-tags", { body: { datasetId: "ds_8f3k2m9q4w7x1z5c", leadId: "lead_1", add: ["vip"] } });
      await api.POST("/api/credits/usage/timeseries", { body: { from: "2026-11-01", to: "2026-11-30" } });
      // @ts-expect-error: no such role
      await api.POST("/v1/users", { params: { query: { email: "admin@demo.example" } }, body: { email: "new@demo.example", name: "New", role: "owner" } });
      // @ts-expect-error: no such granularity
      await api.POST("/api/credits/usage/timeseries", { body: { from: "2026-11-01", to: "2026-11-30", granularity: "hour" } });
    });
  });

  it("when parameters are given, then required ones are enforced and typed", () => {
    never(async () => {
      // @ts-expect-error: `accountId` is required
      await api.GET("/v1/user-datasets", { params: { query: { email: "admin@demo.example" } } });
      // @ts-expect-error: `limit` is an integer
      await api.GET("/v1/users", { params: { query: { email: "admin@demo.example", limit: "10" } } });
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
      // ParameterizedErrorVM (400) and ErrorVM (403 404 413 500); 401 and 429 come before the
      // operation is known and keep the common { error, message } shape
      expectTypeOf(error).toEqualTypeOf<
        Schemas["ParameterizedErrorVM"] | Schemas["ErrorVM"] | Schemas["UnauthorizedResponse"] | Schemas["RateLimitErrorResponse"] | undefined
      >();
    });
  });
});

describe("partner client results by status", () => {
  it("when a call's status is compared, then data and error narrow to that status's body", () => {
    never(async () => {
      const { data, error, status, response } = await api.POST("/v1/email-lookup", { body: { email: "jane.doe@acme.example", lastName: "Doe" } });
      expectTypeOf(response).toEqualTypeOf<Response>();
      if (status === 429) expectTypeOf(error).toEqualTypeOf<Schemas["RateLimitErrorResponse"]>();
      if (status === 429) expectTypeOf(error.retryAfterSeconds).toEqualTypeOf<number>();
      if (status === 404) expectTypeOf(error).toEqualTypeOf<Schemas["V1NotFoundResponse"]>();
      if (status === 402) expectTypeOf(error).toEqualTypeOf<Schemas["V1InternalServerError"]>();
      if (status === 200) expectTypeOf(data).toEqualTypeOf<Schemas["ContactProfile"]>();
      if (status === 200) expectTypeOf(error).toEqualTypeOf<undefined>();
      // @ts-expect-error: the operation documents no 418
      if (status === 418) return;
    });
  });

  it("when the answer is kept whole, then its status narrows it too", () => {
    never(async () => {
      const answer = await api.GET("/v1/users", { params: { query: { email: "admin@demo.example" } } });
      if (answer.status === 200) expectTypeOf(answer.data.data).toEqualTypeOf<Schemas["AccountUserDTO"][]>();
      if (answer.status === 403) expectTypeOf(answer.error).toEqualTypeOf<Schemas["V1PermissionDenied"]>();
      if (answer.error) expectTypeOf(answer.status).toEqualTypeOf<400 | 401 | 402 | 403 | 404 | 409 | 429 | 500 | 503>();
    });
  });
});
