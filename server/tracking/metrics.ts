// Counters of the collector, in the process's registry (GET /metrics).
import { Counter, Gauge, Histogram } from "prom-client";
import { metricsRegistry } from "../metrics.ts";

let oldestUnwritten: (() => Promise<Date | undefined>) | undefined;

/** The ingest log this process's writer reads, for the lag gauge (undefined: no writer runs here). */
export function reportWriterLag(source: (() => Promise<Date | undefined>) | undefined): void {
  oldestUnwritten = source;
}

export const trackingMetrics = {
  events: new Counter({
    name: "tracking_events_total",
    help: "Tracking events received by the collector, by outcome: queued, or why they were dropped (bot, do_not_track, isp, hosting, mobile, unknown, form_tracking_off, rate_limited)",
    labelNames: ["outcome"] as const,
    registers: [metricsRegistry],
  }),
  writerBatchEvents: new Histogram({
    name: "ingest_writer_batch_events",
    help: "Events one ingest writer transaction wrote (a redelivered batch written before counts 0)",
    buckets: [1, 10, 50, 100, 250, 500, 1000, 2500, 5000],
    registers: [metricsRegistry],
  }),
  writerBatchDuration: new Histogram({
    name: "ingest_writer_batch_duration_seconds",
    help: "Duration of one ingest writer batch: taking it from the log, its transaction, and its acknowledgement",
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [metricsRegistry],
  }),
  writerLag: new Gauge({
    name: "ingest_writer_lag_seconds",
    help: "Age of the oldest event the ingest log holds and no writer has written yet (0: none waits), as of the scrape",
    registers: [metricsRegistry],
    // asked when /metrics is scraped, not after every batch or idle poll of the writer
    async collect() {
      const oldest = await oldestUnwritten?.().catch(() => undefined);
      this.set(oldest ? Math.max(0, (Date.now() - oldest.getTime()) / 1000) : 0);
    },
  }),
};
