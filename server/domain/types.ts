// Types of the validated input, from the generated contract types (generated/openapi.ts): the
// request validator (express-openapi-validator, server/http/validation.ts; Ajv `useDefaults`)
// fills in every default the spec declares, so those fields are always present and no code
// restates the default. Body schemas get this from the generator (defaults non-nullable); query
// parameters are listed here, and test/generated-types.test.ts fails when this list and the
// spec's defaults part.
import type { components, operations } from "../../generated/openapi.ts";

export type Schemas = components["schemas"];

/** The kinds of network an address belongs to (the collector's classification, server/tracking/ipdata/network-class.ts). */
export type NetworkType = Schemas["NetworkType"];

/** The query parameters the spec gives a default. */
export const defaultedQueryParameters = ["limit", "partialFormTracking", "contactEnrichment", "sort"] as const;
type Defaulted = (typeof defaultedQueryParameters)[number];

/** An operation's query parameters as the validator passes them on: spec defaults applied. */
export type QueryOf<K extends keyof operations> =
  Exclude<operations[K]["parameters"]["query"], undefined> extends infer Q
    ? Q & { [P in Defaulted & keyof Q]-?: Exclude<Q[P], undefined> }
    : never;
