// WEB_CONCURRENCY workers behind one port (node:cluster): the primary forks them, holds the rate
// limit's counts for all of them (unless Redis holds them), replaces a worker that crashes, and
// on SIGTERM/SIGINT passes the signal on and waits until every worker has drained and exited.
// The primary serves no requests; on the embedded database it owns the database's process and
// the workers connect to its socket.
import cluster, { type Worker } from "node:cluster";
import { RateLimiterClusterMaster } from "rate-limiter-flexible";
import type { Logger } from "./logging.ts";

export type ClusterRole = "single" | "primary" | "worker";

export function clusterRole(workers: number): ClusterRole {
  if (cluster.isWorker) return "worker";
  return workers > 1 ? "primary" : "single";
}

export interface Workers {
  /** The port the workers listen on (the one chosen when PORT is 0). */
  port: number;
  /** Resolves when every worker has exited after a stop signal. */
  stopped: Promise<void>;
}

/**
 * Forks `count` workers and resolves when all of them listen. A worker that exits before it
 * listened ends the whole start (a configuration or start-up error would only repeat); one that
 * crashes later is replaced.
 */
export async function startWorkers(options: { count: number; sharedRateLimit: boolean; logger: Logger }): Promise<Workers> {
  const { count, logger } = options;
  // the workers' RateLimiterCluster asks the primary: it must exist before they start
  if (!options.sharedRateLimit) new RateLimiterClusterMaster();
  let stopping = false;
  const listening = new Set<Worker>();
  let stoppedResolve!: () => void;
  const stopped = new Promise<void>((resolve) => (stoppedResolve = resolve));

  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info("stopping workers", { signal, workers: Object.keys(cluster.workers ?? {}).length });
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill("SIGTERM");
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));

  const port = await new Promise<number>((resolve, reject) => {
    cluster.on("listening", (worker, address) => {
      listening.add(worker);
      if (listening.size === count) resolve(address.port);
    });
    cluster.on("exit", (worker, code, signal) => {
      const wasListening = listening.delete(worker);
      if (stopping) {
        if (!Object.keys(cluster.workers ?? {}).length) stoppedResolve();
        return;
      }
      if (!wasListening) {
        stop("SIGTERM");
        reject(new Error(`a worker exited with ${code ?? signal} before it listened`));
        return;
      }
      logger.error("worker exited: starting another", { code, signal });
      cluster.fork();
    });
    for (let i = 0; i < count; i++) cluster.fork();
  });
  return { port, stopped };
}
