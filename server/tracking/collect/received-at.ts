// A trusted proxy's receive time of a collector request (TRACKING_RECEIVED_AT_HEADER): replayed
// traffic (bench:match's days) keeps its own time, which rules over days and hours of day need.
// The value is `t=<seconds since the epoch>` (a fraction allowed), as nginx and load balancers write
// X-Request-Start, or an ISO 8601 time with its zone (without one it would be the server's local time).

const DAY_MS = 86_400_000;
const EPOCH_SECONDS = /^t=(\d+(?:\.\d+)?)$/;
const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})$/i;

/** The header's time; undefined when it is in neither format. */
export function parseReceivedAt(value: string): Date | undefined {
  const text = value.trim();
  const seconds = EPOCH_SECONDS.exec(text);
  // rounded: 1087187705.192 * 1000 is 1087187705191.9999, which a Date would cut to ...191
  const ms = seconds ? Math.round(Number(seconds[1]) * 1000) : ISO_8601.test(text) ? Date.parse(text) : NaN;
  const at = new Date(ms);
  return Number.isNaN(at.getTime()) ? undefined : at;
}

/**
 * The header's time when it is not after `now` and at most `maxAgeDays` old, else undefined (the
 * caller takes its own now). Older events would wait for nothing: pending ones are deleted at
 * TRACKING_PENDING_DAYS, which the collector passes here.
 */
export function receivedAtWithin(value: string | undefined, now: Date, maxAgeDays: number): Date | undefined {
  const at = value === undefined ? undefined : parseReceivedAt(value);
  if (!at || at.getTime() > now.getTime() || at.getTime() < now.getTime() - maxAgeDays * DAY_MS) return undefined;
  return at;
}
