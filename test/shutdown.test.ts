// Graceful shutdown of server/main.ts: on SIGTERM it stops accepting, finishes the requests in
// flight, closes the connections of those still unfinished after SHUTDOWN_TIMEOUT_MS, closes the
// database and exits 0.
import { readFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, StopWaiting } from "./support/eventually.ts";
import { type ServerDatabase, type ServerProcess, prepareServerDatabase, startServerProcess } from "./support/server-process.ts";

const LOAD = 16; // concurrent requests in flight at SIGTERM, all on loopback

let database: ServerDatabase;
let server: ServerProcess;

beforeAll(async () => {
  database = await prepareServerDatabase();
});
afterAll(async () => {
  if (server && server.child.exitCode === null) server.child.kill("SIGKILL");
  await database?.close();
});

interface SlowRequest {
  /** Sends the rest of the body. */
  finish(): void;
  /** Status and body, or the error the client saw. */
  outcome: Promise<{ status: number; body: unknown } | { error: string }>;
}

/** POST /v1/datasets whose body arrives in two parts: in flight on the server until `finish()`. */
function slowCreateDataset(name: string): SlowRequest {
  const body = JSON.stringify({ name });
  const req = http.request({
    host: "127.0.0.1",
    port: server.port,
    method: "POST",
    path: `/v1/datasets?email=${encodeURIComponent(database.tenant.admin.email)}`,
    agent: false, // a connection of its own, like separate clients
    headers: { "x-api-key": database.tenant.key, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
  });
  const outcome = new Promise<{ status: number; body: unknown } | { error: string }>((resolve) => {
    req.on("response", (res) => {
      let text = "";
      res.on("data", (chunk) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
    req.on("error", (error) => resolve({ error: error.message }));
  });
  req.write(body.slice(0, 5));
  return { finish: () => req.end(body.slice(5)), outcome };
}

/** GET on a connection of its own (a pooled keep-alive one would be closed by the drain). */
function get(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: "127.0.0.1", port: server.port, path, agent: false }, (res) => {
        let text = "";
        res.on("data", (chunk) => (text += chunk));
        res.on("end", () => resolve(text));
      })
      .on("error", reject);
  });
}

async function inFlight(): Promise<number> {
  return Number(/^http_requests_in_flight (\d+)/m.exec(await get("/metrics"))?.[1]);
}

/**
 * A check: passes once a new connection is refused. A connection that reaches the kernel's
 * backlog just before the listening socket is closed is reset rather than refused: try again
 * then; never is one answered.
 */
async function newConnectionRefused(): Promise<void> {
  const code = await get("/healthz").then(() => "answered", (e: NodeJS.ErrnoException) => e.code);
  if (code === "ECONNRESET") throw new Error("reset, not refused: the listening socket was closing");
  if (code !== "ECONNREFUSED") throw new StopWaiting(`a new connection was ${code}, not refused`);
}

/**
 * Bytes received on the loopback TCP connection from `remotePort` to `localPort` and not yet read
 * by the process that owns it (rx_queue in Linux's /proc/net/tcp and tcp6).
 */
function unreadBytes(localPort: number, remotePort: number): number {
  const hex = (port: number) => port.toString(16).toUpperCase().padStart(4, "0");
  const rows = ["/proc/net/tcp", "/proc/net/tcp6"].flatMap((file) => readFileSync(file, "utf8").trim().split("\n").slice(1));
  const row = rows
    .map((line) => line.trim().split(/\s+/))
    .find(([, local, remote]) => local!.endsWith(`:${hex(localPort)}`) && remote!.endsWith(`:${hex(remotePort)}`));
  if (!row) throw new Error(`no connection ${remotePort} -> ${localPort}`);
  return parseInt(row[4]!.split(":")[1]!, 16);
}

/** The state letter of a process in /proc/<pid>/stat ("T": stopped by a signal). */
const processState = (pid: number) => /^\d+ \(.*\) (\S)/.exec(readFileSync(`/proc/${pid}/stat`, "utf8"))![1];

