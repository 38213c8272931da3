// Domain errors: what went wrong in the rules, with no HTTP status and no response body.
// Services throw these; server/http/errors.ts is the one place that maps them (and database
// errors) to the status and body type each operation documents.
import type { Schemas } from "./types.ts";

/** Where an invalid value was found (`field` dot-separated, `filters.conditions[2].operator`, `(root)` for the whole), and what is wrong with it. */
export type InvalidField = Schemas["ValidationErrorDetail"];

export abstract class DomainError extends Error {
  /** A stable machine-readable code (the `error` of the documented body). */
  abstract readonly code: string;
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** The resource does not exist, or belongs to another account (existence is not revealed). */
export class NotFound extends DomainError {
  constructor(
    message: string,
    readonly code: string = "not_found",
  ) {
    super(message);
  }
}

/** The request conflicts with the state of a resource. */
export class Conflict extends DomainError {
  constructor(
    message: string,
    readonly code: string = "conflict",
  ) {
    super(message);
  }
}

/** The acting user may not do this. */
export class Forbidden extends DomainError {
  constructor(
    message: string,
    readonly code: string = "forbidden",
  ) {
    super(message);
  }
}

/** No credit left to pay for the operation. */
export class PaymentRequired extends DomainError {
  constructor(
    message: string,
    readonly code: string = "credit_limit_exceeded",
  ) {
    super(message);
  }
}

/** Input the rules refuse, one entry per invalid field. */
export class Invalid extends DomainError {
  constructor(
    message: string,
    readonly details: InvalidField[] = [],
    readonly code: string = "validation_failed",
  ) {
    super(message);
  }
}

/** Too many requests for a limit the rules keep (per user, per dataset...). */
export class TooManyRequests extends DomainError {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
    readonly code: string = "rate_limited",
  ) {
    super(message);
  }
}

/** A charge whose guard did not hold (another writer settled what it was for): nothing was charged. */
export class ChargeGuardFailed extends Error {}

/** A store the operation needs did not take the data (the ingest log down or full): nothing was stored; retry later. */
export class Unavailable extends DomainError {
  readonly code = "service_unavailable";
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

/** A domain error as stored data (an Idempotency-Key's first answer), and back. */
export interface StoredDomainError {
  kind: "NotFound" | "PaymentRequired";
  code: string;
  message: string;
}

export function storedFormOf(error: NotFound | PaymentRequired): StoredDomainError {
  return { kind: error instanceof NotFound ? "NotFound" : "PaymentRequired", code: error.code, message: error.message };
}

export function revive({ kind, code, message }: StoredDomainError): NotFound | PaymentRequired {
  return kind === "NotFound" ? new NotFound(message, code) : new PaymentRequired(message, code);
}
