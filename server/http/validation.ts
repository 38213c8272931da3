// Request validation. express-openapi-validator (EOV) checks every operation's request against
// the one loaded spec (server/spec.ts): path, query and header parameters, the body, unknown query
// parameters, formats (ajv-formats "full": a date is a day of the calendar), the spec's defaults
// applied, parameter types read from their text, the body's types not coerced. It is used through
// its public `middleware(options)` only: one per spec path (given the spec with that path only),
// its handlers placed in each of the path's operation routes between the contract's rules and one
// error handler.
//
// In front of it, in one pass, the rules of the contract EOV has no option for (spec/openapi.yaml,
// info.description "Text"):
//   - the query string is application/x-www-form-urlencoded: a value that is not percent-encoded
//     UTF-8 is refused (Express's parser decodes it leniently, into U+FFFD);
//   - numbers in parameters only in canonical decimal form (Ajv's type coercion reads "0x1",
//     "1e0", "01" and " 1" as numbers);
//   - the character rule (text-rule.ts) in every string, declared or not;
//   - JSON nested at most 32 levels (json-depth.ts), before any recursive walk (Ajv's is one);
//   - a body only as application/json: 400 as documented, where EOV would answer 415;
//   - a required body present (EOV reads "required" from the body schema's required fields).
// Both lists of findings are one answer: one detail per field (the first found, so the rules
// above win), translated from EOV's errors by server/http/errors.ts.
import type { ErrorRequestHandler, Request, RequestHandler, Response } from "express";
import * as eov from "express-openapi-validator";
import type { Contract, Operation, ParameterObject, SchemaObject } from "../contract.ts";
import { Invalid, type InvalidField } from "../domain/errors.ts";
import { loadSpec } from "../spec.ts";
import { isValidatorError, validatorDetails } from "./errors.ts";
import { nestsDeeperThan, TOO_DEEP_MESSAGE } from "./json-depth.ts";
import { joinField, TEXT_RULE_MESSAGE, textRuleBreaks } from "./text-rule.ts";
import { PERCENT_ENCODING_MESSAGE, parseQuery } from "./form-encoding.ts";

export interface ValidatedRequest {
  path: Record<string, unknown>;
  query: Record<string, unknown>;
  body: unknown;
}

type Location = InvalidField["location"];

/** A request without a query string: nothing to parse (frozen: nothing may add to it). */
const NO_QUERY: { readonly values: Readonly<Record<string, string | string[]>>; readonly malformed: readonly string[] } = Object.freeze({
  values: Object.freeze(Object.create(null)),
  malformed: Object.freeze([]),
});

const canonical = {
  integer: /^-?(0|[1-9][0-9]*)$/,
  number: /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/,
} as const;

function typeOf(contract: Contract, schema: SchemaObject | undefined): string | undefined {
  if (!schema) return undefined;
  if (schema.$ref) return typeOf(contract, contract.document.components?.schemas?.[schema.$ref.split("/").pop()!]);
  return Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
}

/**
 * The spec EOV validates one path with: the loaded spec with that path only (our router has matched
 * it already; EOV matches each request again against every path it is given, compiling each
 * path's pattern per request), its query parameters read as a form (raw reserved characters are
 * data, `+` is a space: `allowReserved`) and an empty value judged by its schema
 * (`allowEmptyValue`). All the components are kept: EOV compiles a schema at its first use only.
 */
function specOfPath(path: string): object {
  const spec = loadSpec() as unknown as { paths: Record<string, Record<string, { parameters?: unknown[] }>>; components: { parameters?: Record<string, unknown> } };
  const item = spec.paths[path]!;
  spec.paths = { [path]: item };
  const asForm = (parameter: unknown) => {
    const p = parameter as ParameterObject & { allowReserved?: boolean; allowEmptyValue?: boolean };
    if (p.in === "query") Object.assign(p, { allowReserved: true, allowEmptyValue: true });
  };
  Object.values(spec.components.parameters ?? {}).forEach(asForm);
  for (const member of Object.values(item)) (Array.isArray(member) ? member : (member.parameters ?? [])).forEach(asForm);
  return spec;
}

const validators = new Map<string, RequestHandler[]>();

/**
 * EOV's public middleware for one spec path, made once per process (every app of a process shares
 * it) and placed whole in each of the path's operation routes. Made for all 39 paths, with their
 * first requests: 0.5 s of CPU in all (measured 2026-11-28); one middleware for the whole spec
 * costs as much to make but matches each request against every path, 11% more CPU per look-up
 * (commit message of this change).
 */
function validatorOfPath(path: string): RequestHandler[] {
  let found = validators.get(path);
  if (!found) {
    found = eov.middleware({
      apiSpec: specOfPath(path) as never,
      validateApiSpec: false, // `npm run lint:spec` validates the spec
      validateRequests: { allErrors: true, allowUnknownQueryParameters: false, coerceTypes: false },
      validateResponses: false, // tests check responses (server/http/response-check.ts)
      validateSecurity: false, // the API key is checked before validation (401 wins over 400)
      fileUploader: false,
      ajvFormats: { mode: "full" },
    }) as unknown as RequestHandler[];
    validators.set(path, found);
  }
  return found;
}

