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
