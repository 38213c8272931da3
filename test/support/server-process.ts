// The service (built: dist/server/main.js) as a child process, the way operators run it: for the tests of shutdown, of
// several instances sharing one rate limit and of a restart during certificate provisioning. Its log lines join the run's e-mail/key check.
// Its environment is hermetic (config.ts hermeticEnv): no DNS query leaves this machine.
import { expect } from "vitest";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { type Database, openDatabase } from "../../server/db/database.ts";
import { createServices } from "../../server/services/index.ts";
import { recordLogLine } from "./api.ts";
import { createTestDatabase, migratedDataDir } from "./database.ts";
import { eventually, StopWaiting } from "./eventually.ts";
import { createTenant, type Tenant } from "./tenants.ts";
import { hermeticEnv, testConfig } from "./config.ts";

const root = path.resolve(import.meta.dirname, "../..");

/**
 * The child's exit code once it exited and what it wrote was read to the end: "exit" may come
 * before the last lines of its pipes (a grandchild that holds them: at most 2 s more).
 */
export async function exitedWithOutput(child: ChildProcess): Promise<number | null> {
  const [code] = child.exitCode !== null || child.signalCode !== null ? [child.exitCode] : ((await once(child, "exit")) as [number | null]);
  const ends = [child.stdout, child.stderr].filter((s) => s && !s.readableEnded).map((s) => once(s!, "end"));
  await Promise.race([Promise.all(ends), sleep(2000)]);
  return code;
}

export interface ServerProcess {
  child: ChildProcess;
  port: number;
  /** Every stdout JSON line so far, parsed (the logger writes JSON lines). */
  logs: Record<string, unknown>[];
  /** Every line so far as printed, stdout and stderr. */
  lines: string[];
  /** The first log line so far whose `msg` is `msg`, else throws: a check for `eventually(() => server.logged(msg))`. */
  logged(msg: string): Record<string, unknown>;
  /** The exit code. */
  exited: Promise<number | null>;
  /** Sends the signal (unless it has exited) and resolves with the exit code. */
  stop(signal: NodeJS.Signals): Promise<number | null>;
}

/**
 * A program of the build (dist/, `npm run build`), as `npm start` and `npm run admin` run it; the
 * process and external tiers build it once per run (test/support/build.ts).
 */
export const builtProgram = (module: "server/main" | "scripts/admin" | "scripts/ingest"): string[] => [
  process.execPath,
  "--enable-source-maps",
  path.join(root, "dist", `${module}.js`),
];

/** How the service is started: as node runs it, or as a user does (`npm start`). */
export const SERVICE_COMMAND = builtProgram("server/main");
export const NPM_START = ["npm", "start", "--silent"];

/** How long a service process may take to listen: seconds on a quiet machine, over 100 s with two suites at once on 2 cores. */
export const PROCESS_START_MS = 240_000;
/** The bound of a test or hook that starts `starts` service processes in turn and then works for up to `restMs`. */
export const processTestBound = (starts: number, restMs = 60_000): number => starts * PROCESS_START_MS + restMs;

