// Issue 38 item 8: bench:collect's ECONNRESET on a shared machine. The load generators' keep-alive
// agent kept idle connections for ever (Node 20's agent applies the server's `Keep-Alive: timeout`
// hint only to an agent timeout that is set); the service closed them after its keep-alive
// timeout, and a client whose event loop was busy at that moment wrote its next request into the
// closed connection. A server in a child process (so that the client's busy loop does not delay
// it) with a 2 s keep-alive timeout (Node closes at 3 s) shows it.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadAgent, send } from "../bench/closed-loop.ts";

const SERVER = `
  const http = require("node:http");
  const server = http.createServer((req, res) => { req.resume(); req.on("end", () => { res.statusCode = 202; res.end("{}"); }); });
  server.keepAliveTimeout = 2000;
  server.listen(0, "127.0.0.1", () => process.send(server.address().port));
`;

let server: ChildProcess;
let port: number;
beforeAll(async () => {
  server = spawn(process.execPath, ["-e", SERVER], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  [port] = (await once(server, "message")) as [number];
});
afterAll(() => {
  server?.kill();
});

const request = { path: "/collect", headers: { "content-type": "text/plain" }, body: "{}", expect: { status: 202 } };

describe("bench:collect's load generators (loadAgent)", () => {
  it("when a connection stays idle past the service's keep-alive timeout while the client is busy, then the next request gets its answer, not ECONNRESET", async () => {
    const agent = loadAgent(1);
    try {
      expect((await send(agent, port, request)).status).toBe(202);
      await sleep(2_900);
      const busyUntil = Date.now() + 600; // the client's event loop busy across the server's close (~3 s)
      while (Date.now() < busyUntil);
      expect((await send(agent, port, request)).status).toBe(202);
    } finally {
      agent.destroy();
    }
  });
});
