// What a database error is, read through Prisma's own error class: the PostgreSQL SQLSTATE and
// the constraint it names. Used by the one error translator (server/http/errors.ts) and by
// services whose rules branch on a violation (a retry after a lost race).
import { Prisma } from "../../generated/prisma/client.ts";

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

/** Timeouts and lost connections of the pool (`pg`), and Prisma's names for them. */
const UNAVAILABLE_MESSAGE = /query read timeout|timeout exceeded when trying to connect|connection terminated|connection timeout|unable to start a transaction in the given time/i;
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
