// Graceful shutdown of server/main.ts: on SIGTERM it stops accepting, finishes the requests in
// flight, closes the connections of those still unfinished after SHUTDOWN_TIMEOUT_MS, closes the
// database and exits 0.
import { readFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { eventually } from "./support/eventually.ts";
import { type ServerDatabase, type ServerProcess, prepareServerDatabase, processTestBound, startServerProcess } from "./support/server-process.ts";

/**
 * What shutdown must answer is decided here, not by a loaded machine's database: a request waits
 * for a pooled connection and a statement far longer than the defaults (2 s and 5 s), after which
 * the service would answer 503 (tested in database-faults.test.ts), not reset the connection.
 */
const PATIENT_DATABASE = { DATABASE_CONNECT_TIMEOUT_MS: "30000", DATABASE_QUERY_TIMEOUT_MS: "30000" };

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

/** How a new connection fares: "answered", or the error code of the attempt. */
function newConnection(): Promise<string> {
  return get("/healthz").then(
    () => "answered",
    (e: NodeJS.ErrnoException) => e.code ?? e.message,
  );
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

/** SIGSTOP, once the process is stopped: the busiest event loop, reading nothing. */
async function stopProcess(process: ServerProcess): Promise<void> {
  process.child.kill("SIGSTOP");
  await eventually(() => expect(processState(process.child.pid!)).toBe("T"), { intervalMs: 10 });
}

/** Once every byte of `sent` has reached the process's side of each connection, unread. */
async function allUnread(process: ServerProcess, connections: RawConnection[], sent: string): Promise<void> {
  await eventually(() => expect(connections.map((c) => unreadBytes(process.port, c.socket.localPort!))).toEqual(connections.map(() => Buffer.byteLength(sent))), {
    intervalMs: 10,
  });
}

/**
 * A shutdown bound no loaded machine reaches while requests are still being worked on: the tests
 * that expect every request answered do not depend on how fast the database is today. The
 * process still exits as soon as the last one is answered.
 */
const PATIENT_SHUTDOWN = { SHUTDOWN_TIMEOUT_MS: "120000" };

describe("SIGTERM", () => {
  afterEach(() => {
    if (server && server.child.exitCode === null) server.child.kill("SIGKILL");
  });

  it("when requests are in flight, then each is answered, new connections are refused, and the process exits 0", async () => {
    server = await startServerProcess({ ...database.envFor(0), ...PATIENT_DATABASE, ...PATIENT_SHUTDOWN });
    const load = Array.from({ length: LOAD }, (_, i) => slowCreateDataset(`Drain ${i}`));
    // the server has received all of them (the gauge counts partner requests not yet answered)
    await eventually(async () => expect(await inFlight()).toBeGreaterThanOrEqual(LOAD));

    server.child.kill("SIGTERM");
    // connections queued in the kernel before the listener closes are still answered: from this line on, none is
    await eventually(() => server.logged("stopped accepting"));
    expect(await newConnection()).toBe("ECONNREFUSED");

    for (const request of load) request.finish();
    const outcomes = await Promise.all(load.map((r) => r.outcome));
    expect(outcomes.filter((o) => !("status" in o) || o.status !== 200)).toEqual([]);
    expect(outcomes.every((o) => "body" in o && typeof (o.body as { id: unknown }).id === "string")).toBe(true);
    expect(await server.exited).toBe(0);
    expect(server.logs.at(-1)).toMatchObject({ msg: "stopped" });

    const names = await database.inspect((db) =>
      db.prisma.dataset.findMany({ where: { accountId: database.tenant.accountId, name: { startsWith: "Drain " } } }),
    );
    expect(names).toHaveLength(LOAD);
  }, processTestBound(1, 120_000)); // a process start, then 16 requests on the embedded database of a loaded machine

  it("when a request never completes, then its connection is closed at the shutdown timeout and the process exits 0", async () => {
    // nothing else is in flight: the only wait is the unfinished request's, cut at the bound
    server = await startServerProcess({ ...database.envFor(0), ...PATIENT_DATABASE, SHUTDOWN_TIMEOUT_MS: "1500" });
    const stuck = slowCreateDataset("Never finished");
    await eventually(async () => expect(await inFlight()).toBeGreaterThanOrEqual(1));

    server.child.kill("SIGTERM");
    expect(await stuck.outcome).toEqual({ error: expect.any(String) });
    expect(await server.exited).toBe(0);
    expect(server.logs.find((l) => l.msg === "shutdown timeout: closing the connections of unfinished requests")).toMatchObject({ requests: 1 });
    expect(server.logs.at(-1)).toMatchObject({ msg: "stopped" });
  }, processTestBound(1));
});

/** A partner request as raw HTTP/1.1, to pipeline several on one connection. */
const rawRequest = () =>
  `GET /v1/users?email=${encodeURIComponent(database.tenant.admin.email)} HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: ${database.tenant.key}\r\n\r\n`;
const statuses = (text: string) => [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));

interface RawConnection {
  socket: net.Socket;
  /** Everything the server sent so far. */
  received(): string;
  /** Resolves when the connection has closed (however it closed). */
  closed: Promise<void>;
}

/** A connection and what the server sends on it; `onConnect` writes as soon as the kernel completed the handshake. */
function rawConnection(port: number, onConnect?: (socket: net.Socket) => void): Promise<RawConnection> {
  return new Promise((resolve, reject) => {
    let text = "";
    const socket = net.connect(port, "127.0.0.1", () => {
      onConnect?.(socket);
      resolve({ socket, received: () => text, closed });
    });
    const closed = new Promise<void>((done) => socket.once("close", () => done()));
    socket.on("data", (chunk) => (text += chunk.toString("latin1")));
    socket.on("error", (error) => (text += `\n[${(error as NodeJS.ErrnoException).code}]`));
    socket.once("error", reject);
  });
}

/** Each connection answered `expected` times with 200, the last answer saying `Connection: close`. */
function expectAnsweredAndClosed(connections: RawConnection[], expected: number, skip = 0): void {
  expect(connections.map((c) => statuses(c.received()).slice(skip))).toEqual(connections.map(() => Array(expected).fill(200)));
  for (const c of connections) expect(c.received().split(/(?=HTTP\/1\.1 \d{3} )/).at(-1)).toMatch(/^connection: close\r$/im);
}

describe("SIGTERM while the event loop is busy", () => {
  const CONNECTIONS = 5;
  const PIPELINED = 4; // requests per connection: 20 in all

  let busy: ServerProcess;
  beforeEach(async () => {
    busy = await startServerProcess({ ...database.envFor(0), ...PATIENT_DATABASE, ...PATIENT_SHUTDOWN });
  });
  afterEach(() => {
    if (busy && busy.child.exitCode === null) busy.child.kill("SIGKILL");
  });

  it("when 20 requests were sent on open keep-alive connections but not yet read, then each is answered, the last on each with Connection: close, and the process exits 0", async () => {
    const connections = await Promise.all(Array.from({ length: CONNECTIONS }, () => rawConnection(busy.port)));
    // every connection has been accepted and answered once: open and idle
    for (const c of connections) c.socket.write(rawRequest());
    await eventually(() => expect(connections.map((c) => statuses(c.received()).length)).toEqual(Array(CONNECTIONS).fill(1)), { intervalMs: 20, timeoutMs: 60_000 });

    // a stopped process is the busiest event loop: the requests wait in the kernel, unread
    await stopProcess(busy);
    const pipelined = rawRequest().repeat(PIPELINED);
    for (const c of connections) c.socket.write(pipelined);
    await allUnread(busy, connections, pipelined);
    busy.child.kill("SIGTERM");
    busy.child.kill("SIGCONT");

    await Promise.all(connections.map((c) => c.closed));
    expectAnsweredAndClosed(connections, PIPELINED, 1);
    expect(await busy.exited).toBe(0);
    expect(busy.logs.at(-1)).toMatchObject({ msg: "stopped" });
  }, 120_000); // 20 requests on the embedded database of a loaded machine

  it("when 20 pipelined requests were sent on connections the process has not accepted yet, then each is answered, the last on each with Connection: close, and the process exits 0", async () => {
    // stopped, the process accepts nothing: the connections complete in the kernel's backlog and their requests wait there
    await stopProcess(busy);
    const pipelined = rawRequest().repeat(PIPELINED);
    const connections = await Promise.all(Array.from({ length: CONNECTIONS }, () => rawConnection(busy.port, (socket) => socket.write(pipelined))));
    await allUnread(busy, connections, pipelined);
    busy.child.kill("SIGTERM");
    busy.child.kill("SIGCONT");

    await Promise.all(connections.map((c) => c.closed));
    expectAnsweredAndClosed(connections, PIPELINED);
    expect(await busy.exited).toBe(0);
  }, 120_000); // 20 requests on the embedded database of a loaded machine
});

describe("SIGTERM right after pipelined requests, round after round", () => {
  const ROUNDS = Number(process.env.SHUTDOWN_ROUNDS ?? 3); // `SHUTDOWN_ROUNDS=20` for the 20 rounds
  const CONNECTIONS = 4;
  const PIPELINED = 5;

  it(`when 4 new connections each send 5 pipelined requests and SIGTERM follows 30 ms later, then all 20 are answered in each of ${ROUNDS} rounds`, async () => {
    const answeredPerRound: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const server = await startServerProcess({ ...database.envFor(0), ...PATIENT_DATABASE, ...PATIENT_SHUTDOWN });
      try {
        const write = (socket: net.Socket) => socket.write(rawRequest().repeat(PIPELINED));
        const connections = await Promise.all(Array.from({ length: CONNECTIONS }, () => rawConnection(server.port, write)));
        await new Promise((r) => setTimeout(r, 30)); // the interval between sending and the signal (paces, decides nothing)
        server.child.kill("SIGTERM");
        await Promise.all(connections.map((c) => c.closed));
        const answered = connections.reduce((n, c) => n + statuses(c.received()).filter((s) => s === 200).length, 0);
        // what each connection saw, for the failure message: answers and how it ended
        if (answered < CONNECTIONS * PIPELINED) console.error(`round ${round}:`, connections.map((c) => `${statuses(c.received()).join(",")} ${/\[\w+\]$/.exec(c.received()) ?? ""}`));
        answeredPerRound.push(answered);
        expect(await server.exited).toBe(0);
      } finally {
        if (server.child.exitCode === null) server.child.kill("SIGKILL");
      }
    }
    expect(answeredPerRound).toEqual(Array(ROUNDS).fill(CONNECTIONS * PIPELINED));
  }, processTestBound(ROUNDS)); // a process start per round
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
  }, processTestBound(1)); // a process start and the demo's seeding
});
