// Types of the validated input, from the generated contract types (generated/openapi.ts): the
// request validator (express-openapi-validator, server/http/validation.ts; Ajv `useDefaults`)
// fills in every default the spec declares, so those fields are always present and no code
// restates the default. The generated types are the partner client's too, where a field with a
// default is optional (a partner may omit it): the fields the spec gives a default are listed
// here, made required in what handlers receive, and test/generated-types.test.ts fails when these
// lists and the spec's defaults part.
import type { components, operations } from "../../generated/openapi.ts";

export type Schemas = components["schemas"];

/** The kinds of network an address belongs to (the collector's classification, server/tracking/ipdata/network-class.ts). */
export type NetworkType = Schemas["NetworkType"];

/** The query parameters the spec gives a default. */
export const defaultedQueryParameters = ["limit", "partialFormTracking", "contactEnrichment", "sort"] as const;
type Defaulted = (typeof defaultedQueryParameters)[number];

/** The request-body schemas with fields the spec gives a default, and those fields. */
export const defaultedBodyFields = {
  AddUser: ["role"],
  CreditUsageTimeSeriesRequest: ["granularity"],
  LeadTagsUpdateRequest: ["add", "remove"],
  WebhookEndpointCreate: ["enabled"],
} as const;
type DefaultedSchema = keyof typeof defaultedBodyFields;
/** The defaulted fields of body type B: those of the schema B is (by its type: the generated bodies are the schemas). */
type DefaultedFieldsOf<B> = {
  [N in DefaultedSchema]: [B] extends [Schemas[N]] ? ([Schemas[N]] extends [B] ? (typeof defaultedBodyFields)[N][number] : never) : never;
}[DefaultedSchema];

/** A request body as the validator passes it on: spec defaults applied. */
export type WithDefaults<B> = B & { [P in DefaultedFieldsOf<B> & keyof B]-?: Exclude<B[P], undefined> };

/** An operation's query parameters as the validator passes them on: spec defaults applied. */
export type QueryOf<K extends keyof operations> =
  Exclude<operations[K]["parameters"]["query"], undefined> extends infer Q
    ? Q & { [P in Defaulted & keyof Q]-?: Exclude<Q[P], undefined> }
    : never;
