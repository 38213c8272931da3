// Checks a response body against the spec for its operation and status. The validator checks
// the responses of requests that reached it; this covers those answered before it (401, the
// licence's 403, malformed JSON, request validation errors), so that every response is checked.
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import type { SpecPaths } from "./operations.ts";
import { routesOf } from "./operations.ts";

interface ResponseObject {
  $ref?: string;
  content?: Record<string, { schema?: object }>;
}

type Spec = SpecPaths & { components?: { responses?: Record<string, ResponseObject> } };

/** Returns what is wrong with the body, or undefined when it matches the spec. */
export type ResponseCheck = (operationId: string, status: number, mediaType: string, body: unknown) => string | undefined;

export function responseChecker(spec: Spec): ResponseCheck {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  ajv.addSchema(spec as object, "spec");
  const responsesOf = new Map<string, Record<string, ResponseObject>>();
  for (const route of routesOf(spec)) {
    const item = (spec.paths as Record<string, Record<string, { responses: Record<string, ResponseObject> }>>)[route.path]!;
    responsesOf.set(route.operationId, item[route.method]!.responses);
  }
  const resolve = (response: ResponseObject): ResponseObject =>
    response.$ref ? resolve(spec.components!.responses![response.$ref.split("/").pop()!]!) : response;

  return (operationId, status, mediaType, body) => {
    const declared = responsesOf.get(operationId)?.[String(status)];
    if (!declared) return `status ${status} is not documented for ${operationId}`;
    const content = resolve(declared).content ?? {};
    const media = content[mediaType] ? mediaType : "*/*";
    const schema = content[media]?.schema as { $ref?: string } | undefined;
    if (!schema) return `no ${mediaType} body is documented for ${operationId} ${status}`;
    const validate = validatorOf(schema);
    return validate(body) ? undefined : ajv.errorsText(validate.errors);
  };

  function validatorOf(schema: { $ref?: string }) {
    const compiled = schema.$ref?.startsWith("#/") ? ajv.getSchema(`spec${schema.$ref}`) : undefined;
    if (compiled) return compiled;
    throw new Error(`response schemas must be $refs to components, got ${JSON.stringify(schema)}`);
  }
}
