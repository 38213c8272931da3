// One class per specified error body, and the single place that turns any error into a response.
import type { ErrorRequestHandler } from "express";
import type { components } from "../../generated/openapi.ts";
import type { Logger } from "../logging.ts";
import type { ResponseCheck } from "./response-check.ts";

type Schemas = components["schemas"];
export type ValidationErrorDetail = Schemas["ValidationErrorDetail"];

/** An error the API answers with a documented status and body. */
export abstract class ApiError extends Error {
  abstract readonly status: number;
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
  /** The `{error, message}` shape shared by the V1 error bodies. */
  body(): { error: string; message: string } {
    return { error: this.code, message: this.message };
  }
}

/** 400 V1BadRequestResponse: one detail per invalid field. */
export class BadRequestError extends ApiError {
  readonly status = 400;
  constructor(
    message: string,
    readonly details: ValidationErrorDetail[] = [],
    code = "validation_failed",
  ) {
    super(code, message);
  }
  override body(): Schemas["V1BadRequestResponse"] {
    return { ...super.body(), details: this.details };
  }
}

/** 401 UnauthorizedResponse: missing, invalid, expired or revoked key. */
export class UnauthorizedError extends ApiError {
  readonly status = 401;
}

/** 402 V1InternalServerError (Part 7 names that body for 402). */
export class PaymentRequiredError extends ApiError {
  readonly status = 402;
  constructor(message: string) {
    super("credit_limit_exceeded", message);
  }
}

/** 403 V1PermissionDenied. */
export class ForbiddenError extends ApiError {
  readonly status = 403;
  constructor(message: string) {
    super("forbidden", message);
  }
}

/** 403 V1PermissionDenied for an account without a valid API licence. */
export class NoLicenceError extends ApiError {
  readonly status = 403;
  constructor() {
    super("no_valid_licence", "The account does not hold a valid API licence");
  }
}

/** 403 V1PermissionDenied for a plain-HTTP request where HTTPS is required. */
export class HttpsRequiredError extends ApiError {
  readonly status = 403;
  constructor() {
    super("https_required", "This API is served over HTTPS only: repeat the request with https://");
  }
}

/** 413 V1PayloadTooLarge: the body exceeds the configured limit. */
export class PayloadTooLargeError extends ApiError {
  readonly status = 413;
  constructor(limitBytes?: number) {
    super("payload_too_large", `The request body exceeds the limit${limitBytes ? ` of ${limitBytes} bytes` : ""}`);
  }
}

/** 429 RateLimitErrorResponse; the caller sets `Retry-After` and the RateLimit headers. */
export class RateLimitedError extends ApiError {
  readonly status = 429;
  constructor(readonly retryAfterSeconds: number) {
    super("rate_limited", `Too many requests with this API key; retry in ${retryAfterSeconds} s`);
  }
  override body(): Schemas["RateLimitErrorResponse"] {
    return { ...super.body(), retryAfterSeconds: this.retryAfterSeconds };
  }
}

/** 405 for a method the spec does not give a path; `Allow` lists those it does. */
export class MethodNotAllowedError extends ApiError {
  readonly status = 405;
  constructor(readonly allow: string) {
    super("method_not_allowed", `This path accepts only ${allow}`);
  }
}

/** 404 V1NotFoundResponse: also for another account's ids, so that existence is not revealed. */
export class NotFoundError extends ApiError {
  readonly status = 404;
  constructor(message: string, code = "not_found") {
    super(code, message);
  }
}

/** 409 V1ConflictResponse; `code` is `conflict` unless the operation documents a finer one. */
export class ConflictError extends ApiError {
  readonly status = 409;
  constructor(message: string, code = "conflict") {
    super(code, message);
  }
}

class InternalError extends ApiError {
  readonly status = 500;
  constructor() {
    super("internal_error", "An unexpected error occurred; quote the X-Request-Id header when reporting it");
  }
}

/** Shape of the errors express-openapi-validator and body-parser raise. */
interface HttpLikeError {
  status?: number;
  statusCode?: number;
  type?: string;
  errors?: { path?: string; message?: string }[];
  message?: string;
  code?: string;
  limit?: number;
}

