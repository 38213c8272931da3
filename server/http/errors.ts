// One class per specified error body, and the single place that turns any error into a response.
import type { ErrorRequestHandler } from "express";
import { error as validatorErrors } from "express-openapi-validator";
import type { components } from "../../generated/openapi.ts";
import * as domain from "../domain/errors.ts";
import type { Contract } from "../contract.ts";
import { databaseFault, type DatabaseFault, isDatabaseUnavailable } from "../db/errors.ts";
import type { Logger } from "../logging.ts";
import { MAX_TAGS_PER_LEAD } from "../services/tags.ts";
import type { ResponseCheck } from "./response-check.ts";
import { sendText } from "./reply.ts";
import { joinField } from "./text-rule.ts";
import { malformedPathParameters } from "./form-encoding.ts";

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

/** 429 RateLimitErrorResponse, with `Retry-After`; the API key's limiter sets the RateLimit headers. */
export class RateLimitedError extends ApiError {
  readonly status = 429;
  constructor(
    readonly retryAfterSeconds: number,
    message = `Too many requests with this API key; retry in ${retryAfterSeconds} s`,
  ) {
    super("rate_limited", message);
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

/** 415: a body in a media type the operation does not take (the collector's batch). */
export class UnsupportedMediaTypeError extends ApiError {
  readonly status = 415;
  constructor(message: string) {
    super("unsupported_media_type", message);
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

/** 503 ServiceUnavailable: the database (or the ingest log) did not answer in time; `Retry-After` says when to repeat. */
export class ServiceUnavailableError extends ApiError {
  readonly status = 503;
  constructor(
    readonly retryAfterSeconds = DATABASE_RETRY_AFTER_SECONDS,
    message = "The database did not answer in time; retry after the Retry-After seconds",
  ) {
    super("service_unavailable", message);
  }
}

/** The wait announced with a 503: a stopped database's restart or fail-over is rarely quicker. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

class InternalError extends ApiError {
  readonly status = 500;
  constructor() {
    super("internal_error", "An unexpected error occurred; quote the X-Request-Id header when reporting it");
  }
}

/** Shape of the errors body-parser raises. */
interface BodyParserError {
  status?: number;
  type?: string;
  limit?: number;
}

/** The documented answer to a violated constraint (the database decides races; this names them). */
const constraintAnswers: Record<string, () => ApiError> = {
  Dataset_accountId_nameKey_key: () => new ConflictError("A dataset with this name already exists in this account"),
  Segment_datasetId_nameKey_key: () => new ConflictError("A segment with this name already exists in this dataset"),
  Membership_pkey: () => new ConflictError("The user is already a member of this account"),
  UserDataset_pkey: () => new ConflictError("The user already has access to this dataset"),
  // a segment deleted while it was being set as a default
  SegmentPreference_datasetId_segmentId_fkey: () => new NotFoundError("The segment does not exist"),
  Lead_tags_count_check: () => new ConflictError(`A lead has at most ${MAX_TAGS_PER_LEAD} tags`),
};

/** Database errors by constraint name, then by SQLSTATE / Prisma code. */
function fromDatabaseFault(fault: DatabaseFault): ApiError {
  const named = fault.constraint && constraintAnswers[fault.constraint];
  if (named) return named();
  if (fault.sqlState === "23505") return new ConflictError("A resource with these unique values already exists");
  if (fault.prismaCode === "P2025") return new NotFoundError("The resource does not exist");
  return new InternalError();
}

/** An error of express-openapi-validator (server/http/validation.ts): a status, one entry per finding. */
export interface ValidatorError extends Error {
  status: number;
  errors: { path: string; message: string; errorCode?: string }[];
  headers?: Record<string, string>;
}

const validatorErrorTypes = Object.values(validatorErrors);

export function isValidatorError(error: unknown): error is ValidatorError {
  return validatorErrorTypes.some((type) => error instanceof type);
}

/** Where express-openapi-validator puts each part of a request (`/params/userId`). */
const locations: Record<string, domain.InvalidField["location"]> = { body: "body", query: "query", params: "path", headers: "header" };

/**
 * The documented details of express-openapi-validator's 400: its paths (`/body/filters/
 * conditions/0/value`) as fields (`filters.conditions[0].value`), and the words of the V1 body
 * for a missing value and for a field or parameter the operation does not have.
 */
/**
 * A pattern longer than this is not repeated in an error detail (the cidr's, about 900 characters
 * of IPv4 and IPv6 alternatives, would be the whole answer); the detail points at the contract.
 */
const LONGEST_PATTERN_SAID = 200;

export function validatorDetails(error: ValidatorError): domain.InvalidField[] {
  return error.errors.map(({ path, message, errorCode }) => {
    const [, part = "", ...rest] = path.split("/").map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~"));
    const location = locations[part] ?? "body";
    const field = (locations[part] ? joinField(rest.map((s) => (/^\d+$/.test(s) ? Number(s) : s))) : "") || "(root)";
    const said =
      errorCode === "required.openapi.validation" ? "is required"
      : errorCode === "additionalProperties.openapi.validation" ? "is not a field of this body"
      : message.startsWith("Unknown query parameter") ? "is not a parameter of this operation"
      : message.startsWith('must match pattern "') && message.length > LONGEST_PATTERN_SAID ? "does not match the field's pattern in the contract (its description says what it accepts)"
      : message;
    return { location, field, message: said };
  });
}

/** express-openapi-validator's other answers, as the documented errors. */
function fromValidatorError(error: ValidatorError): ApiError {
  if (error.status === 400) return new BadRequestError(`Invalid request: ${error.message}`, validatorDetails(error));
  if (error.status === 404) return new NotFoundError("No such path");
  if (error.status === 405) return new MethodNotAllowedError(error.headers?.Allow ?? "");
  if (error.status === 413) return new PayloadTooLargeError();
  if (error.status === 415) return new UnsupportedMediaTypeError(error.message);
  return new InternalError();
}

/** Maps anything thrown to one of the documented error types: the one translator. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof domain.DomainError) return fromDomainError(error);
  if (isValidatorError(error)) return fromValidatorError(error);
  if (isDatabaseUnavailable(error)) return new ServiceUnavailableError();
  const fault = databaseFault(error);
  if (fault) return fromDatabaseFault(fault);
  const e = (error ?? {}) as BodyParserError;
  if (e.type === "entity.parse.failed") {
    return new BadRequestError("The request body is not valid JSON", [
      { location: "body", field: "(root)", message: "malformed JSON" },
    ], "malformed_json");
  }
  if (e.type === "entity.too.large") return new PayloadTooLargeError(e.limit);
  if (e.status === 400 || e.status === 415) {
    return new BadRequestError("Invalid request: the body cannot be read", [
      { location: "body", field: "(root)", message: "must be UTF-8 encoded application/json" },
    ]);
  }
  return new InternalError();
}

/** The documented status of each domain error (services throw these, transport-free). */
function fromDomainError(error: domain.DomainError): ApiError {
  if (error instanceof domain.NotFound) return new NotFoundError(error.message, error.code);
  if (error instanceof domain.Conflict) return new ConflictError(error.message, error.code);
  if (error instanceof domain.Forbidden) return Object.assign(new ForbiddenError(error.message), { code: error.code });
  if (error instanceof domain.PaymentRequired) return new PaymentRequiredError(error.message);
  if (error instanceof domain.Invalid) return new BadRequestError(error.message, error.details, error.code);
  if (error instanceof domain.TooManyRequests) return new RateLimitedError(error.retryAfterSeconds, error.message);
  if (error instanceof domain.Unavailable) return new ServiceUnavailableError(error.retryAfterSeconds, error.message);
  return new InternalError();
}

/**
 * The body an operation documents for an error status. The credit-reporting operations document
 * their own (Part 7): ParameterizedErrorVM for a JSON 400 (ErrorVM when the client does not accept
 * JSON) and ErrorVM for 403, 404, 413 and 500; every other body is `{error, message}`.
 */
function documentedErrorBody(
  declaredSchema: string | undefined,
  error: ApiError,
  acceptsJson: boolean,
): { mediaType: string; body: object } {
  const mediaType = acceptsJson ? "application/json" : "text/plain";
  if (declaredSchema === "ParameterizedErrorVM" && acceptsJson && error instanceof BadRequestError) {
    const params = Object.fromEntries(error.details.map((d) => [d.field, d.message]));
    return { mediaType, body: { message: `error.${error.code}`, params } };
  }
  if (declaredSchema === "ParameterizedErrorVM" || declaredSchema === "ErrorVM") {
    return { mediaType, body: { message: `error.${error.code}`, description: error.message } };
  }
  return { mediaType: "application/json", body: error.body() };
}

export interface ErrorHandlerOptions {
  logger: Logger;
  contract: Contract;
  /** When given, every error body is checked against the spec (tests and development). */
  check?: ResponseCheck;
}

export function errorHandler({ logger, contract, check }: ErrorHandlerOptions): ErrorRequestHandler {
  return (error, req, res, _next) => {
    if (error instanceof URIError && (error as BodyParserError).status === 400) {
      // the router could not decode a path parameter: name it, under its operation
      const { operationId, details } = malformedPathParameters(contract, req.originalUrl.split("?")[0]!);
      if (operationId) res.locals.operationId ??= operationId;
      error = new BadRequestError(`Invalid request: ${details.map((d) => `${d.location} ${d.field} ${d.message}`).join("; ")}`, details);
    }
    const apiError = toApiError(error);
    const log = (res.locals.log as Logger | undefined) ?? logger;
    if (apiError instanceof ServiceUnavailableError) {
      const what = error instanceof domain.Unavailable ? "ingest log unavailable" : "database unavailable";
      log.warn(what, { error: error instanceof Error ? error.message : String(error) });
    } else if (apiError.status >= 500) {
      const msg = error instanceof ResponseViolation ? "response does not match the spec" : "request failed";
      log.error(msg, { error: describe(error) });
    }
    if (res.headersSent) return;
    const operationId = res.locals.operationId as string | undefined;
    const declared = operationId ? contract.response(operationId, apiError.status) : undefined;
    const schemaRef = declared?.content?.["application/json"]?.schema?.$ref;
    const { mediaType, body } = documentedErrorBody(schemaRef?.split("/").pop(), apiError, !!req.accepts("application/json"));
    const problem = operationId && check?.(operationId, apiError.status, mediaType, body);
    if (problem) log.error("response does not match the spec", { operationId, status: apiError.status, problem });
    if (apiError instanceof MethodNotAllowedError) res.setHeader("Allow", apiError.allow);
    if (apiError instanceof ServiceUnavailableError || apiError instanceof RateLimitedError) res.setHeader("Retry-After", String(apiError.retryAfterSeconds));
    sendText(res, apiError.status, mediaType, JSON.stringify(body));
  };
}

/** A handler's answer that breaks the contract: a 500, logged as a spec violation. */
export class ResponseViolation extends Error {}

/** Stack and message for the log, never the request. */
function describe(error: unknown): string {
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}
