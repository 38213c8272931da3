// The first minutes of a new user: `npm start` stops on SIGTERM (the signal reaches the service,
// not only npm); a port in use, a database that cannot be used and a bad setting are each one
// clear line and exit 1; a first start answers /healthz and /docs while the database is created,
// says in /readyz what is missing, and logs no error line on the way or during the README's tour.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import Ajv from "ajv";
import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { readiness, type StartupProgress, startingApp } from "../server/http/starting.ts";
import { hermeticEnv } from "./support/config.ts";
import { eventually, StopWaiting } from "./support/eventually.ts";
import { NPM_START, prepareServerDatabase, SERVICE_COMMAND, type ServerDatabase, processTestBound, startServerProcess, exitedWithOutput } from "./support/server-process.ts";

let database: ServerDatabase;
beforeAll(async () => {
  database = await prepareServerDatabase();
});
afterAll(async () => {
  await database?.close();
});

describe("npm start", () => {
  it("when npm start gets SIGTERM, then the service drains, logs stopped and npm exits 0", async () => {
    const service = await startServerProcess(database.envFor(0), NPM_START);
    const code = await service.stop("SIGTERM");
    expect(service.logs.map((line) => line.msg)).toContain("stopped");
    expect(code).toBe(0);
  }, processTestBound(1));
});

describe("a port in use", () => {
  let taken: Server;
  beforeAll(async () => {
    taken = createServer().listen(0, "127.0.0.1");
    await once(taken, "listening");
  });
  afterAll(() => new Promise<void>((resolve) => taken.close(() => resolve())));

  it("when the port is taken, then one line names it and the service exits 1 before it opens the database", async () => {
    const port = (taken.address() as { port: number }).port;
    const { code, stdout, stderr } = await runUntilExit({ PORT: String(port), ...database.envFor(1) });
    expect(code).toBe(1);
    expect(stderr).toEqual([`port ${port} on 127.0.0.1 is in use: stop what runs there, or choose another port with PORT=`]);
    expect(stdout.some((line) => line.includes('"msg":"starting"'))).toBe(false);
  }, processTestBound(1)); // a service process starts (and exits early): slow on a loaded machine
});

