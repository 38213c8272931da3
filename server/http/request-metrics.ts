// Duration of every partner API request by operation and status, and how many are in flight
// (the shutdown test watches that gauge to know its load has arrived).
import type { RequestHandler } from "express";
import { metrics } from "../metrics.ts";

export function requestMetrics(): RequestHandler {
  return (_req, res, next) => {
    const stopTimer = metrics.requestDuration.startTimer();
    metrics.requestsInFlight.inc();
    // "close" also fires for a request whose client went away before the answer
    res.once("close", () => {
      metrics.requestsInFlight.dec();
      stopTimer({ operation_id: (res.locals.operationId as string | undefined) ?? "none", status: String(res.statusCode) });
    });
    next();
  };
}