describe("SIGTERM", () => {
  // one process per describe: the embedded database serves one process at a time
  beforeAll(async () => {
    server = await startServerProcess({ ...database.envFor(0), SHUTDOWN_TIMEOUT_MS: "8000" }); // room for 17 requests on a loaded machine
  });

  it("when requests are in flight, then each is answered, new connections are refused, and the process exits 0", async () => {
    const load = Array.from({ length: LOAD }, (_, i) => slowCreateDataset(`Drain ${i}`));
    const stuck = slowCreateDataset("Never finished");
    // the server has received all of them (the gauge counts partner requests not yet answered)
    await eventually(async () => expect(await inFlight()).toBeGreaterThanOrEqual(LOAD + 1));

    server.child.kill("SIGTERM");
    await eventually(() => server.logged("stopping"));
    await eventually(newConnectionRefused, { intervalMs: 20 });

    for (const request of load) request.finish();
    const outcomes = await Promise.all(load.map((r) => r.outcome));
    expect(outcomes.filter((o) => !("status" in o) || o.status !== 200)).toEqual([]);
    expect(outcomes.every((o) => "body" in o && typeof (o.body as { id: unknown }).id === "string")).toBe(true);

    // the request that never completes is cut off at the shutdown timeout, and the process still ends
    expect(await stuck.outcome).toEqual({ error: expect.any(String) });
    expect(await server.exited).toBe(0);
    expect(server.logs.find((l) => l.msg === "shutdown timeout: closing the connections of unfinished requests")).toMatchObject({ requests: 1 });
    expect(server.logs.at(-1)).toMatchObject({ msg: "stopped" });

    const names = await database.inspect((db) =>
      db.prisma.dataset.findMany({ where: { accountId: database.tenant.accountId, name: { startsWith: "Drain " } } }),
    );
    expect(names).toHaveLength(LOAD);
  });
});

describe("SIGTERM while the event loop is busy", () => {
  const CONNECTIONS = 5;
  const PIPELINED = 4; // requests per connection: 20 in all

  let busy: ServerProcess;
  beforeAll(async () => {
    busy = await startServerProcess({ ...database.envFor(0), SHUTDOWN_TIMEOUT_MS: "10000" });
  });
  afterAll(() => {
    if (busy && busy.child.exitCode === null) busy.child.kill("SIGKILL");
  });

  const request = () =>
    `GET /v1/users?email=${encodeURIComponent(database.tenant.admin.email)} HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: ${database.tenant.key}\r\n\r\n`;

  /** A keep-alive connection and everything the server sent on it. */
  function connection(): Promise<{ socket: net.Socket; received: () => string; closed: Promise<void> }> {
    return new Promise((resolve, reject) => {
      let text = "";
      const socket = net.connect(busy.port, "127.0.0.1", () => resolve({ socket, received: () => text, closed }));
      const closed = new Promise<void>((done) => socket.once("close", () => done()));
      socket.on("data", (chunk) => (text += chunk.toString("latin1")));
      socket.on("error", reject);
    });
  }
  const statuses = (text: string) => [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));

  it("when 20 requests were sent on open keep-alive connections but not yet read, then each is answered, the last on each with Connection: close, and the process exits 0", async () => {
    const connections = await Promise.all(Array.from({ length: CONNECTIONS }, connection));
    // every connection has been accepted and answered once: open and idle
    for (const c of connections) c.socket.write(request());
    await eventually(() => expect(connections.map((c) => statuses(c.received()).length)).toEqual(Array(CONNECTIONS).fill(1)), { intervalMs: 20 });

    // a stopped process is the busiest event loop: the requests wait in the kernel, unread
    busy.child.kill("SIGSTOP");
    await eventually(() => expect(processState(busy.child.pid!)).toBe("T"), { intervalMs: 10 });
    const pipelined = request().repeat(PIPELINED);
    for (const c of connections) c.socket.write(pipelined);
    // every byte has reached the stopped process's side of its connection
    await eventually(() => expect(connections.map((c) => unreadBytes(busy.port, c.socket.localPort!))).toEqual(Array(CONNECTIONS).fill(Buffer.byteLength(pipelined))), {
      intervalMs: 10,
    });
    busy.child.kill("SIGTERM");
    busy.child.kill("SIGCONT");

    await Promise.all(connections.map((c) => c.closed));
    const answered = connections.map((c) => statuses(c.received()).slice(1));
    expect(answered).toEqual(Array.from({ length: CONNECTIONS }, () => Array(PIPELINED).fill(200)));
    for (const c of connections) {
      const responses = c.received().split(/(?=HTTP\/1\.1 \d{3} )/);
      expect(responses.at(-1)).toMatch(/^connection: close\r$/im);
    }
    expect(await busy.exited).toBe(0);
    expect(busy.logs.at(-1)).toMatchObject({ msg: "stopped" });
  });
});

describe("SIGTERM during start-up", () => {
  it("when the signal arrives while the demo account is being seeded, then the seeding finishes, the database closes after it and the process exits 0", async () => {
    const starting = await startServerProcess({ ...database.envFor(0), SEED_DEMO: "1" });
    // the signal goes at "listening": the demo's seeding, the last thing the process starts, is
    // then under way (before the fix the process died of a ReferenceError, or of a closed pool)
    expect(await starting.stop("SIGTERM")).toBe(0);
    expect(starting.logs.at(-1)).toMatchObject({ msg: "stopped" });
    expect(starting.lines.some((l) => l.includes("Demo account ready"))).toBe(true);
    expect(starting.lines.join("\n")).not.toMatch(/ReferenceError|Cannot use a pool after calling end/);
  }, 120_000); // a process start and the demo's seeding: slow on a loaded machine
});
