// A task every instance runs now and then at a fixed interval (queueing the day's jobs: their
// dedupe keys make the work happen once however many instances run it). A failure is logged and
// the next run tries again; the timer never keeps the process alive.
import { logAtLevelOf } from "../db/waits.ts";
import type { Logger } from "../logging.ts";

export function runPeriodically(name: string, task: () => Promise<unknown>, everyMs: number, logger: Logger): { stop(): void } {
  const run = () => task().catch((error: unknown) => logAtLevelOf(error, logger, `${name} failed`, { error: String(error) }));
  void run();
  const timer = setInterval(run, everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
