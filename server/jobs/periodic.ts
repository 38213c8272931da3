// A task every instance runs now and then at a fixed interval (queueing the day's jobs: their
// dedupe keys make the work happen once however many instances run it); the timers never keep the
// process alive. A failure (often the first run of a start on a busy machine, whose database does
// not answer in time) is logged saying when it is retried: after a minute, then twice as long each
// time it fails again, never later than the regular interval; a run that succeeds goes back to it.
import { logAtLevelOf } from "../db/waits.ts";
import type { Logger } from "../logging.ts";

/** The first retry after a failure: soon enough that a start's failed run is made good within minutes. */
export const FIRST_RETRY_MS = 60_000;

export function runPeriodically(name: string, task: () => Promise<unknown>, everyMs: number, logger: Logger): { stop(): void } {
  let retryMs = 0;
  let retry: NodeJS.Timeout | undefined;
  let stopped = false;
  const run = async () => {
    clearTimeout(retry);
    try {
      await task();
      retryMs = 0;
    } catch (error) {
      retryMs = Math.min(everyMs, retryMs ? retryMs * 2 : FIRST_RETRY_MS);
      const retryInSeconds = Math.round(retryMs / 1000);
      logAtLevelOf(error, logger, `${name} failed; retrying in ${retryInSeconds} s`, { error: String(error), retryInSeconds });
      if (stopped || retryMs >= everyMs) return; // the regular run is the retry
      retry = setTimeout(() => void run(), retryMs);
      retry.unref();
    }
  };
  void run();
  const timer = setInterval(() => void run(), everyMs);
  timer.unref();
  return {
    stop: () => {
      stopped = true;
      clearInterval(timer);
      clearTimeout(retry);
    },
  };
}
