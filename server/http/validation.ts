// Request validation against the one compiled contract: path, query, header parameters and the
// body of one operation, every invalid field reported (one detail per field). Parameters are
// read the way clients send them: the query string as application/x-www-form-urlencoded (`+` is a
// space), percent-encoding and UTF-8 checked, numbers only in their canonical decimal form.
// Every string received (parameters, body values and keys) obeys the contract's character rule
// (spec/openapi.yaml, info.description "Text"): no control characters, no unpaired surrogates.
import type { ErrorObject } from "ajv/dist/2020.js";
import type { Request, RequestHandler } from "express";
import type { Contract, Operation, ParameterObject, SchemaObject } from "../contract.ts";
import { Invalid, type InvalidField } from "../domain/errors.ts";
import { nestsDeeperThan, TOO_DEEP_MESSAGE } from "./json-depth.ts";

export interface ValidatedRequest {
  path: Record<string, unknown>;
  query: Record<string, unknown>;
  header: Record<string, unknown>;
  body: unknown;
}

type Location = InvalidField["location"];

/** `a=1&b=x+y` -> {a: "1", b: "x y"}; a repeated name gives an array. Undefined values: malformed. */
export function parseQuery(raw: string): { values: Record<string, string | string[]>; malformed: string[] } {
  // no prototype: `__proto__` and `constructor` are names like any other (unknown ones are refused)
  const values: Record<string, string | string[]> = Object.create(null);
  const malformed: string[] = [];
  for (const pair of raw.split("&")) {
    if (pair === "") continue;
    const at = pair.indexOf("=");
    const [rawName, rawValue] = at < 0 ? [pair, ""] : [pair.slice(0, at), pair.slice(at + 1)];
    const name = decodeFormComponent(rawName);
    const value = decodeFormComponent(rawValue);
    if (name === undefined || value === undefined) {
      malformed.push(name ?? rawName);
      continue;
    }
    const seen = values[name];
    values[name] = seen === undefined ? value : [...(Array.isArray(seen) ? seen : [seen]), value];
  }
  return { values, malformed };
}

export const PERCENT_ENCODING_MESSAGE = "must be percent-encoded UTF-8 (application/x-www-form-urlencoded)";

/**
 * Express's router refuses a path whose parameter is not valid percent-encoded UTF-8 before any
 * operation runs (a URIError with status 400): the operation whose path template matches the raw
 * path, and one detail per parameter that does not decode.
 */
export function malformedPathParameters(contract: Contract, rawPath: string): { operationId?: string; details: InvalidField[] } {
  const segments = rawPath.split("/");
  for (const op of contract.operations) {
    const template = op.path.split("/");
    if (template.length !== segments.length) continue;
    const names = template.map((part, i) => (/^\{.+\}$/.test(part) ? part.slice(1, -1) : part === segments[i] ? null : undefined));
    if (names.includes(undefined)) continue;
    const details = names.flatMap((name, i) =>
      name && decodeFormComponent(segments[i]!.replaceAll("+", "%2B")) === undefined ? [{ location: "path" as const, field: name, message: PERCENT_ENCODING_MESSAGE }] : [],
    );
    if (details.length) return { operationId: op.operationId, details };
  }
  return { details: [{ location: "path", field: "(path)", message: PERCENT_ENCODING_MESSAGE }] };
}

/** application/x-www-form-urlencoded decoding; undefined for bad percent-encoding or invalid UTF-8. */
function decodeFormComponent(text: string): string | undefined {
  try {
    // decodeURIComponent refuses `%zz`, truncated and overlong sequences (`%C0%AF`) and lone surrogates
    return decodeURIComponent(text.replaceAll("+", " "));
  } catch {
    return undefined;
  }
}

const canonicalInteger = /^-?(0|[1-9][0-9]*)$/;
const canonicalNumber = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/;

/** The JSON value a parameter's text stands for, by its schema type; left as text when it does not fit. */
function coerce(text: string, type: string | undefined): unknown {
  if (type === "integer") return canonicalInteger.test(text) ? Number(text) : text;
  if (type === "number") return canonicalNumber.test(text) ? Number(text) : text;
  if (type === "boolean") return text === "true" ? true : text === "false" ? false : text;
  return text;
}

