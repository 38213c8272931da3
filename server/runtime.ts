// The moving parts of a process once its database and services exist: the ingest log with this
// process's writer, the job workers and the schedulers (digests, retention). Started and stopped
// here, in one order, for the service (main.ts) and the writer on its own (scripts/ingest.ts).
import type { Config } from "./config.ts";
import type { Database } from "./db/database.ts";
import { startRetentionScheduler } from "./tracking/privacy/retention.ts";
import type { Logger } from "./logging.ts";
import { startDigestScheduler } from "./notify/segment-alerts.ts";
import type { Services } from "./services/index.ts";
import { type IngestLog, openIngestLog } from "./tracking/log/ingest-log.ts";
import { IngestWriter, type WriterOptions } from "./tracking/log/writer.ts";

export interface ProcessParts {
  /** Where the collector appends (the queue table, or the JetStream stream of INGEST_LOG_URL). */
  ingestLog: IngestLog;
  /** This process's ingest writer; undefined when the settings turn it off (INGEST_WRITER=off). */
  writer: IngestWriter | undefined;
  /** Starts the job workers and the schedulers (once the process serves). */
  startJobs(): void;
  /** Stops what was started: schedulers, job workers (in-flight jobs finish), the writer's batch in hand, the log. */
  stop(): Promise<void>;
}

/**
 * An ingest writer wired to the services (enrichment, and the hooks: segment entries, webhook
 * events, evidence, pending attribution), not yet polling (`wake()` starts it, `drain()` writes
 * what waits); `options` set its log and settings, and may replace a hook (tests). The one place a
 * writer is wired: the process parts below, and the tests.
 */
export function wiredIngestWriter(db: Database, services: Services, logger: Logger, options: WriterOptions = {}): IngestWriter {
  return new IngestWriter(db.prisma, services.ingestWiring.deps, logger, { ...services.ingestWiring.hooks, ...options });
}

/**
 * Opens the ingest log (a JetStream server that cannot be reached rejects) and starts this
 * process's writer with the services' hooks (segment entries, webhook events, evidence).
 */
export async function startProcessParts(
  db: Database,
  services: Services,
  config: Pick<Config, "ingestLog"> & { tracking: Pick<Config["tracking"], "writer"> },
  logger: Logger,
): Promise<ProcessParts> {
  const ingestLog = await openIngestLog(db.prisma, config.ingestLog, logger, db.sql);
  if (config.ingestLog) logger.info("ingest log", { kind: ingestLog.kind, stream: config.ingestLog.stream, replicas: config.ingestLog.replicas });
  const { writer: settings } = config.tracking;
  const writer = settings.enabled ? wiredIngestWriter(db, services, logger, { ...settings, log: ingestLog }) : undefined;
  writer?.wake();
  let schedulers: { stop(): void }[] = [];
  let jobsStarted = false;
  return {
    ingestLog,
    writer,
    startJobs() {
      // picks up what a previous process left (a job whose lease ran out), in every process
      services.jobs.start();
      jobsStarted = true;
      schedulers = [startDigestScheduler(services.segmentAlerts, logger), startRetentionScheduler(services.retention, logger)];
    },
    async stop() {
      for (const scheduler of schedulers) scheduler.stop();
      if (jobsStarted) await services.jobs.stop();
      await writer?.stop();
      await ingestLog.close();
    },
  };
}