/** server/main.ts with `env` until it exits: its exit code and its output's lines. */
async function runUntilExit(env: Record<string, string>): Promise<{ code: number | null; stdout: string[]; stderr: string[] }> {
  const [command, ...args] = SERVICE_COMMAND;
  const child = spawn(command!, args, {
    cwd: path.resolve(import.meta.dirname, ".."),
    env: hermeticEnv({ PATH: process.env.PATH, HOME: process.env.HOME, PORT: "0", HOST: "127.0.0.1", SEED_DEMO: "0", ...env }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  const stdout: string[] = [];
  const stderr: string[] = [];
  createInterface({ input: child.stdout! }).on("line", (line) => stdout.push(line));
  createInterface({ input: child.stderr! }).on("line", (line) => stderr.push(line));
  return { code: await exitedWithOutput(child), stdout, stderr };
}

describe("start-up failures", () => {
  const postgres = process.env.TEST_DATABASE_URL;

  const cases: [string, Record<string, string>, RegExp][] = [
    [
      "an unreachable PostgreSQL server",
      { DATABASE_URL: "postgresql://postgres@127.0.0.1:1/x" },
      /^no PostgreSQL server answers at 127\.0\.0\.1:1 \(ECONNREFUSED\): start it, correct DATABASE_URL, or unset DATABASE_URL to use the embedded database$/,
    ],
    ["a DATABASE_URL that is not a URL", { DATABASE_URL: "not-a-url" }, /^configuration error: DATABASE_URL must be a postgresql:\/\/ URL .*or unset for the embedded database$/],
    ["a setting that is not a number", { RATE_LIMIT_REQUESTS: "many" }, /^configuration error: RATE_LIMIT_REQUESTS .+$/],
    // under a file (tests may run as root, whom permissions do not stop)
    ["a DATA_DIR that cannot be written", { DATA_DIR: "/dev/null/pglite" }, /^DATA_DIR \/dev\/null\/pglite cannot be written \(ENOTDIR\): give this user write access to it, or choose another directory with DATA_DIR=$/],
  ];
  if (postgres) {
    const missing = new URL(postgres);
    missing.pathname = "/nonexistent_db";
    cases.push([
      "a database that does not exist on the server",
      { DATABASE_URL: missing.toString() },
      /^database "nonexistent_db" does not exist on the PostgreSQL server at .+: create it \(createdb nonexistent_db\) or correct DATABASE_URL$/,
    ]);
  }

  it.each(cases)("when the service starts with %s, then one line says what to do, no stack trace, and it exits 1", async (_what, env, line) => {
    const { code, stdout, stderr } = await runUntilExit(env);
    expect(code).toBe(1);
    expect(stderr).toHaveLength(1);
    expect(stderr[0]).toMatch(line);
    // what reached stdout are log lines (JSON), none of them a failure
    expect(stdout.filter((l) => !l.startsWith("{") || /"level":"(error|fatal)"/.test(l))).toEqual([]);
  }, processTestBound(1));
});

describe("startingApp", () => {
  const operator = parse(readFileSync(path.resolve(import.meta.dirname, "../spec/operator.yaml"), "utf8")) as { components: { schemas: Record<string, object> } };
  const validReadiness = new Ajv({ strict: false }).compile(operator.components.schemas.Readiness!);
  const progress: StartupProgress = { database: false, ipData: false, demo: false, step: "opening the database" };
  const app = startingApp(progress);

  it("when the service is still starting, then /healthz answers 200 and /docs the API reference", async () => {
    expect((await supertest(app).get("/healthz")).body).toEqual({ status: "ok" });
    const docs = await supertest(app).get("/docs");
    expect(docs.status).toBe(200);
    expect(docs.text).toContain("<html");
  });

  it("when the service is still starting, then /readyz answers 503 with what is missing and what it does, as spec/operator.yaml describes", async () => {
    const res = await supertest(app).get("/readyz");
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ status: "unavailable", checks: { database: false, ipData: false, demo: false }, starting: "opening the database" });
    expect(validReadiness(res.body), JSON.stringify(validReadiness.errors)).toBe(true);
  });

  it("when a partner request arrives before the API is ready, then 503 with Retry-After saying the service is starting", async () => {
    const res = await supertest(app).get("/v1/users?email=a%40b.example").set("x-api-key", "k");
    expect(res.status).toBe(503);
    expect(res.headers["retry-after"]).toBe("5");
    expect(res.body).toEqual({ error: "service_unavailable", message: "The service is starting (opening the database); retry after the Retry-After seconds" });
  });

  it("when every part is done, then readiness is ready without a starting text, and valid", () => {
    const { ready, body } = readiness(true, { database: true, ipData: true, demo: true, step: "done" });
    expect(ready).toBe(true);
    expect(body).toEqual({ status: "ready", checks: { database: true, ipData: true, demo: true } });
    expect(validReadiness(body)).toBe(true);
  });
});

describe("a first start on a fresh embedded database", () => {
  let dir: string;
  let child: ChildProcess | undefined;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "first-start-fresh-"));
  });
  afterAll(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = once(child, "exit");
      child.kill("SIGTERM");
      await exited;
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("when it starts, then /healthz answers before the database is ready, /readyz says what is missing, and the README's tour logs no error line", async () => {
    const [command, ...args] = SERVICE_COMMAND;
    child = spawn(command!, args, {
      cwd: path.resolve(import.meta.dirname, ".."),
      env: hermeticEnv({ PATH: process.env.PATH, HOME: process.env.HOME, PORT: "0", HOST: "127.0.0.1", SEED_DEMO: "1", DATA_DIR: path.join(dir, "pglite"), MAIL_DIR: path.join(dir, "mail") }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    const lines: string[] = [];
    const logs: Record<string, unknown>[] = [];
    createInterface({ input: child.stdout! }).on("line", (line) => {
      lines.push(line);
      if (line.startsWith("{")) logs.push(JSON.parse(line) as Record<string, unknown>);
    });
    createInterface({ input: child.stderr! }).on("line", (line) => lines.push(line));
    const logged = (msg: string) => logs.find((l) => l.msg === msg);

    const starting = await eventually(() => logged("starting") ?? fail("no starting line yet"), { timeoutMs: 60_000, intervalMs: 50, message: "the starting line" });
    const base = `http://127.0.0.1:${starting.port as number}`;
    const health = await fetch(`${base}/healthz`);
    const listeningAtFirstAnswer = !!logged("listening");
    expect(health.status).toBe(200);
    // a fresh database is created and migrated: many seconds after the port answers
    expect(listeningAtFirstAnswer).toBe(false);
    const early = (await (await fetch(`${base}/readyz`)).json()) as { status: string; checks: Record<string, boolean>; starting?: string };
    expect(early.status).toBe("unavailable");
    expect(early.checks.demo).toBe(false);
    expect(typeof early.starting).toBe("string");

    // ready: database, IP data and demo
    await eventually(
      async () => {
        // a process that stopped will not get ready: say how it ended and what it printed last
        const ended = child!.exitCode ?? child!.signalCode;
        if (ended !== null) throw new StopWaiting(`the service ended (${ended}) before it was ready; its last lines:\n${lines.slice(-15).join("\n")}`);
        const res = await fetch(`${base}/readyz`);
        if (res.status !== 200) throw new Error(`readyz ${res.status}`);
      },
      { timeoutMs: 240_000, intervalMs: 250, message: "ready" },
    );
    const exported = lines.find((line) => line.trim().startsWith("export B="))!;
    const vars = Object.fromEntries(exported.trim().slice("export ".length).split(" ").map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)]));
    const key = { "x-api-key": vars.KEY! };
    const admin = vars.A!.slice("email=".length);
    // a little of the README's tour: the users, a dataset's leads, the demo website, a paid look-up
    expect((await fetch(`${base}/v1/users?email=${encodeURIComponent(admin)}`, { headers: key })).status).toBe(200);
    expect((await fetch(`${base}/v1/user-datasets?accountId=${vars.ACC}&email=${encodeURIComponent(admin)}`, { headers: key })).status).toBe(200);
    expect((await fetch(`${base}/v1/leads?email=${encodeURIComponent(admin)}&datasetId=${vars.DS}&limit=3`, { headers: key })).status).toBe(200);
    expect((await fetch(`${base}/demo?dataset=${vars.DS}`)).status).toBe(200);
    const lookUp = await fetch(`${base}/v1/email-lookup`, {
      method: "POST",
      headers: { ...key, "content-type": "application/json" },
      body: JSON.stringify({ email: vars.CONTACT, lastName: vars.LAST }),
    });
    expect(lookUp.status).toBe(200);
    // the line to paste is printed again below the request logs that scrolled the banner away
    await eventually(() => expect(lines.filter((line) => line.trim() === exported.trim())).toHaveLength(2), { timeoutMs: 30_000, message: "the banner's reminder" });
    const requestLogs = lines.flatMap((line, index) => (line.includes('"msg":"request"') ? [index] : []));
    expect(lines.lastIndexOf(exported)).toBeGreaterThan(requestLogs[0]!);

    const exited = exitedWithOutput(child);
    child.kill("SIGTERM");
    const code = await exited;
    expect(code).toBe(0);
    expect(logs.filter((l) => l.level === "error" || l.level === "fatal")).toEqual([]);
    expect(lines.filter((line) => /^\s+at /.test(line))).toEqual([]);
  }, 360_000);
});

