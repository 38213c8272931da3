// The JetStream ingest log's tests run on a real NATS server: the one at TEST_NATS_URL (default
// the machine's, nats://127.0.0.1:4222; .ci/run starts it), each test run on its own stream,
// subject and consumer so that parallel runs do not collide; and, for the "log down" test, a
// private nats-server of the same binary on a free port that the test stops and starts.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { connect as tcpConnect, createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { loadConfig } from "../../server/config.ts";
import type { IngestLogConfig } from "../../server/config.ts";
import { eventually, StopWaiting } from "./eventually.ts";
import { freePort } from "./pebble.ts";

export const NATS_URL = process.env.TEST_NATS_URL ?? "nats://127.0.0.1:4222";

/** Whether something accepts connections at `url` (within a second). */
export async function reachable(url = NATS_URL): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = tcpConnect({ host: hostname, port: Number(port || 4222), timeout: 1000 });
    socket.once("connect", () => resolve(socket.destroy() && true));
    socket.once("error", () => resolve(false));
    socket.once("timeout", () => resolve(socket.destroy() && false));
  });
}

/** The INGEST_LOG_* variables of a stream of its own (name, subject), acknowledgement wait `ackWaitSeconds`. */
export function uniqueLogEnv(url = NATS_URL, ackWaitSeconds = 2): Record<string, string> {
  const id = `t${process.pid}_${randomBytes(4).toString("hex")}`;
  return {
    INGEST_LOG_URL: url,
    INGEST_LOG_STREAM: `TEST_INGEST_${id}`,
    INGEST_LOG_SUBJECT: `test.ingest.${id}`,
    INGEST_LOG_CONSUMER: "writers",
    INGEST_LOG_ACK_WAIT_SECONDS: String(ackWaitSeconds),
    INGEST_LOG_MAX_AGE_HOURS: "1",
    INGEST_LOG_MAX_BYTES: String(64 * 1024 * 1024),
  };
}

/** The log configuration those variables give, as server/config.ts reads it. */
export const logConfigOf = (env: Record<string, string>): IngestLogConfig => loadConfig(env).ingestLog!;

/** Deletes the test's stream (and its consumer with it); nothing when it does not exist. */
export async function deleteStream(env: Record<string, string>): Promise<void> {
  const nc = await connect({ servers: env.INGEST_LOG_URL!.split(","), timeout: 2000 }).catch(() => undefined);
  if (!nc) return;
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete(env.INGEST_LOG_STREAM!).catch(() => false);
  } finally {
    await nc.close();
  }
}

/** Messages the test's stream still holds: with work-queue retention an acknowledged one is removed, and a writer acknowledges after its commit. */
export async function messagesLeft(env: Record<string, string>): Promise<number> {
  const nc = await connect({ servers: env.INGEST_LOG_URL!.split(","), timeout: 2000 });
  try {
    const jsm = await jetstreamManager(nc);
    return (await jsm.streams.info(env.INGEST_LOG_STREAM!)).state.messages;
  } finally {
    await nc.close();
  }
}

/** The nats-server binary of this machine, or undefined. */
export function natsServerBinary(): string | undefined {
  for (const candidate of ["/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"]) {
    try {
      execFileSync(candidate, ["--version"], { stdio: "ignore" });
      return candidate;
    } catch {
      // not there
    }
  }
  return undefined;
}

/**
 * How long a nats-server this test starts may take to listen: a few hundred ms when quiet, much
 * more on a loaded CI machine (three servers starting beside a suite on two cores).
 */
const LISTEN_BOUND_MS = 90_000;

/** Tries to start a whole set of servers: a server that exits before it listens (its free port was taken meanwhile) makes a fresh try on fresh ports. */
const START_TRIES = 3;

/**
 * Spawns nats-server with `args` and waits until `url` accepts connections. A server that exits
 * first ends the wait at once with its own last words (stderr), not a timeout.
 */