const locations: Record<string, ValidationErrorDetail["location"]> = {
  body: "body",
  query: "query",
  params: "path",
  path: "path",
  headers: "header",
  header: "header",
};

/** `/body/name` -> {location: body, field: name}; `/query/email` -> {location: query, field: email}. */
export function detailFromValidatorPath(path: string, message: string): ValidationErrorDetail {
  const [where = "body", ...rest] = path.replace(/^[./]+/, "").split(/[./]/);
  const location = locations[where] ?? "body";
  const field = locations[where] ? rest.join(".") : [where, ...rest].join(".");
  return { location, field: field || "(root)", message };
}

/** Maps anything thrown to one of the documented error types. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const e = (error ?? {}) as HttpLikeError;
  const status = e.status ?? e.statusCode;
  if (e.code === "P2002") return new ConflictError("A resource with these unique values already exists");
  if (e.code === "P2025") return new NotFoundError("The resource does not exist");
  if (e.type === "entity.parse.failed") {
    return new BadRequestError("The request body is not valid JSON", [
      { location: "body", field: "(root)", message: "malformed JSON" },
    ], "malformed_json");
  }
  if (e.type === "entity.too.large") return new PayloadTooLargeError(e.limit);
  if (status === 400 || status === 415) {
    const details = (e.errors ?? []).map((d) => detailFromValidatorPath(d.path ?? "", d.message ?? "is invalid"));
    return new BadRequestError(e.message ? `Invalid request: ${e.message}` : "Invalid request", details);
  }
  if (status === 404) return new NotFoundError("No such path");
  if (status === 405) return new MethodNotAllowedError(String((e as { headers?: { Allow?: string } }).headers?.Allow ?? ""));
  return new InternalError();
}

/**
 * The credit-reporting operations (`/api/...`) have their own error bodies (Part 7):
 * ParameterizedErrorVM for a JSON 400 (ErrorVM when the client does not accept JSON) and ErrorVM
 * for 403, 404, 413 and 500. 401 and 429 look the same everywhere.
 */
function creditErrorBody(error: ApiError, acceptsJson: boolean): { mediaType: string; body: object } | undefined {
  if (error instanceof BadRequestError && acceptsJson) {
    const params = Object.fromEntries(error.details.map((d) => [d.field, d.message]));
    return { mediaType: "application/json", body: { message: `error.${error.code}`, params } };
  }
  if ([400, 403, 404, 413, 500].includes(error.status)) {
    return { mediaType: acceptsJson ? "application/json" : "text/plain", body: { message: `error.${error.code}`, description: error.message } };
  }
  return undefined;
}

export interface ErrorHandlerOptions {
  logger: Logger;
  operationOf: (method: string, path: string) => string | undefined;
  /** When given, every error body is checked against the spec (tests and development). */
  check?: ResponseCheck;
}

export function errorHandler({ logger, operationOf, check }: ErrorHandlerOptions): ErrorRequestHandler {
  return (error, req, res, _next) => {
    const apiError = toApiError(error);
    const requestId = res.locals.requestId as string;
    if (apiError.status >= 500) {
      const violation = (error as HttpLikeError).errors?.some((d) => d.path === "/response");
      const msg = violation ? "response does not match the spec" : "request failed";
      logger.error(msg, { requestId, error: describe(error) });
    }
    if (res.headersSent) return;
    const credit = req.path.startsWith("/api/") ? creditErrorBody(apiError, !!req.accepts("application/json")) : undefined;
    const { mediaType, body } = credit ?? { mediaType: "application/json", body: apiError.body() };
    const operationId = operationOf(req.method, req.path);
    const problem = operationId && check?.(operationId, apiError.status, mediaType, body);
    if (problem) logger.error("response does not match the spec", { requestId, operationId, status: apiError.status, problem });
    if (apiError instanceof MethodNotAllowedError) res.setHeader("Allow", apiError.allow);
    res.status(apiError.status).type(mediaType).send(JSON.stringify(body));
  };
}

/** Stack and message for the log, never the request. */
function describe(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}
