// Counters of the collector, in the process's registry (GET /metrics).
import { Counter } from "prom-client";
import { metricsRegistry } from "../metrics.ts";

export const trackingMetrics = {
  events: new Counter({
    name: "tracking_events_total",
    help: "Tracking events received by the collector, by outcome: queued, or why they were dropped (bot, do_not_track, isp, hosting, mobile, unknown, form_tracking_off, rate_limited)",
    labelNames: ["outcome"] as const,
    registers: [metricsRegistry],
  }),
};
