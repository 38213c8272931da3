// One entry point to the database: the embedded PGlite by default, PostgreSQL when a URL is given.
// An embedded data directory runs in a process of its own (server/db/embedded-process.ts), served
// over the PostgreSQL protocol on a Unix socket: this process talks to it with pg, as to
// PostgreSQL, and WebAssembly PostgreSQL never runs on this event loop. Only the in-memory
// database (tests) runs in this process.
import { fork } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import type { SqlMigrationAwareDriverAdapterFactory } from "@prisma/driver-adapter-utils";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { PrismaClient } from "../../generated/prisma/client.ts";
import { type DatabaseConfig, type DatabaseTimeouts, DEFAULT_DATABASE_TIMEOUTS } from "../config.ts";
import { ensureWritable } from "./data-dir.ts";
import { DatabaseLockedError, lockedMessage, settledLockOwner } from "./data-dir-lock.ts";
import type { EmbeddedMessage } from "./embedded-process.ts";
import { SOCKET_PORT } from "./embedded-server.ts";
import { applyMigrations } from "./migrations.ts";
import { databaseProblem, probe } from "./probe.ts";
import { programModule } from "../paths.ts";

export { DatabaseLockedError, databaseProblem };

export type Db = PrismaClient;

/** A parameterised statement: `$1`-style placeholders in `text` (what Prisma.sql`...` builds). */
export interface Statement {
  text: string;
  values: unknown[];
}
/** Runs a statement on the driver directly, without Prisma: for the hot path (the paid look-up). */
export type Sql = <Row>(statement: Statement) => Promise<Row[]>;

export interface Database {
  prisma: PrismaClient;
  sql: Sql;
  kind: "pglite" | "postgres";
  /** Applies pending migrations; returns their names. */
  migrate(): Promise<string[]>;
  /** True when the database answers a query. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

export interface OpenOptions {
  /**
   * Embedded database already served by another process (a running `npm start`): connect to it
   * instead of refusing (the operator CLI, cluster workers). Default: refuse.
   */
  share?: boolean;
  /** Connections of the pool (default 20 on PostgreSQL, 10 on the embedded database). */
  connections?: number;
  /** In-memory only (tests): start from this data-directory snapshot (`dumpDataDir`) instead of an empty database. */
  snapshot?: Blob;
}

/** How long the embedded database's process may take to start (a large data directory, first migrations). */
const EMBEDDED_START_MS = 180_000;
/** How long it may take to close cleanly once asked. */
const EMBEDDED_CLOSE_MS = 60_000;
const embeddedProcess = programModule(import.meta.url, "./embedded-process");

/**
 * The pool's bounds (README, "A stopped database"): waiting for a connection, a statement on the
 * client (`query_timeout`: the answer to a frozen server), the same on PostgreSQL
 * (`statement_timeout`), and a transaction left idle by a stalled client. A request that
 * needs the database thus fails within `connectMs + queryMs` (503), and the pool drops the
 * connection that timed out, so that it recovers by itself once the database answers again.
 */
function poolBounds({ connectMs, queryMs }: DatabaseTimeouts, server: boolean): pg.PoolConfig {
  return {
    connectionTimeoutMillis: connectMs,
    query_timeout: queryMs,
    keepAlive: true,
    // server-side settings go in the start-up packet: only for PostgreSQL itself
    ...(server ? { statement_timeout: queryMs, idle_in_transaction_session_timeout: 2 * queryMs + connectMs } : {}),
  };
}

/** How long /readyz waits for the database's answer. */
export const PING_TIMEOUT_MS = 1_500;

export async function openDatabase(config: DatabaseConfig, options: OpenOptions = {}): Promise<Database> {
  const timeouts = config.timeouts ?? DEFAULT_DATABASE_TIMEOUTS;
  if (config.url) {
    const url = config.url;
    // The schema engine holds a session advisory lock until its connection closes: give it
    // one connection of its own and close it afterwards.
    const migrate = async () => {
      const pool = new pg.Pool({ connectionString: url, max: 1 });
      try {
        return await applyMigrations(new PrismaPg(pool));
      } finally {
        await pool.end();
      }
    };
    const pool = new pg.Pool({ connectionString: url, max: options.connections ?? 20, ...poolBounds(timeouts, true) });
    return onPool("postgres", pool, timeouts, migrate, async () => {});
  }
  if (config.dataDir) return openEmbedded(path.resolve(config.dataDir), options, timeouts);
  const pglite = new PGlite(options.snapshot ? { loadDataDir: options.snapshot } : {});
  await pglite.waitReady;
  const adapter = new PrismaPGlite(pglite);
  const sql: Sql = async <Row>(s: Statement) => (await pglite.query<Row>(s.text, s.values)).rows;
  return wrap("pglite", adapter, sql, timeouts, () => applyMigrations(adapter), () => pglite.close());
}

/** Prisma and the hot path's raw statements share one pg pool. */
function onPool(kind: Database["kind"], pool: pg.Pool, timeouts: DatabaseTimeouts, migrate: () => Promise<string[]>, closeDriver: () => Promise<void>): Database {
  const sql: Sql = kind === "postgres" ? preparedStatements(pool) : async <Row>(s: Statement) => (await pool.query(s.text, s.values)).rows as Row[];
  return wrap(kind, new PrismaPg(pool, { disposeExternalPool: true }), sql, timeouts, migrate, closeDriver);
}