function spawnNats(binary: string, args: string[], url: string): { child: ChildProcess; listening: Promise<void> } {
  const child = spawn(binary, args, { stdio: ["ignore", "ignore", "pipe"] });
  const said: string[] = [];
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
    said.push(...chunk.split("\n").filter(Boolean));
    said.splice(0, said.length - 5); // its last words only: a cluster node logs for as long as it runs
  });
  const listening = eventually(async () => {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new StopWaiting(`nats-server for ${url} exited (${child.exitCode ?? child.signalCode}) before it listened: ${said.join(" | ")}`);
    }
    if (!(await reachable(url))) throw new Error(`nats-server did not listen on ${url}`);
  }, { timeoutMs: LISTEN_BOUND_MS, intervalMs: 200 });
  return { child, listening };
}

async function stopNats(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill("SIGKILL");
  await exited;
}

/** A nats-server with JetStream of this test alone, on loopback; its store survives stop/start. */
export interface PrivateNats {
  url: string;
  start(): Promise<void>;
  /** SIGKILL: the log goes away at once, as a crashed server does. */
  kill(): Promise<void>;
  close(): Promise<void>;
}

export async function privateNats(binary: string): Promise<PrivateNats> {
  const store = mkdtempSync(path.join(os.tmpdir(), "nats-store-"));
  let child: ChildProcess | undefined;
  let startedOnce = false;
  const nats: PrivateNats = {
    url: `nats://127.0.0.1:${await freePort()}`,
    async start() {
      for (let attempt = 1; ; attempt++) {
        const started = spawnNats(binary, ["-a", "127.0.0.1", "-p", new URL(nats.url).port, "-js", "-sd", store], nats.url);
        child = started.child;
        try {
          await started.listening;
          startedOnce = true;
          return;
        } catch (error) {
          await stopNats(child);
          // A restart keeps its port (the test's clients reconnect to it); a first start may move
          if (startedOnce || !(error instanceof StopWaiting) || attempt >= START_TRIES) throw error;
          nats.url = `nats://127.0.0.1:${await freePort()}`;
        }
      }
    },
    kill: () => stopNats(child),
    async close() {
      await stopNats(child);
      rmSync(store, { recursive: true, force: true });
    },
  };
  return nats;
}

/** A JetStream cluster of `size` nats-servers of this test alone, on loopback (routes between all of them). */
export interface NatsCluster {
  /** Client URLs, one per node. */
  urls: string[];
  /** Node names (`n0` ...), as stream info's `cluster.leader` names them. */
  names: string[];
  /** SIGKILL one node: a crash (its followers elect a new leader). */
  kill(name: string): Promise<void>;
  /** Every node killed and its store removed. */
  close(): Promise<void>;
}

export async function natsCluster(binary: string, size = 3): Promise<NatsCluster> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startCluster(binary, size);
    } catch (error) {
      if (!(error instanceof StopWaiting) || attempt >= START_TRIES) throw error;
    }
  }
}

async function startCluster(binary: string, size: number): Promise<NatsCluster> {
  const nodes: { name: string; port: number; clusterPort: number; store: string }[] = [];
  for (let i = 0; i < size; i++) {
    nodes.push({ name: `n${i}`, port: await freePort(), clusterPort: await freePort(), store: mkdtempSync(path.join(os.tmpdir(), `nats-cluster-${i}-`)) });
  }
  const routes = nodes.map((n) => `nats://127.0.0.1:${n.clusterPort}`).join(",");
  const children = new Map<string, ChildProcess>();
  const cluster: NatsCluster = {
    urls: nodes.map((n) => `nats://127.0.0.1:${n.port}`),
    names: nodes.map((n) => n.name),
    kill: (name) => stopNats(children.get(name)),
    async close() {
      for (const child of children.values()) await stopNats(child);
      for (const node of nodes) rmSync(node.store, { recursive: true, force: true });
    },
  };
  try {
    const started = nodes.map((n, i) => {
      const args = ["-a", "127.0.0.1", "-p", String(n.port), "-js", "-sd", n.store, "--server_name", n.name, "--cluster_name", "c",
        "--cluster", `nats://127.0.0.1:${n.clusterPort}`, "--routes", routes];
      const { child, listening } = spawnNats(binary, args, cluster.urls[i]!);
      children.set(n.name, child);
      return listening;
    });
    await Promise.all(started);
  } catch (error) {
    await cluster.close();
    throw error;
  }
  return cluster;
}