function fail(message: string): never {
  throw new Error(message);
}

/** Processes (ours to read) whose environment mentions `text`: the service and every process it started. */
function processesWithEnvironment(text: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      if (cmdline && readFileSync(`/proc/${pid}/environ`, "utf8").includes(text)) found.push(pid);
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

describe.skipIf(process.platform !== "linux")("a signal during a first start", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "first-start-signal-"));
  });
  afterAll(() => {
    if (!dir) return;
    for (const pid of processesWithEnvironment(dir)) process.kill(pid, "SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("when SIGTERM arrives while the database is created and the IP data prepared, then the service exits 143 at once and its database's and IP data's processes end too", async () => {
    const [command, ...args] = SERVICE_COMMAND;
    const child = spawn(command!, args, {
      cwd: path.resolve(import.meta.dirname, ".."),
      env: hermeticEnv({
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        PORT: "0",
        HOST: "127.0.0.1",
        DATA_DIR: path.join(dir, "pglite"),
        IP_DATA_CACHE_DIR: path.join(dir, "ip-data"),
      }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    const msgs: string[] = [];
    createInterface({ input: child.stdout! }).on("line", (line) => line.startsWith("{") && msgs.push((JSON.parse(line) as { msg: string }).msg));
    await eventually(() => expect(msgs).toContain("preparing the IP-to-network data (once per data version: 10 to 30 s, beside the database's start)"), {
      timeoutMs: 60_000,
      intervalMs: 50,
    });
    expect(msgs).not.toContain("database ready");
    const exited = exitedWithOutput(child);
    child.kill("SIGTERM");
    const code = await exited;
    expect(code).toBe(143);
    expect(msgs).toContain("stopped before the start finished");
    // the database's process finishes the step in hand (creating the database, a migration), then closes
    await eventually(() => expect(processesWithEnvironment(dir)).toEqual([]), { timeoutMs: 120_000, intervalMs: 250, message: "the started processes ending" });
  }, 240_000);
});