export async function startServerProcess(env: Record<string, string>, [command, ...args] = SERVICE_COMMAND): Promise<ServerProcess> {
  const child = spawn(command!, args, {
    cwd: root,
    env: hermeticEnv({
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      PORT: "0",
      HOST: "127.0.0.1",
      SEED_DEMO: "0",
      LOG_LEVEL: "info",
      ...env,
    }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  const logs: Record<string, unknown>[] = [];
  const lines: string[] = [];
  createInterface({ input: child.stdout! }).on("line", (line) => {
    lines.push(line);
    // a console message (the demo account's key and addresses, printed for whoever started it), not a log line
    if (!line.startsWith("{")) return;
    recordLogLine(line);
    const parsed = JSON.parse(line) as Record<string, unknown>;
    logs.push(parsed);
  });
  const stderr: string[] = [];
  createInterface({ input: child.stderr! }).on("line", (line) => {
    recordLogLine(line);
    lines.push(line);
    stderr.push(line);
  });
  const exited = exitedWithOutput(child);
  const logged = (msg: string) => {
    const line = logs.find((l) => l.msg === msg);
    if (!line) throw new Error(`no "${msg}" log line yet`);
    return line;
  };
  const listening = await eventually(
    () => {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new StopWaiting(`server/main.ts exited with ${child.exitCode ?? child.signalCode} before listening:\n${stderr.join("\n")}`);
      }
      return logged("listening");
    },
    { timeoutMs: PROCESS_START_MS, intervalMs: 50, message: "server/main.ts listening" },
  ).catch(async (error: unknown) => {
    // no caller gets a handle to stop it: it is stopped here
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited;
    throw error;
  });
  const stop = (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    return exited;
  };
  return { child, port: listening.port as number, logs, lines, logged, exited, stop };
}

/**
 * A migrated database with one tenant, for server processes: a fresh embedded data directory
 * (copied for each further instance, so that all hold the same account and key), or one new
 * database on the PostgreSQL server named by TEST_DATABASE_URL, shared by all instances.
 */
export interface ServerDatabase {
  tenant: Tenant;
  /** The environment that points instance `n` (0, 1, ...) at its database. */
  envFor(instance: number): Record<string, string>;
  /** Opens the database for checking what the processes left (after they exited, for PGlite). */
  inspect<T>(read: (db: Database) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export async function prepareServerDatabase(): Promise<ServerDatabase> {
  if (process.env.TEST_DATABASE_URL) {
    const db = await createTestDatabase();
    const tenant = await createTenant(createServices(db.prisma, { config: testConfig() }), "Process Co");
    return { tenant, envFor: () => ({ DATABASE_URL: db.url! }), inspect: (read) => read(db), close: () => db.close() };
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), "server-process-"));
  const dataDir = (instance: number) => path.join(dir, `db-${instance}`);
  const db = await openDatabase({ dataDir: await migratedDataDir(dataDir(0)) });
  await db.migrate();
  const tenant = await createTenant(createServices(db.prisma, { config: testConfig() }), "Process Co");
  await db.close();
  return {
    tenant,
    envFor(instance) {
      if (instance > 0) cpSync(dataDir(0), dataDir(instance), { recursive: true, force: false, errorOnExist: false });
      return { DATA_DIR: dataDir(instance) };
    },
    async inspect(read) {
      const again = await openDatabase({ dataDir: dataDir(0) });
      try {
        return await read(again);
      } finally {
        await again.close();
      }
    },
    close: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * The answers within a rate limit: each 200, or 503 with Retry-After (the database's bounded wait
 * on a loaded machine), which counts against the limit as any answer does; at least `answered` 200s.
 */
export function expectAnsweredWithinLimit(counted: readonly { status: number; retryAfter?: string | null }[], answered: number): void {
  const refused = counted.filter((a) => a.status !== 200);
  expect(refused.map((a) => [a.status, Number(a.retryAfter) > 0])).toEqual(refused.map(() => [503, true]));
  expect(counted.length - refused.length).toBeGreaterThanOrEqual(answered);
}

/**
 * `fetch`, repeated after a 503 with Retry-After for up to `boundMs`, as a partner's client does: a
 * service process on a loaded machine answers so when its database is slow to answer (nothing was
 * stored). Any other answer, or a 503 past the bound, is returned as it came.
 */
export async function fetchThrough503(url: string, init: RequestInit = {}, boundMs = 60_000): Promise<Response> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    const res = await fetch(url, init);
    const retryAfterSeconds = Number(res.headers.get("retry-after"));
    if (res.status !== 503 || !(retryAfterSeconds > 0) || Date.now() >= deadline) return res;
    await res.arrayBuffer();
    await new Promise((resolve) => setTimeout(resolve, Math.min(retryAfterSeconds, 5) * 1000));
  }
}
