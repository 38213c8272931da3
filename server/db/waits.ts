// A database that does not answer for a while (the embedded one busy creating itself or migrating
// at the first start, PostgreSQL restarting) is a wait, not an error: what waits for it logs once
// at warn when the wait begins and once at info when it ends. Errors are for what an operator
// must act on: a failure that no retry is known to outlive.
import type { Logger } from "../logging.ts";
import { faultText, isTransientFault } from "./errors.ts";

/** `error` at warn when it is a transient fault of the database, else at error. */
export function logAtLevelOf(error: unknown, logger: Logger, msg: string, fields: Record<string, unknown>): void {
  if (isTransientFault(error)) logger.warn(msg, fields);
  else logger.error(msg, fields);
}

/** The failures of one wait of `what` (from the first failure to the next success); `failedMsg` for a failure not understood. */
export function waits(logger: Logger, what: string, failedMsg: string): { failed(error: unknown): void; succeeded(): void } {
  let since: number | undefined;
  let failures = 0;
  return {
    failed(error) {
      if (!isTransientFault(error)) {
        logger.error(failedMsg, { error: faultText(error) });
        return;
      }
      failures++;
      if (since !== undefined) return;
      since = Date.now();
      logger.warn(`${what} waits: the database does not answer in time; retrying`, { error: faultText(error) });
    },
    succeeded() {
      if (since === undefined) return;
      logger.info(`${what} works again`, { afterSeconds: Math.round((Date.now() - since) / 1000), failedTries: failures });
      since = undefined;
      failures = 0;
    },
  };
}

/**
 * `attempt` again while it fails only because the database does not answer in time (a busy
 * machine's first start), logged as one wait; any other failure, a `giveUp()` or `boundMs`
 * passed ends it with the last error. For work that is safe to start over (the demo's seed).
 */
export async function throughWaits<T>(
  attempt: () => Promise<T>,
  options: { logger: Logger; what: string; boundMs: number; pauseMs?: number; giveUp?: () => boolean },
): Promise<T> {
  const wait = waits(options.logger, options.what, `${options.what} failed`);
  const deadline = Date.now() + options.boundMs;
  for (;;) {
    try {
      const result = await attempt();
      wait.succeeded();
      return result;
    } catch (error) {
      if (!isTransientFault(error) || Date.now() >= deadline || options.giveUp?.()) throw error;
      wait.failed(error);
      await new Promise((resolve) => setTimeout(resolve, options.pauseMs ?? 1000));
    }
  }
}
