// What a database error is, read through Prisma's own error class: the PostgreSQL SQLSTATE and
// the constraint it names. Used by the one error translator (server/http/errors.ts), by
// services whose rules branch on a violation (a retry after a lost race), and by the ingest
// writer, which retries a transient fault without end and sets aside data the database refuses.
import { Prisma } from "../../generated/prisma/client.ts";
import { redact } from "../logging.ts";

export interface DatabaseFault {
  /** The PostgreSQL SQLSTATE (`23505` unique, `23503` foreign key, `23514` check). */
  sqlState?: string;
  /** The violated constraint's name, `Dataset_accountId_nameKey_key`. */
  constraint?: string;
  /** Prisma's code, `P2002`. */
  prismaCode: string;
}

interface AdapterCause {
  originalCode?: string;
  originalMessage?: string;
}

export function databaseFault(error: unknown): DatabaseFault | undefined {
  if (!(error instanceof Prisma.PrismaClientKnownRequestError)) return undefined;
  const cause = (error.meta as { driverAdapterError?: { cause?: AdapterCause } } | undefined)?.driverAdapterError?.cause;
  return {
    prismaCode: error.code,
    sqlState: cause?.originalCode ?? (error.code === "P2002" ? "23505" : undefined),
    constraint: /constraint "([^"]+)"/.exec(cause?.originalMessage ?? "")?.[1],
  };
}

export const isUniqueViolation = (error: unknown): boolean => databaseFault(error)?.sqlState === "23505";

/** What a driver's or pool's error carries. */
interface Failure {
  message?: string;
  code?: string;
  cause?: unknown;
  meta?: { driverAdapterError?: { cause?: { kind?: string; originalCode?: string } } };
}

/** Timeouts and lost connections of the pool (`pg`), and Prisma's names for them (the embedded database's socket server refuses connections over its maximum). */
const UNAVAILABLE_MESSAGE = /query read timeout|timeout exceeded when trying to connect|connection terminated|connection timeout|unable to start a transaction in the given time|too many connections/i;
/** SQLSTATEs of a database that does not serve: statement timeout, shutdown, too many connections, connection failures (08xxx). */
const UNAVAILABLE_SQLSTATE = /^(57014|57P0[1-3]|53300|08...)$/;
const UNAVAILABLE_CODE = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "P1001", "P1002", "P1008", "P1017", "P2024", "P2028"]);
const UNAVAILABLE_KIND = new Set(["DatabaseNotReachable", "SocketTimeout", "ConnectionClosed", "TooManyConnections"]);

/**
 * True when the error says the database did not answer in time or could not be reached (a
 * stopped, overloaded or lost database): the request may succeed later, a 503.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e = error as Failure | undefined, depth = 0; e && typeof e === "object" && depth < 5; e = e.cause as Failure, depth++) {
    if (e.message && UNAVAILABLE_MESSAGE.test(e.message)) return true;
    if (e.code && (UNAVAILABLE_CODE.has(e.code) || UNAVAILABLE_SQLSTATE.test(e.code))) return true;
    const cause = e.meta?.driverAdapterError?.cause;
    if (cause?.kind && UNAVAILABLE_KIND.has(cause.kind)) return true;
    if (cause?.originalCode && UNAVAILABLE_SQLSTATE.test(cause.originalCode)) return true;
  }
  return false;
}

/** SQLSTATE classes of the data itself: 22 data exception (a bad date, a value out of range), 23 integrity constraint (not-null, foreign key). */
const DATA_SQLSTATE = /^2[23]...$/;
/** SQLSTATEs that a retry outlives besides those of an unavailable database: serialization failure, deadlock, lock not available. */
const CONTENTION_SQLSTATE = /^(40001|40P01|55P03)$/;

/** The SQLSTATE of a database error: Prisma's, or a driver's (`pg`) further down the causes. */
function sqlStateOf(error: unknown): string | undefined {
  const state = databaseFault(error)?.sqlState;
  if (state) return state;
  for (let e = error as Failure | undefined, depth = 0; e && typeof e === "object" && depth < 5; e = e.cause as Failure, depth++) {
    if (typeof e.code === "string" && /^[0-9A-Z]{5}$/.test(e.code)) return e.code;
  }
  return undefined;
}

/**
 * How a failed write of data is retried: `permanent` when the database refused the data itself
 * (a constraint or a data exception: its dataset gone, a null where a value is required, a date
 * out of range), which no retry of the same data changes; `transient` for anything else (the
 * database unavailable, a timeout, a deadlock), which is waited out.
 */
export type WriteFault = "permanent" | "transient";

export function writeFault(error: unknown): WriteFault {
  const state = sqlStateOf(error);
  return state && DATA_SQLSTATE.test(state) ? "permanent" : "transient";
}

/** True for the faults a retry is known to outlive (an unavailable or busy database, a deadlock, a lock or statement timeout); false for one not understood. */
export function isTransientFault(error: unknown): boolean {
  const state = sqlStateOf(error);
  return isDatabaseUnavailable(error) || (!!state && CONTENTION_SQLSTATE.test(state));
}

const IPV4 = /\b\d{1,3}(?:\.\d{1,3}){3}\b/g;
const IPV6 = /\b[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}\b/g;

/**
 * What a failure says, fit to keep and to show an operator: the SQLSTATE and the database's own
 * message (not Prisma's wrapping), on one line, at most 500 characters, without e-mail or IP
 * addresses (a data exception quotes the value it refused).
 */
export function faultText(error: unknown): string {
  const fault = databaseFault(error);
  const cause = (error as Failure | undefined)?.meta?.driverAdapterError?.cause as AdapterCause | undefined;
  const message = cause?.originalMessage ?? (error instanceof Error ? error.message : String(error));
  const text = `${fault?.sqlState ? `SQLSTATE ${fault.sqlState}: ` : ""}${message}`.replace(/\s+/g, " ").trim();
  return redact(text).replace(IPV4, "[ip]").replace(IPV6, "[ip]").slice(0, 500);
}