/** At most this many statement texts are prepared per connection; others run unnamed. */
const PREPARED_STATEMENTS = 64;

/**
 * The hot path's statements as named prepared statements: each connection parses and plans a
 * statement's text once, not on every request (this halved PostgreSQL's CPU per paid look-up in
 * bench:lookup). PostgreSQL only: the embedded database's connections share one session, where a
 * second connection preparing the same name would fail.
 */
function preparedStatements(pool: pg.Pool): Sql {
  const names = new Map<string, string>();
  const nameOf = (text: string) => {
    let name = names.get(text);
    if (!name && names.size < PREPARED_STATEMENTS) names.set(text, (name = `hot_${names.size}`));
    return name;
  };
  return async <Row>(s: Statement) => (await pool.query({ name: nameOf(s.text), text: s.text, values: s.values })).rows as Row[];
}

/** pg over the Unix socket of an embedded database's process. */
function socketPool(socketDir: string, connections: number, timeouts: DatabaseTimeouts): pg.Pool {
  return new pg.Pool({ host: socketDir, port: SOCKET_PORT, user: "postgres", database: "postgres", max: connections, ...poolBounds(timeouts, false) });
}

/** Connects to the process that serves `dataDir`, or starts one (which applies the pending migrations). */
async function openEmbedded(dataDir: string, options: OpenOptions, timeouts: DatabaseTimeouts): Promise<Database> {
  const connections = options.connections ?? 10;
  const owner = await settledLockOwner(dataDir);
  if (owner?.socketDir && options.share) {
    // migrations are the owner's business: it applied them when it started
    return onPool("pglite", socketPool(owner.socketDir, connections, timeouts), timeouts, async () => [], async () => {});
  }
  if (owner) throw new DatabaseLockedError(lockedMessage(dataDir, owner));
  const child = fork(embeddedProcess.file, [dataDir], { execArgv: embeddedProcess.execArgv, stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const message = await Promise.race([
    once(child, "message").then(([m]) => m as EmbeddedMessage),
    once(child, "exit").then(([code]): EmbeddedMessage => ({ type: "failed", locked: false, message: `exited with ${code}` })),
    new Promise<EmbeddedMessage>((resolve) =>
      setTimeout(() => resolve({ type: "failed", locked: false, message: "did not start in time" }), EMBEDDED_START_MS).unref(),
    ),
  ]);
  if (message.type === "failed") {
    child.kill("SIGKILL");
    if (message.locked) throw new DatabaseLockedError(message.message);
    throw new Error(`The embedded database's process failed: ${message.message}`);
  }
  let pending = message.applied;
  const migrate = async () => {
    const applied = pending;
    pending = [];
    return applied;
  };
  return onPool("pglite", socketPool(message.socketDir, connections, timeouts), timeouts, migrate, async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, "exit");
    child.disconnect(); // it closes PGlite and releases the lock, then exits
    const timer = setTimeout(() => child.kill("SIGKILL"), EMBEDDED_CLOSE_MS);
    await exited;
    clearTimeout(timer);
  });
}

/**
 * For commands and the service: a database that cannot be opened ends the process with one line
 * that says what to do (exit 1), not a stack. On PostgreSQL the server is asked once here, so
 * that an unreachable server, a missing database or a refused login is named before migrations
 * (Prisma's schema engine would report it as a WebAssembly stack).
 */
export async function openDatabaseOrExit(config: DatabaseConfig, options?: OpenOptions): Promise<Database> {
  try {
    return await openDatabaseChecked(config, options);
  } catch (error) {
    console.error((error as Error).message);
    process.exit(1);
  }
}

/** openDatabase, failing with an Error whose message is that one line (the admin CLI reports it its own way). */
export async function openDatabaseChecked(config: DatabaseConfig, options?: OpenOptions): Promise<Database> {
  try {
    if (config.url) await probe(config.url, (config.timeouts ?? DEFAULT_DATABASE_TIMEOUTS).connectMs);
    else if (config.dataDir) ensureWritable(path.resolve(config.dataDir));
    return await openDatabase(config, options);
  } catch (error) {
    throw new Error(databaseProblem(error, config), { cause: error });
  }
}

function wrap(
  kind: Database["kind"],
  adapter: SqlMigrationAwareDriverAdapterFactory,
  sql: Sql,
  { connectMs, queryMs }: DatabaseTimeouts,
  migrate: () => Promise<string[]>,
  closeDriver: () => Promise<void>,
): Database {
  // An interactive transaction waits for its connection as long as any statement does, and
  // then has the statement bound to finish (Prisma's own defaults, 2 s and 5 s, are the
  // configuration's defaults too).
  const prisma = new PrismaClient({ adapter, transactionOptions: { maxWait: connectMs, timeout: queryMs } });
  return {
    prisma,
    sql,
    kind,
    migrate,
    // bounded: a frozen database makes /readyz answer 503 quickly, not hang
    ping: () => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), PING_TIMEOUT_MS)));
      const answered = prisma.$queryRaw`SELECT 1`.then(() => true, () => false);
      return Promise.race([answered, late]).finally(() => clearTimeout(timer));
    },
    close: async () => {
      await prisma.$disconnect();
      await closeDriver();
    },
  };
}

