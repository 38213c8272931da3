// The first minutes of a new user: `npm start` stops on SIGTERM (the signal reaches the service,
// not only npm), and a port in use is one clear line before the database starts.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createServer, type Server } from "node:net";
import path from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hermeticEnv } from "./support/config.ts";
import { NPM_START, prepareServerDatabase, SERVICE_COMMAND, type ServerDatabase, startServerProcess } from "./support/server-process.ts";

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
  }, 120_000);
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
    const [command, ...args] = SERVICE_COMMAND;
    const child = spawn(command!, args, {
      cwd: path.resolve(import.meta.dirname, ".."),
      env: hermeticEnv({ PATH: process.env.PATH, HOME: process.env.HOME, PORT: String(port), HOST: "127.0.0.1", SEED_DEMO: "0", ...database.envFor(1) }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    const stdout: string[] = [];
    const stderr: string[] = [];
    createInterface({ input: child.stdout! }).on("line", (line) => stdout.push(line));
    createInterface({ input: child.stderr! }).on("line", (line) => stderr.push(line));
    const [code] = (await once(child, "exit")) as [number | null];
    expect(code).toBe(1);
    expect(stderr).toEqual([`port ${port} on 127.0.0.1 is in use: stop what runs there, or choose another port with PORT=`]);
    expect(stdout.some((line) => line.includes('"msg":"starting"'))).toBe(false);
  }, 60_000);
});
