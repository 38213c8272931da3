// Duration of every partner API request by operation and status, and how many are in flight
// (the shutdown test watches that gauge to know its load has arrived). Driven by the request
// context (request-context.ts), which already listens for each response's end.
import { metrics } from "../metrics.ts";

export interface RequestMeter {
  started(): void;
  /** The request's answer is sent, or its client went away first. */
  finished(operationId: string | undefined, status: number, seconds: number): void;
}

export function requestMetrics(): RequestMeter {
  /** The label set of each operation and status, made once (prom-client copies what it is given per observation otherwise). */
  const labelSets = new Map<string, { operation_id: string; status: string }>();
  const labelsOf = (operationId = "none", status: number) => {
    const key = `${operationId} ${status}`;
    let labels = labelSets.get(key);
    if (!labels) labelSets.set(key, (labels = { operation_id: operationId, status: String(status) }));
    return labels;
  };
  return {
    started: () => metrics.requestsInFlight.inc(),
    finished: (operationId, status, seconds) => {
      metrics.requestsInFlight.dec();
      metrics.requestDuration.observe(labelsOf(operationId, status), seconds);
    },
  };
}
