// The one way tests wait for an outcome: retry a check (an assertion, or a function that throws
// until what it looks for is there) until it holds or a bounded time runs out, then fail with the
// check's own error. Never a fixed sleep deciding the outcome, never a hand-written polling loop.
import { setTimeout as sleep } from "node:timers/promises";

export interface EventuallyOptions {
  /** How long to keep trying (default 60 s: a condition that holds at once on a quiet machine can take tens of seconds on CI's loaded one; a passing test never waits it out). */
  timeoutMs?: number;
  /** The pause between attempts (default 100 ms). */
  intervalMs?: number;
  /** What is awaited: on timeout the error reads "<message>: not within <timeoutMs> ms", the check's last error as its cause. */
  message?: string;
}

/**
 * Thrown by a check when the awaited outcome can no longer come (the process it waits for exited,
 * something was answered that must be refused): `eventually` stops at once with this error.
 */
export class StopWaiting extends Error {}

/** Runs `check` until it returns without throwing; returns its value, or throws its last error after the timeout. */
export async function eventually<T>(
  check: () => T | Promise<T>,
  { timeoutMs = 60_000, intervalMs = 100, message }: EventuallyOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (error instanceof StopWaiting) throw error;
      if (Date.now() >= deadline) throw message === undefined ? error : new Error(`${message}: not within ${timeoutMs} ms`, { cause: error });
    }
    await sleep(intervalMs);
  }
}
