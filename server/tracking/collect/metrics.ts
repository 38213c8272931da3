// Counters of the collector, in the process's registry (GET /metrics).
import { Counter, Gauge, Histogram } from "prom-client";
import { metricsRegistry } from "../../metrics.ts";

/** What the gauges of a process that runs a writer read when /metrics is scraped. */
export interface WriterGauges {
  /** When the oldest event not yet written was accepted (the ingest log's). */
  oldestUnwritten(): Promise<Date | undefined>;
  /** Batches waiting in the dead-letter table. */
  deadLetters(): Promise<number>;
}

let writerGauges: WriterGauges | undefined;

/** The ingest log and dead letters of this process's writer, for the gauges (undefined: no writer runs here). */
export function reportWriterGauges(source: WriterGauges | undefined): void {
  writerGauges = source;
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
    help: "Age of the oldest event the ingest log holds and no writer has written yet (0: none waits; a batch set aside is not waiting), as of the scrape",
    registers: [metricsRegistry],
    // asked when /metrics is scraped, not after every batch or idle poll of the writer
    async collect() {
      const oldest = await writerGauges?.oldestUnwritten().catch(() => undefined);
      this.set(oldest ? Math.max(0, (Date.now() - oldest.getTime()) / 1000) : 0);
    },
  }),
  failedBatches: new Counter({
    name: "ingest_writer_failed_batches_total",
    help: "Ingest writer transactions that failed, by fault: permanent (the database refused the data; its batches are written apart and the culprit set aside after INGEST_MAX_ATTEMPTS) or transient (retried until it passes)",
    labelNames: ["fault"] as const,
    registers: [metricsRegistry],
  }),
  deadLetteredEvents: new Counter({
    name: "ingest_dead_lettered_events_total",
    help: "Events set aside into the dead-letter table with their batch (npm run admin -- dead-letters list)",
    registers: [metricsRegistry],
  }),
  deadLetters: new Gauge({
    name: "ingest_dead_letters",
    help: "Batches waiting in the dead-letter table for an operator to replay or drop them, as of the scrape",
    registers: [metricsRegistry],
    async collect() {
      this.set(await (writerGauges?.deadLetters().catch(() => 0) ?? 0));
    },
  }),
  redeliveries: new Counter({
    name: "ingest_log_redeliveries_total",
    help: "JetStream messages a writer received again (a failed or unacknowledged earlier delivery)",
    registers: [metricsRegistry],
  }),
};
