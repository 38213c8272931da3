// The certificate worker of a server process: claims runnable jobs one at a time, keeps its
// lease alive while it works, and at start picks up whatever a previous process left unfinished
// (a job whose lease ran out is runnable again).
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import type { Logger } from "../logging.ts";
import type { CertificateJobService, ClaimedJob } from "../services/certificate-jobs.ts";

export interface WorkerOptions {
  leaseMs: number;
  pollMs: number;
}

export interface CertificateWorker {
  /**
   * Stops claiming; a running job's lease is given back for another process to take at once.
   * Resolves when the loop has ended, or after `graceMs` (an ACME step in flight cannot be cut short).
   */
  stop(graceMs?: number): Promise<void>;
}

export function startCertificateWorker(jobs: CertificateJobService, { leaseMs, pollMs }: WorkerOptions, logger: Logger): CertificateWorker {
  const workerId = `${hostname()}:${process.pid}:${randomBytes(3).toString("hex")}`;
  let stopped = false;
  let current: ClaimedJob | undefined;
  let wake = () => {};
  const unsubscribe = jobs.onQueued(() => wake());
  const idle = () =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, pollMs);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  async function runWithLease(job: ClaimedJob): Promise<void> {
    current = job;
    const heartbeat = setInterval(() => {
      jobs.renew(job).then(
        (held) => held || logger.warn("certificate job lease lost", { jobId: String(job.id) }),
        (error: unknown) => logger.error("certificate job lease renewal failed", { jobId: String(job.id), error: String(error) }),
      );
    }, leaseMs / 3);
    try {
      await jobs.run(job);
    } finally {
      clearInterval(heartbeat);
      current = undefined;
    }
  }

  const loop = (async () => {
    logger.info("certificate worker started", { workerId });
    while (!stopped) {
      const job = await jobs.claimNext(workerId).catch((error: unknown) => {
        logger.error("certificate worker could not claim a job", { error: String(error) });
        return undefined;
      });
      if (job) await runWithLease(job);
      else await idle();
    }
  })();

  return {
    async stop(graceMs = 10_000) {
      stopped = true;
      unsubscribe();
      wake();
      if (current) await jobs.release(current).catch(() => {});
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([loop, new Promise((resolve) => (timer = setTimeout(resolve, graceMs)))]);
      clearTimeout(timer);
    },
  };
}
