// Prometheus metrics of this process, served at GET /metrics. Other code counts through the
// exported `metrics` (for example `metrics.creditsCharged.inc(n)` where credits are charged).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/** Its own registry rather than prom-client's global one, so nothing else registers into it by accident. */
export const metricsRegistry = new Registry();
collectDefaultMetrics({ register: metricsRegistry });

export const metrics = {
  requestDuration: new Histogram({
    name: "http_request_duration_seconds",
    help: "Duration of partner API requests, by operation (operationId, `none` for unknown paths) and status",
    labelNames: ["operation_id", "status"] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [metricsRegistry],
  }),
  requestsInFlight: new Gauge({
    name: "http_requests_in_flight",
    help: "Partner API requests received and not yet answered",
    registers: [metricsRegistry],
  }),
  creditsCharged: new Counter({
    name: "credits_charged_total",
    help: "Credits charged to datasets (found profiles of the e-mail lookup)",
    registers: [metricsRegistry],
  }),
  rateLimitRejections: new Counter({
    name: "rate_limit_rejections_total",
    help: "Requests answered 429 because their API key exceeded the rate limit",
    registers: [metricsRegistry],
  }),
};
