// The one way tests wait for an outcome: retry an assertion until it holds or a bounded time
// runs out, then fail with the assertion's own error (never a fixed sleep deciding the outcome).
import { setTimeout as sleep } from "node:timers/promises";

export interface EventuallyOptions {
  /** How long to keep trying (default 20 s). */
  timeoutMs?: number;
  /** The pause between attempts (default 100 ms). */
  intervalMs?: number;
}

/** Runs `check` until it returns without throwing; returns its value, or throws its last error after the timeout. */
export async function eventually<T>(check: () => T | Promise<T>, { timeoutMs = 20_000, intervalMs = 100 }: EventuallyOptions = {}): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() >= deadline) throw error;
    }
    await sleep(intervalMs);
  }
}