/**
 * The character rule of the contract: C0 and C1 control characters (U+0000-U+001F, U+007F-U+009F)
 * and unpaired UTF-16 surrogates are refused in every text (the database cannot store U+0000 or a
 * lone surrogate, and no field of this API means them).
 */
const forbiddenCharacter = /[\p{Cc}\p{Cs}]/u;
export const TEXT_RULE_MESSAGE = "must not contain control characters (U+0000-U+001F, U+007F-U+009F) or unpaired surrogates";

/** True when a text breaks the character rule. */
export function breaksTextRule(text: string): boolean {
  return forbiddenCharacter.test(text);
}

export type JsonPath = (string | number)[];

/**
 * The paths of the strings (values or object keys) of a JSON value that break the character
 * rule; a refused key is reported instead of what it holds. Iterative: depth costs no stack.
 */
export function textRuleBreaks(value: unknown): JsonPath[] {
  const found: JsonPath[] = [];
  const pending: [unknown, JsonPath][] = [[value, []]];
  while (pending.length) {
    const [item, path] = pending.pop()!;
    if (typeof item === "string") {
      if (breaksTextRule(item)) found.push(path);
    } else if (Array.isArray(item)) {
      for (let index = item.length - 1; index >= 0; index -= 1) pending.push([item[index], [...path, index]]);
    } else if (item !== null && typeof item === "object") {
      for (const [key, child] of Object.entries(item).reverse()) {
        if (breaksTextRule(key)) found.push([...path, key]);
        else pending.push([child, [...path, key]]);
      }
    }
  }
  return found;
}

/** `["filters", "conditions", 0, "value"]` -> `filters.conditions[0].value` (empty for the value itself). */
function joinField(path: JsonPath): string {
  return path.reduce<string>((name, part) => (typeof part === "number" ? `${name}[${part}]` : name ? `${name}.${part}` : part), "");
}

/** One detail per string (value or object key) that breaks the character rule, named like the schema errors. */
function textDetails(value: unknown, location: Location, details: InvalidField[]): void {
  for (const path of textRuleBreaks(value)) details.push({ location, field: joinField(path) || "(root)", message: TEXT_RULE_MESSAGE });
}

/** `/filters/conditions/0/operator` -> `filters.conditions[0].operator`. */
function fieldOf(instancePath: string): string {
  const parts = instancePath.split("/").slice(1).map((part) => part.replaceAll("~1", "/").replaceAll("~0", "~"));
  return joinField(parts.map((part) => (/^\d+$/.test(part) ? Number(part) : part)));
}

function detailsOf(errors: ErrorObject[], location: Location, prefix = ""): InvalidField[] {
  return errors.map((error) => {
    let field = fieldOf(error.instancePath);
    const params = error.params as { missingProperty?: string; additionalProperty?: string };
    let message = error.message ?? "is invalid";
    if (error.keyword === "required") {
      field = [field, params.missingProperty].filter(Boolean).join(".");
      message = "is required";
    } else if (error.keyword === "additionalProperties") {
      field = [field, params.additionalProperty].filter(Boolean).join(".");
      message = location === "body" ? "is not a field of this body" : "is not a parameter of this operation";
    }
    return { location, field: [prefix, field].filter(Boolean).join(".") || "(root)", message };
  });
}

