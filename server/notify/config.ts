// Configuration of webhook delivery, from the `WEBHOOK_*` variables (README.md, Webhooks).
// server/config.ts calls it once with the environment.
import { flag, positive } from "../env-values.ts";

/** The Standard Webhooks example schedule: after a failed attempt n, wait SCHEDULE[n-1] seconds. */
export const STANDARD_RETRY_SCHEDULE_SECONDS = [5, 300, 1800, 7200, 18_000, 36_000, 36_000] as const;

export interface WebhookConfig {
  /** Delays after failed attempts 1, 2, ... (ms); its length + 1 is the number of attempts. */
  retryScheduleMs: number[];
  /** One attempt's limit: connection, request and answer (ms). */
  timeoutMs: number;
  /** An endpoint failing without a success for this long is disabled (ms). */
  disableAfterMs: number;
  /** The furthest a Retry-After may push the next attempt (ms). */
  maxRetryAfterMs: number;
  /** Refuse `http://` endpoint URLs (on in production). */
  requireHttps: boolean;
  /** Test-only: let endpoints be and resolve to loopback and private addresses. Refused in production. */
  allowPrivateAddresses: boolean;
  /** Add the queue's jitter to the schedule (off only in tests that count the waits). */
  jitter: boolean;
}

export function loadWebhookConfig(env: Record<string, string | undefined>): WebhookConfig {
  const production = env.NODE_ENV === "production";
  const allowPrivateAddresses = flag(env.WEBHOOK_ALLOW_PRIVATE_ADDRESSES);
  if (allowPrivateAddresses && production) throw new Error("WEBHOOK_ALLOW_PRIVATE_ADDRESSES is for tests only and refused in production");
  const rawSchedule = env.WEBHOOK_RETRY_SCHEDULE_SECONDS;
  const schedule = rawSchedule ? rawSchedule.split(",").map((s) => Number(s.trim())) : [...STANDARD_RETRY_SCHEDULE_SECONDS];
  if (!schedule.every((s) => Number.isFinite(s) && s >= 0)) {
    throw new Error(`WEBHOOK_RETRY_SCHEDULE_SECONDS must be comma-separated non-negative seconds, got "${rawSchedule}"`);
  }
  return {
    retryScheduleMs: schedule.map((s) => Math.round(s * 1000)),
    timeoutMs: positive(env, "WEBHOOK_TIMEOUT_MS", 15_000),
    disableAfterMs: positive(env, "WEBHOOK_DISABLE_AFTER_HOURS", 120) * 3_600_000,
    maxRetryAfterMs: 24 * 3_600_000,
    requireHttps: production,
    allowPrivateAddresses,
    jitter: !rawSchedule,
  };
}
