// Request validation. express-openapi-validator (EOV) checks every operation's request against
// the one loaded spec (server/spec.ts): path, query and header parameters, the body, unknown query
// parameters, formats (ajv-formats "full": a date is a day of the calendar), the spec's defaults
// applied, parameter types read from their text, the body's types not coerced. It is used through
// its public `middleware(options)` only: one per spec path (given that path's spec and the
// components it refers to), made at the path's first request and run whole in each of the path's
// operation routes, between the contract's rules and one error handler.
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
 * The spec EOV validates one path with: the loaded spec reduced to that path (our router has
 * matched it already; EOV matches the path again against each path of its spec, compiling each
 * template per request), query parameters read as a form (raw reserved characters are data, `+`
 * is a space: `allowReserved`) and an empty value judged by its schema (`allowEmptyValue`).
 */
function specOf(path: string): object {
  const spec = loadSpec() as unknown as { paths: Record<string, Record<string, { parameters?: unknown[] }>>; components: Record<string, Record<string, unknown>> & { parameters?: Record<string, unknown> } };
  const item = spec.paths[path]!;
  spec.paths = { [path]: item };
  spec.components = referencedComponents(item, spec.components);
  const asForm = (parameter: unknown) => {
    const p = parameter as ParameterObject & { allowReserved?: boolean; allowEmptyValue?: boolean };
    if (p.in === "query") Object.assign(p, { allowReserved: true, allowEmptyValue: true });
  };
  Object.values(spec.components.parameters ?? {}).forEach(asForm);
  for (const member of Object.values(item)) (Array.isArray(member) ? member : (member.parameters ?? [])).forEach(asForm);
  return spec;
}

/**
 * The components `root` refers to, directly or through other components: EOV compiles every
 * schema of the components it is given, so each path's copy keeps only its own (all of them, for
 * each of the ~40 paths, was one block of 4 s of CPU after an app was made, 30 s and more on a
 * loaded machine, which timed out the database's waits queued behind it).
 */
function referencedComponents(root: unknown, components: Record<string, Record<string, unknown>>): Record<string, Record<string, unknown>> {
  const kept: Record<string, Record<string, unknown>> = { securitySchemes: components.securitySchemes ?? {} };
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (!value || typeof value !== "object") return;
    for (const [key, member] of Object.entries(value)) {
      const ref = key === "$ref" && typeof member === "string" ? /^#\/components\/([^/]+)\/([^/]+)$/.exec(member) : null;
      if (ref) {
        const [, kind, name] = ref as unknown as [string, string, string];
        if (kept[kind]?.[name] !== undefined) continue;
        (kept[kind] ??= {})[name] = components[kind]?.[name];
        visit(components[kind]?.[name]);
      } else visit(member);
    }
  };
  visit(root);
  return kept;
}

const validators = new Map<string, RequestHandler[]>();

/**
 * EOV's middleware for one spec path (its public `middleware(options)`), made once per process:
 * shown one path, it matches and compiles one path.
 */
function validatorOf(path: string): RequestHandler[] {
  let found = validators.get(path);
  if (!found) {
    found = eov.middleware({
      apiSpec: specOf(path) as never,
      validateApiSpec: false, // `npm run lint:spec` validates the spec; here it is loaded once per path
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

/**
 * The path's EOV middleware, made at the path's first request: made for every path when an app
 * is made, their compiling ran as one block of seconds of CPU soon after (minutes of waits on a
 * loaded machine), and most processes (tests, a short-lived service) use a few paths only.
 */
function eovOnFirstUse(path: string): RequestHandler {
  return (req, res, next) => {
    const handlers = validatorOf(path);
    let at = 0;
    const step = (error?: unknown): void => {
      if (error) return next(error);
      const handler = handlers[at++];
      if (!handler) return next();
      handler(req, res, step);
    };
    step();
  };
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

/** The operation's request validation, as handlers of its route: the rules, EOV's middleware, one answer. */
// Why long: the contract's own rules and the validator's handlers stepped in one place. Mounting
// EOV's public middleware per path instead was tried on 2026-11-28 and reverted: bench:lookup's
// service spent 1,095-1,170 against 813 µs of CPU per look-up (docs/benchmarks.md, look-up log).
export function requestValidator(contract: Contract, operation: Operation): (RequestHandler | ErrorRequestHandler)[] {
  const declared = (where: ParameterObject["in"]) => operation.parameters.filter((p) => p.in === where);
  /** Parameters whose text must be a canonical number, by location. */
  const numeric = (["path", "query", "header"] as const).flatMap((where) =>
    declared(where).flatMap((parameter) => {
      const type = parameter.content ? undefined : typeOf(contract, parameter.schema);
      return type === "integer" || type === "number" ? [{ where, name: parameter.name, type: type as keyof typeof canonical }] : [];
    }),
  );
  const jsonQuery = declared("query").filter((p) => p.content?.["application/json"]).map((p) => p.name);
  const headers = declared("header");
  /** EOV names headers in lower case; the details use the spec's names. */
  const headerName = new Map(headers.map((p) => [p.name.toLowerCase(), p.name]));
  const hasBody = !!operation.requestBody;

  /** The contract's own rules; `stop` when a value must not reach EOV (too deep for its walk). */
  function contractRules(req: Request, res: Response): { details: InvalidField[]; stop: boolean } {
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
    if (!hasBody) {
      delete req.headers["content-type"]; // see below
      return { details, stop: false };
    }
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
    // What EOV is shown is the JSON value read, or none (every body of the spec is JSON; other
    // media types are refused above). It also keys the validators it compiles and keeps by the
    // request's content type: shown one type per operation, no client can make it keep one per
    // media type sent.
    req.headers["content-type"] = "application/json";
    return { details, stop: false };
  }

  const refuse = (details: InvalidField[]) => {
    const unique = onePerField(details);
    return new Invalid(`Invalid request: ${unique.map((d) => `${d.location} ${d.field} ${d.message}`).join("; ")}`, unique);
  };

  /** The contract's own rules first; their findings wait for EOV's (one answer for both). */
  const rules: RequestHandler = (req, res, next) => {
    const { details, stop } = contractRules(req, res);
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
  return [rules, eovOnFirstUse(operation.path), validatorFindings, validated];
}
