// A closed-loop load generator: `connections` keep-alive connections, each sending its next
// request when the previous answer has arrived, until the deadline; then it waits for the
// requests in flight, so that every request sent is also counted (a ledger check can then be
// exact). Latencies are kept whole and sorted for the percentiles.
import http from "node:http";
import { readFileSync, readdirSync } from "node:fs";

export interface Request {
  path: string;
  headers: Record<string, string>;
  body: string;
  /** The status the answer must have, and a text its body must contain. */
  expect: { status: number; bodyIncludes?: string };
}

export interface LoadResult {
  requests: number;
  seconds: number;
  /** Answers by status. */
  statuses: Map<number, number>;
  /** Answers whose status or body was not the expected one (first few kept as examples). */
  unexpected: number;
  examples: string[];
  /** Transport errors and timeouts. */
  errors: number;
  /** Every answer's latency in ms, sorted. */
  latencies: Float64Array;
}

const REQUEST_TIMEOUT_MS = 10_000;

/**
 * How long the load generators keep an idle keep-alive connection: well under the service's
 * keep-alive timeout (KEEP_ALIVE_TIMEOUT_MS, 5 s by default; Node's server closes at that plus
 * 1 s), so that the client closes an idle connection first. Without it Node 20's agent keeps idle
 * connections for ever (the server's `Keep-Alive: timeout=5` hint only shortens an agent timeout
 * that is set); the service closes them, and on a loaded machine, where the close is not yet
 * processed when the next request leaves, that request is written into the closed connection:
 * ECONNRESET on a reused socket (issue 38 item 8; reproduced 6 of 6 without it, 0 of 6 with it).
 * A request in flight keeps REQUEST_TIMEOUT_MS.
 */
const IDLE_CONNECTION_MS = 2_000;

/** A keep-alive agent of the load generators, closing idle connections before the service does. */
export function loadAgent(maxSockets: number): http.Agent {
  return new http.Agent({ keepAlive: true, maxSockets, timeout: IDLE_CONNECTION_MS });
}

export function send(agent: http.Agent, port: number, request: Request): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: "127.0.0.1", port, agent, method: "POST", path: request.path, headers: request.headers, timeout: REQUEST_TIMEOUT_MS },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error("request timed out")));
    req.on("error", reject);
    req.end(request.body);
  });
}

/** The p-quantile (0..1) of sorted values. */
export const percentile = (sorted: Float64Array, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;

export async function runLoad(options: { port: number; connections: number; seconds: number; next: () => Request }): Promise<LoadResult> {
  const agent = loadAgent(options.connections);
  const statuses = new Map<number, number>();
  const latencies: number[] = [];
  const examples: string[] = [];
  let unexpected = 0;
  let errors = 0;
  const started = performance.now();
  const deadline = started + options.seconds * 1000;
  async function connection(): Promise<void> {
    while (performance.now() < deadline) {
      const request = options.next();
      const sent = performance.now();
      try {
        const { status, body } = await send(agent, options.port, request);
        latencies.push(performance.now() - sent);
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        const { expect } = request;
        if (status !== expect.status || (expect.bodyIncludes && !body.includes(expect.bodyIncludes))) {
          unexpected++;
          if (examples.length < 3) examples.push(`expected ${expect.status}, got ${status}: ${body.slice(0, 200)}`);
        }
      } catch (error) {
        errors++;
        if (examples.length < 3) examples.push((error as Error).message);
      }
    }
  }
  await Promise.all(Array.from({ length: options.connections }, connection));
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  return {
    requests: latencies.length + errors,
    seconds,
    statuses,
    unexpected,
    examples,
    errors,
    latencies: Float64Array.from(latencies).sort(),
  };
}

const CLOCK_TICKS_PER_SECOND = 100; // USER_HZ: 100 on Linux

/**
 * CPU seconds (user + system) used so far by a process and all its descendants (the service's
 * embedded-database process, cluster workers), read from /proc. Linux only: null elsewhere.
 * It is what process.cpuUsage() reports inside each of those processes, summed.
 */
export function treeCpuSeconds(rootPid: number): number | null {
  let entries: string[];
  try {
    entries = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    return null;
  }
  const stats = new Map<number, { parent: number; ticks: number }>();
  for (const pid of entries) {
    try {
      // fields after the command name (which may hold spaces) start at the state, field 3
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      stats.set(Number(pid), { parent: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) });
    } catch {
      // exited while we looked
    }
  }
  let ticks = 0;
  for (const [pid, stat] of stats) {
    for (let p = pid, hops = 0; p > 1 && hops < 64; p = stats.get(p)?.parent ?? 0, hops++) {
      if (p === rootPid) {
        ticks += stat.ticks;
        break;
      }
    }
  }
  return stats.has(rootPid) ? ticks / CLOCK_TICKS_PER_SECOND : null;
}
