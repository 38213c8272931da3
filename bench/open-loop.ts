// An open-loop load generator: request i is due at start + i / rate, whatever happened to the
// requests before it (no waiting for answers, so a slow server cannot slow the load down), and its
// latency runs from that scheduled time, not from when it was actually sent: a generator or a
// server that falls behind shows up in the latency (no coordinated omission). It reports the rate
// it achieved (answers per second over the phase, its tail included) for the caller to check.
import { setTimeout as sleep } from "node:timers/promises";
import { loadAgent, type Request, send } from "./closed-loop.ts";

export interface OpenLoopResult {
  /** Requests scheduled (rate x seconds). */
  scheduled: number;
  /** Answers by status. */
  statuses: Map<number, number>;
  /** Answers whose status or body was not the expected one, and transport errors (first few kept). */
  unexpected: number;
  errors: number;
  examples: string[];
  /** Seconds from the first scheduled send to the last answer. */
  seconds: number;
  /** Expected answers per second over `seconds`. */
  achievedRate: number;
  /** Latency of every answer from its scheduled send, in ms, sorted. */
  latencies: Float64Array;
  /** The latest a request left after its scheduled time, in ms (the generator's own lag). */
  maxSendLagMs: number;
}

/** Sends `rate` requests per second for `seconds`, over up to `maxSockets` keep-alive connections, and waits for every answer. */
export async function runOpenLoop(options: { port: number; rate: number; seconds: number; maxSockets?: number; next: () => Request }): Promise<OpenLoopResult> {
  const agent = loadAgent(options.maxSockets ?? 256);
  const statuses = new Map<number, number>();
  const latencies: number[] = [];
  const examples: string[] = [];
  const inFlight: Promise<void>[] = [];
  let unexpected = 0;
  let errors = 0;
  let good = 0;
  let maxSendLagMs = 0;
  const scheduled = Math.round(options.rate * options.seconds);
  const interval = 1000 / options.rate;
  const started = performance.now();
  const one = async (request: Request, due: number) => {
    try {
      const { status, body } = await send(agent, options.port, request);
      latencies.push(performance.now() - due);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      if (status !== request.expect.status || (request.expect.bodyIncludes && !body.includes(request.expect.bodyIncludes))) {
        unexpected++;
        if (examples.length < 3) examples.push(`expected ${request.expect.status}, got ${status}: ${body.slice(0, 200)}`);
      } else good++;
    } catch (error) {
      errors++;
      if (examples.length < 3) examples.push((error as Error).message);
    }
  };
  for (let i = 0; i < scheduled; ) {
    const now = performance.now();
    // every request that is due leaves now (a late generator sends the backlog at once)
    while (i < scheduled && started + i * interval <= now) {
      const due = started + i * interval;
      maxSendLagMs = Math.max(maxSendLagMs, now - due);
      inFlight.push(one(options.next(), due));
      i++;
    }
    if (i < scheduled) await sleep(Math.max(0, started + i * interval - performance.now()));
  }
  await Promise.all(inFlight);
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  return {
    scheduled,
    statuses,
    unexpected,
    errors,
    examples,
    seconds,
    achievedRate: good / seconds,
    latencies: Float64Array.from(latencies).sort(),
    maxSendLagMs,
  };
}
