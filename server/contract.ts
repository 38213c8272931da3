// The contracts compiled once per process, each in one Ajv instance: spec/openapi.yaml for the
// response checks (server/http/response-check.ts), the contact import and the tests, and its
// operations, from which the routes are registered (requests are validated by
// express-openapi-validator, server/http/validation.ts); spec/collector.yaml for the collector's
// batches (server/http/collector.ts): the document is the collector's only schema.
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import type { operations } from "../generated/openapi.ts";
import { loadCollectorSpec, loadSpec } from "./spec.ts";

export type OperationId = keyof operations;

const methods = ["get", "put", "post", "delete", "patch"] as const;
export type Method = (typeof methods)[number];

export interface SchemaObject {
  $ref?: string;
  type?: string | string[];
  [keyword: string]: unknown;
}

export interface ParameterObject {
  name: string;
  in: "query" | "path" | "header" | "cookie";
  required?: boolean;
  schema?: SchemaObject;
  content?: Record<string, { schema?: SchemaObject }>;
}

interface ResponseObject {
  $ref?: string;
  content?: Record<string, { schema?: SchemaObject }>;
}

export interface OperationObject {
  operationId?: string;
  parameters?: (ParameterObject | { $ref: string })[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: SchemaObject }> };
  responses: Record<string, ResponseObject>;
}

export interface SpecDocument {
  paths?: Record<string, Partial<Record<Method, OperationObject>> & { parameters?: ParameterObject[] }>;
  components?: {
    schemas?: Record<string, SchemaObject>;
    parameters?: Record<string, ParameterObject>;
    responses?: Record<string, ResponseObject>;
  };
}

export interface Operation {
  operationId: OperationId;
  method: Method;
  /** The spec's path template, `/v1/segments/{segmentId}`. */
  path: string;
  parameters: ParameterObject[];
  requestBody?: OperationObject["requestBody"];
  responses: Record<string, ResponseObject>;
}

/** Operations with their spec path, a literal segment before a template (`/v1/segments/user` first). */
export function operationsOf(spec: SpecDocument): Operation[] {
  const found: Operation[] = [];
  const parameter = (p: ParameterObject | { $ref: string }) =>
    "$ref" in p ? spec.components!.parameters![p.$ref.split("/").pop()!]! : p;
  for (const [path, item] of Object.entries(spec.paths ?? {})) {
    for (const method of methods) {
      const op = item[method];
      if (!op?.operationId) continue;
      found.push({
        operationId: op.operationId as OperationId,
        method,
        path,
        parameters: [...(item.parameters ?? []), ...(op.parameters ?? [])].map(parameter),
        requestBody: op.requestBody,
        responses: op.responses,
      });
    }
  }
  const rank = (path: string) => path.split("/").map((s) => (s.startsWith("{") ? "1" : "0")).join("");
  return found.sort((a, b) => rank(a.path).localeCompare(rank(b.path)));
}

export interface Contract {
  document: SpecDocument;
  ajv: Ajv2020;
  operations: Operation[];
  operation(operationId: string): Operation | undefined;
  /** A validator for a component schema, `ContactProfile`. */
  component(name: string): ValidateFunction;
  /** A validator for an inline schema whose `$ref`s point into the spec (`#/components/...`). */
  compile(schema: object): ValidateFunction;
  /** The documented response of an operation for a status, `$ref`s resolved. */
  response(operationId: string, status: number): ResponseObject | undefined;
  errorsText(errors: ErrorObject[] | null | undefined): string;
}

let shared: Contract | undefined;
let collector: Contract | undefined;

/** The one compiled contract of this process. */
export function loadContract(): Contract {
  shared ??= compileContract(loadSpec() as SpecDocument);
  return shared;
}

/** spec/collector.yaml, compiled once per process. */
export function loadCollectorContract(): Contract {
  collector ??= compileContract(loadCollectorSpec() as SpecDocument);
  return collector;
}

/**
 * The document as Ajv takes it: Ajv reads a discriminator's tag values from each branch's `const`
 * and refuses a `mapping`, which OpenAPI tools need (without one, a tag value is the schema's
 * name). The mappings are checked against the consts, then left out.
 */
function withoutDiscriminatorMappings(node: unknown, document: SpecDocument = node as SpecDocument): unknown {
  if (typeof node !== "object" || node === null) return node;
  const schema = node as { oneOf?: SchemaObject[]; discriminator?: { propertyName: string; mapping?: Record<string, string> } };
  const mapping = schema.discriminator?.mapping;
  if (mapping) {
    const tag = schema.discriminator!.propertyName;
    for (const [value, ref] of Object.entries(mapping)) {
      const branch = document.components?.schemas?.[ref.split("/").pop()!] as { properties?: Record<string, { const?: unknown }> } | undefined;
      if (branch?.properties?.[tag]?.const !== value) throw new Error(`discriminator mapping ${value} -> ${ref}: the branch's ${tag} must be const ${value}`);
    }
    delete schema.discriminator!.mapping;
  }
  for (const child of Object.values(node)) withoutDiscriminatorMappings(child, document);
  return node;
}

function compileContract(document: SpecDocument): Contract {
  // useDefaults: the spec's defaults are applied to requests here, never restated in code;
  // discriminator: a oneOf with an OpenAPI discriminator is judged by the branch its tag names
  // (one detail per field of that branch, not one per branch tried)
  const ajv = new Ajv2020({ strict: false, allErrors: true, useDefaults: true, discriminator: true });
  addFormats.default(ajv);
  ajv.addSchema(withoutDiscriminatorMappings(structuredClone(document)) as object, "spec");
  const operations = operationsOf(document);
  const byId = new Map(operations.map((op) => [op.operationId as string, op]));
  const resolve = (response: ResponseObject): ResponseObject =>
    response.$ref ? resolve(document.components!.responses![response.$ref.split("/").pop()!]!) : response;
  const compiled = new Map<string, ValidateFunction>();
  return {
    document,
    ajv,
    operations,
    operation: (id) => byId.get(id),
    component: (name) => ajv.getSchema(`spec#/components/schemas/${name}`)!,
    compile(schema) {
      const key = JSON.stringify(schema);
      let validate = compiled.get(key);
      if (!validate) {
        validate = ajv.compile(JSON.parse(key.replaceAll('"$ref":"#/', '"$ref":"spec#/')) as object);
        compiled.set(key, validate);
      }
      return validate;
    },
    response(operationId, status) {
      const declared = byId.get(operationId)?.responses[String(status)];
      return declared && resolve(declared);
    },
    errorsText: (errors) => ajv.errorsText(errors),
  };
}