/** One detail per field: the first found (the contract's own rules come first). */
function onePerField(details: InvalidField[]): InvalidField[] {
  const seen = new Set<string>();
  return details.filter((d) => {
    const key = `${d.location} ${d.field}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** What the contract's own rules need of one operation, read once when its route is made. */
interface OperationRules {
  operation: Operation;
  /** Parameters whose text must be a canonical number, by location. */
  numeric: { where: "path" | "query" | "header"; name: string; type: keyof typeof canonical }[];
  /** Query parameters whose value is JSON. */
  jsonQuery: string[];
  headers: ParameterObject[];
}

function operationRules(contract: Contract, operation: Operation): OperationRules {
  const declared = (where: ParameterObject["in"]) => operation.parameters.filter((p) => p.in === where);
  const numeric = (["path", "query", "header"] as const).flatMap((where) =>
    declared(where).flatMap((parameter) => {
      const type = parameter.content ? undefined : typeOf(contract, parameter.schema);
      return type === "integer" || type === "number" ? [{ where, name: parameter.name, type: type as keyof typeof canonical }] : [];
    }),
  );
  const jsonQuery = declared("query").filter((p) => p.content?.["application/json"]).map((p) => p.name);
  return { operation, numeric, jsonQuery, headers: declared("header") };
}

/** The contract's own rules; `stop` when a value must not reach EOV (too deep for its walk). */
function contractRules({ operation, numeric, jsonQuery, headers }: OperationRules, req: Request, res: Response): { details: InvalidField[]; stop: boolean } {
  const details: InvalidField[] = [];
  const broken = (where: Location, value: unknown, prefix: (string | number)[] = []) => {
    for (const path of textRuleBreaks(value)) details.push({ location: where, field: joinField([...prefix, ...path]) || "(root)", message: TEXT_RULE_MESSAGE });
  };
  const at = req.originalUrl.indexOf("?");
  const { values: query, malformed } = at < 0 ? NO_QUERY : parseQuery(req.originalUrl.slice(at + 1));
  for (const name of malformed) details.push({ location: "query", field: name, message: PERCENT_ENCODING_MESSAGE });
  const texts = {
    path: req.params as Record<string, string | undefined>,
    query: query as Record<string, string | string[] | undefined>,
    header: Object.fromEntries(headers.map((p) => [p.name, req.get(p.name)])),
  };
  for (const { where, name, type } of numeric) {
    const text = texts[where][name];
    if (typeof text === "string" && !canonical[type].test(text)) details.push({ location: where, field: name, message: `must be ${type}, in canonical decimal form` });
  }
  for (const name of jsonQuery) {
    const text = query[name];
    if (typeof text !== "string") continue;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      details.push({ location: "query", field: name, message: "must be JSON" });
      continue;
    }
    if (nestsDeeperThan(value)) return { details: [...details, { location: "query", field: name, message: TOO_DEEP_MESSAGE }], stop: true };
    broken("query", value, [name]);
  }
  broken("path", texts.path);
  broken("query", query);
  broken("header", texts.header);
  if (!operation.requestBody) return { details, stop: false };
  const length = Number(req.headers["content-length"] ?? 0);
  const sent = length > 0 || !!req.headers["transfer-encoding"];
  // the exact type most clients send, without parsing it (req.is parses the header on every call)
  if (sent && req.headers["content-type"] !== "application/json" && !req.is("application/json")) {
    details.push({ location: "body", field: "(root)", message: "must be sent as application/json" });
  }
  // verify of express.json counts the bytes it read; an empty JSON body is not a body
  const read = ((res.locals.bodyBytes as number | undefined) ?? 0) > 0;
  // EOV takes a body as required when its schema lists required fields, not by the operation's
  // `requestBody.required`: a body of optional fields would pass when absent
  if (!read && operation.requestBody?.required) details.push({ location: "body", field: "(root)", message: "is required" });
  if (read && nestsDeeperThan(req.body)) return { details: [...details, { location: "body", field: "(root)", message: TOO_DEEP_MESSAGE }], stop: true };
  if (read) broken("body", req.body);
  // The one shim before EOV: it answers 415 to a body missing or not sent as JSON (its
  // `unsupported media type`, no option changes it) where the contract answers 400 with every
  // finding (test/input-robustness.test.ts, "when the body is missing" and "when the content
  // type is not JSON"); the rules above refused those, so EOV is shown the JSON value read, or none.
  req.headers["content-type"] = "application/json";
  return { details, stop: false };
}

/** The operation's request validation, as handlers of its route: the rules, EOV's middleware, one answer. */
export function requestValidator(contract: Contract, operation: Operation): (RequestHandler | ErrorRequestHandler)[] {
  const rulesOf = operationRules(contract, operation);
  /** EOV names headers in lower case; the details use the spec's names. */
  const headerName = new Map(rulesOf.headers.map((p) => [p.name.toLowerCase(), p.name]));

  const refuse = (details: InvalidField[]) => {
    const unique = onePerField(details);
    return new Invalid(`Invalid request: ${unique.map((d) => `${d.location} ${d.field} ${d.message}`).join("; ")}`, unique);
  };

  /** The contract's own rules first; their findings wait for EOV's (one answer for both). */
  const rules: RequestHandler = (req, res, next) => {
    const { details, stop } = contractRules(rulesOf, req, res);
    if (stop) return next(refuse(details));
    res.locals.inputFindings = details;
    next();
  };
  /** EOV's 400: its findings after the rules' ones; any other error goes on to errors.ts. */
  const validatorFindings: ErrorRequestHandler = (error, _req, res, next) => {
    if (!(isValidatorError(error) && error.status === 400)) return next(error);
    const found = validatorDetails(error).map((d) => (d.location === "header" ? { ...d, field: headerName.get(d.field) ?? d.field } : d));
    next(refuse([...(res.locals.inputFindings as InvalidField[]), ...found]));
  };
  const validated: RequestHandler = (req, res, next) => {
    const details = res.locals.inputFindings as InvalidField[];
    if (details.length) return next(refuse(details));
    res.locals.input = { path: req.params, query: req.query, body: req.body } satisfies ValidatedRequest;
    next();
  };
  return [rules, ...validatorOfPath(operation.path), validatorFindings, validated];
}