/** One detail per field: the first error found for it (a oneOf's branches say little more). */
function onePerField(details: InvalidField[]): InvalidField[] {
  const seen = new Set<string>();
  return details.filter((d) => {
    const key = `${d.location} ${d.field}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function typeOf(contract: Contract, schema: SchemaObject | undefined): string | undefined {
  if (!schema) return undefined;
  if (schema.$ref) return typeOf(contract, contract.document.components?.schemas?.[schema.$ref.split("/").pop()!]);
  return Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
}

interface ParameterPlan {
  parameter: ParameterObject;
  /** The type its text is read as, or "json" for a parameter with `content: application/json`. */
  read: string | undefined;
}

function objectSchema(plans: ParameterPlan[], closed: boolean): object {
  const properties = Object.fromEntries(
    plans.map(({ parameter }) => [parameter.name, parameter.schema ?? parameter.content?.["application/json"]?.schema ?? {}]),
  );
  const required = plans.filter((p) => p.parameter.required).map((p) => p.parameter.name);
  return { type: "object", properties, required, additionalProperties: !closed };
}

export function requestValidator(contract: Contract, operation: Operation): RequestHandler {
  const plansIn = (where: ParameterObject["in"]) =>
    operation.parameters
      .filter((p) => p.in === where)
      .map((parameter): ParameterPlan => ({ parameter, read: parameter.content ? "json" : typeOf(contract, parameter.schema) }));
  const plans = { path: plansIn("path"), query: plansIn("query"), header: plansIn("header") };
  const validators = {
    path: contract.compile(objectSchema(plans.path, false)),
    // a query parameter the operation does not declare is refused (a misspelt filter would be ignored)
    query: contract.compile(objectSchema(plans.query, true)),
    header: contract.compile(objectSchema(plans.header, false)),
  };
  const bodySchema = operation.requestBody?.content?.["application/json"]?.schema;
  const validateBody = bodySchema && contract.compile(bodySchema);

  /** Reads each declared parameter's text as its schema type; JSON content that does not parse is a detail. */
  function read(where: keyof typeof plans, texts: Record<string, string | string[] | undefined>, details: InvalidField[]) {
    const values: Record<string, unknown> = { ...texts };
    for (const { parameter, read: type } of plans[where]) {
      const text = texts[parameter.name];
      if (text === undefined || Array.isArray(text)) continue; // absent, or repeated: the schema reports it
      if (type !== "json") values[parameter.name] = coerce(text, type);
      else {
        try {
          values[parameter.name] = JSON.parse(text);
        } catch {
          details.push({ location: where, field: parameter.name, message: "must be JSON" });
          delete values[parameter.name];
          continue;
        }
        if (nestsDeeperThan(values[parameter.name])) {
          details.push({ location: where, field: parameter.name, message: TOO_DEEP_MESSAGE });
          delete values[parameter.name];
        }
      }
    }
    return values;
  }

  /** The character rule first (its detail wins for a field), then the schema. */
  function check(where: Location, validate: ReturnType<Contract["compile"]>, value: unknown, details: InvalidField[]) {
    textDetails(value, where, details);
    if (!validate(value)) details.push(...detailsOf(validate.errors ?? [], where));
  }

  function body(req: Request, details: InvalidField[]): unknown {
    const declared = operation.requestBody;
    if (!declared) return undefined;
    const length = Number(req.headers["content-length"] ?? 0);
    if ((length > 0 || req.headers["transfer-encoding"]) && !req.is("application/json")) {
      details.push({ location: "body", field: "(root)", message: "must be sent as application/json" });
      return undefined;
    }
    // verify of express.json counts the bytes it read; an empty JSON body is not a body
    if (!((req.res?.locals.bodyBytes as number | undefined) ?? 0)) {
      if (declared.required) details.push({ location: "body", field: "(root)", message: "is required" });
      return undefined;
    }
    if (nestsDeeperThan(req.body)) {
      details.push({ location: "body", field: "(root)", message: TOO_DEEP_MESSAGE });
      return undefined;
    }
    if (validateBody) check("body", validateBody, req.body, details);
    return req.body;
  }

  return (req, res, next) => {
    const details: InvalidField[] = [];
    const rawQuery = req.originalUrl.includes("?") ? req.originalUrl.slice(req.originalUrl.indexOf("?") + 1) : "";
    const { values: queryTexts, malformed } = parseQuery(rawQuery);
    for (const name of malformed) {
      details.push({ location: "query", field: name, message: PERCENT_ENCODING_MESSAGE });
    }
    const headerTexts = Object.fromEntries(plans.header.map(({ parameter }) => [parameter.name, req.get(parameter.name)]));
    const input: ValidatedRequest = {
      path: read("path", req.params as Record<string, string>, details),
      query: read("query", queryTexts, details),
      header: read("header", headerTexts, details),
      body: undefined,
    };
    for (const [k, v] of Object.entries(input.header)) if (v === undefined) delete input.header[k];
    check("path", validators.path, input.path, details);
    check("query", validators.query, input.query, details);
    check("header", validators.header, input.header, details);
    input.body = body(req, details);
    if (details.length) {
      const unique = onePerField(details);
      throw new Invalid(`Invalid request: ${unique.map((d) => `${d.location} ${d.field} ${d.message}`).join("; ")}`, unique);
    }
    res.locals.input = input;
    next();
  };
}
