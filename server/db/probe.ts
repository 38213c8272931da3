// The start-up's first look at a PostgreSQL server (DATABASE_URL): one connection and `SELECT 1`,
// and the one line that says what is wrong and what to do. A module of its own, with pg only, so
// that the service (server/main.ts) probes before it loads Prisma and the service layer: on a busy
// machine those take a minute, and a refused port or a missing database is then said at once.
import pg from "pg";
import { type DatabaseConfig, DEFAULT_DATABASE_TIMEOUTS } from "../config.ts";
import { DataDirError } from "./data-dir.ts";
import { DatabaseLockedError } from "./data-dir-lock.ts";

/** How long the start-up probe waits for PostgreSQL at least (a busy server answers slowly). */
const PROBE_MS = 10_000;

export async function probe(url: string, connectMs: number): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: Math.max(connectMs, PROBE_MS) });
  client.on("error", () => {}); // a connection lost after the probe's query: the probe's own error is what counts
  try {
    await client.connect();
    await client.query("SELECT 1");
  } finally {
    await client.end().catch(() => {});
  }
}

/** Where a PostgreSQL URL points, without its password. */
function serverOf(url: string): { where: string; database: string } {
  try {
    const u = new URL(url);
    const host = u.hostname || u.searchParams.get("host") || "localhost";
    return { where: `${host}:${u.port || 5432}`, database: decodeURIComponent(u.pathname.slice(1)) || u.username || "postgres" };
  } catch {
    return { where: "(unparsable DATABASE_URL)", database: "" };
  }
}

/** One line: what failed and what to do about it. */
export function databaseProblem(error: unknown, config: DatabaseConfig): string {
  if (error instanceof DatabaseLockedError) return error.message;
  if (error instanceof DataDirError) return error.message;
  const e = error as { code?: string; message?: string };
  const message = (e.message ?? String(error)).replace(/\s+/g, " ").trim();
  if (!config.url) return `the embedded database in ${config.dataDir} did not start: ${message}. Check DATA_DIR (free disk space, write access), or use PostgreSQL with DATABASE_URL=`;
  const { where, database } = serverOf(config.url);
  switch (e.code) {
    case "3D000":
      return `database "${database}" does not exist on the PostgreSQL server at ${where}: create it (createdb ${database}) or correct DATABASE_URL`;
    case "28P01":
    case "28000":
      return `the PostgreSQL server at ${where} refused the login: correct the user or password in DATABASE_URL`;
    case "ECONNREFUSED":
    case "ENOTFOUND":
    case "EAI_AGAIN":
    case "EHOSTUNREACH":
    case "ETIMEDOUT":
      return `no PostgreSQL server answers at ${where} (${e.code}): start it, correct DATABASE_URL, or unset DATABASE_URL to use the embedded database`;
  }
  if (/timeout/i.test(message)) return `the PostgreSQL server at ${where} did not answer in time: check that it runs and is reachable, or correct DATABASE_URL`;
  return `the PostgreSQL server at ${where} could not be used (${e.code ? `${e.code}: ` : ""}${message.slice(0, 200)}): check DATABASE_URL`;
}

/** The service's early probe: a PostgreSQL server that cannot be used is its one line, and exit 1. */
export async function probeDatabaseOrExit(config: DatabaseConfig): Promise<void> {
  if (!config.url) return;
  try {
    await probe(config.url, (config.timeouts ?? DEFAULT_DATABASE_TIMEOUTS).connectMs);
  } catch (error) {
    console.error(databaseProblem(error, config));
    process.exit(1);
  }
}
